"""What a run costs the object store: `compose/s3-counter` (Go), a proxy on loopback in front of the
stack's S3 endpoint, counts every request by kind and the bytes each kind moved. Every client of
the stack (workers, the REST catalog, the oracle, the scans) is pointed at the proxy, so the
counts are the store's whole bill, whatever server answers behind it; the runner reads them before
and after each phase of a run.

Kinds, as the proxy names them (path-style requests): `put`, `upload_part`, `multipart_start`,
`multipart_complete`, `multipart_abort`, `copy`, `get`, `get_range`, `head`, `head_bucket`, `list`,
`delete`, `delete_objects`, `create_bucket`.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError
from harness.services.object_store import S3Endpoint
from harness.services.processes import LOOPBACK, free_port, managed_process

# What the requests of a write would cost on AWS: S3 Standard's list prices in US East (N. Virginia),
# https://aws.amazon.com/s3/pricing/ (Requests & data retrievals, as of 2026-11): PUT, COPY, POST
# and LIST $0.005 per 1,000; GET, HEAD and every other request $0.0004 per 1,000; DELETE and
# cancelled multipart uploads free. Transfer between S3 and compute in one region is free.
PRICE_URL = "https://aws.amazon.com/s3/pricing/"
WRITE_TIER_USD = 0.005 / 1000
READ_TIER_USD = 0.0004 / 1000
WRITE_TIER = {"put", "upload_part", "copy", "multipart_start", "multipart_complete", "list", "create_bucket"}
FREE = {"delete", "delete_objects", "multipart_abort"}

COUNTER_DIR = REPO_ROOT / "compose" / "s3-counter"
COUNTER_BINARY = COUNTER_DIR / "build" / "s3-counter"
COUNTERS_PATH = "/_counters"  # no bucket can be named so: bucket names have no '_'
SERVICE_NAME = "S3 request counter"


@dataclass(frozen=True)
class Traffic:
    """Requests by kind, and the bytes of their bodies: `bytes_in` sent to the store, `bytes_out`
    received from it."""

    requests: dict[str, int] = field(default_factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    @property
    def list_price_usd(self) -> float:
        """The requests at S3 Standard's list prices (PRICE_URL)."""
        return sum(
            n * (WRITE_TIER_USD if kind in WRITE_TIER else READ_TIER_USD)
            for kind, n in self.requests.items()
            if kind not in FREE
        )

    def since(self, before: Traffic) -> Traffic:
        requests = {kind: n - before.requests.get(kind, 0) for kind, n in self.requests.items()}
        return Traffic(
            requests={kind: n for kind, n in sorted(requests.items()) if n},
            bytes_in=self.bytes_in - before.bytes_in,
            bytes_out=self.bytes_out - before.bytes_out,
        )


@dataclass(frozen=True)
class Counter:
    """A running counter: where its clients send requests, and what it has counted."""

    url: str

    def traffic(self) -> Traffic:
        """Everything counted since the counter started."""
        with urllib.request.urlopen(f"{self.url}{COUNTERS_PATH}", timeout=10) as response:
            kinds: dict[str, dict[str, int]] = json.loads(response.read())
        return Traffic(
            requests={kind: tally["requests"] for kind, tally in kinds.items()},
            bytes_in=sum(tally["bytes_in"] for tally in kinds.values()),
            bytes_out=sum(tally["bytes_out"] for tally in kinds.values()),
        )


@contextmanager
def counting(
    folder: Path, endpoint: S3Endpoint, port: int | None = None
) -> Iterator[tuple[S3Endpoint, Counter]]:
    """`endpoint` behind a counter (on `port`, else a free one) while the block runs: the endpoint
    its clients must use, and the counter."""
    if not COUNTER_BINARY.is_file():
        raise IcebenchError(f"the S3 request counter is not built: run `make s3-counter` ({COUNTER_DIR})")
    port = port or free_port()
    url = f"http://{LOOPBACK}:{port}"
    command = [str(COUNTER_BINARY), "-listen", f"{LOOPBACK}:{port}", "-target", endpoint.endpoint_url]
    log = folder / "s3-counter.log"
    with managed_process(SERVICE_NAME, command, log, lambda: _answers(url), outside_box=True):
        yield dataclasses.replace(endpoint, endpoint_url=url), Counter(url)


def traffic_between(before: Traffic | None, after: Traffic | None) -> Traffic | None:
    """What the store served from `before` to `after` (None: nothing counts)."""
    return None if before is None or after is None else after.since(before)


def _answers(url: str) -> bool:
    with urllib.request.urlopen(f"{url}{COUNTERS_PATH}", timeout=2) as response:
        return response.status == 200
