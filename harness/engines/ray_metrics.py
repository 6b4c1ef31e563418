"""The memory of the nodes of a Ray cluster icebench did not start (`[engines.ray] address`), from
Ray's own metrics: each node's metrics agent (the dashboard agent of `ray[default]`, at the node's
`MetricsExportPort`) serves `ray_component_rss_bytes`, one series per Ray process of the node
(raylet, its workers, its agents). Their sum per node, sampled while the write runs, is the node's
peak; a sampled peak, of figures the agent refreshes on its own clock, so a spike between two
samples is missed (the record's `source: ray-metrics` says so; a node of a cluster icebench starts
is measured by its cgroup instead). Ray's state API (`ray.util.state`) lists nodes and workers
but no memory, so it is not the source."""

from __future__ import annotations

import re
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from harness.model import ExecutorFigures

SAMPLE_INTERVAL_S = 1.0
_RSS_SERIES = re.compile(r"^ray_component_rss_bytes\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)", re.MULTILINE)
_READ_TIMEOUT_S = 5.0


def node_rss_bytes(metrics_text: str) -> int:
    """The summed rss of a node's Ray processes, as its metrics page states them."""
    return int(sum(float(match["value"]) for match in _RSS_SERIES.finditer(metrics_text)))


@dataclass
class _Node:
    host: str
    peak_rss_bytes: int | None = None
    unread: str | None = None  # why its metrics could not be read, when never once


@dataclass
class NodeMemory:
    """Each alive node's peak, sampled from its metrics agent every SAMPLE_INTERVAL_S."""

    nodes: dict[str, _Node] = field(default_factory=dict)  # by Ray's node id, in the order first seen

    def sample(self) -> None:
        import ray

        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            host, port = node["NodeManagerAddress"], node.get("MetricsExportPort")
            seen = self.nodes.setdefault(node["NodeID"], _Node(f"{host}:{port}"))
            try:
                with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=_READ_TIMEOUT_S) as page:
                    rss = node_rss_bytes(page.read().decode())
            except OSError as exc:
                seen.unread = seen.unread or f"{type(exc).__name__}: {exc}"
                continue
            seen.peak_rss_bytes = max(seen.peak_rss_bytes or 0, rss) or None

    def figures(self) -> list[ExecutorFigures]:
        """Each node seen; one whose metrics never answered (no `ray[default]` agent on it) says why."""
        return [
            ExecutorFigures(
                name=f"ray node {index}",
                host=node.host,
                source="ray-metrics",
                peak_rss_bytes=node.peak_rss_bytes,
                unmeasured=None if node.peak_rss_bytes else f"its metrics did not answer ({node.unread})",
            )
            for index, node in enumerate(self.nodes.values())
        ]


@contextmanager
def sampled_nodes() -> Iterator[NodeMemory]:
    """Samples the cluster's nodes from before the caller's work to one last time after it."""
    memory, stop = NodeMemory(), threading.Event()

    def loop() -> None:
        while not stop.wait(SAMPLE_INTERVAL_S):
            memory.sample()

    memory.sample()
    sampler = threading.Thread(target=loop, name="ray-node-metrics", daemon=True)
    sampler.start()
    try:
        yield memory
    finally:
        stop.set()
        sampler.join()
        memory.sample()
