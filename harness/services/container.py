"""`--isolation docker`: the worker in a container with mem_limit = the cap.

The container runs below a memory cgroup of ours (`--cgroup-parent`): its own cgroup vanishes at
exit, the parent's peak and OOM counter stay readable. It shares the host network (so it reaches
services bound to loopback) and sees the repository, the data sets and the results folder at
their host paths, read-only except results. A container does not die with its client: each is
labelled with the harness that started it, and the start-up sweep removes those whose harness is
dead (`remove_orphaned_containers`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import APIError, DockerException
from docker.models.containers import Container

from harness.base.caps import CgroupCap
from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError
from harness.base.ownership import PID_LABEL, Owner
from harness.services.launcher import Launch, WorkerHandle, supervise, write_log

# Only what a worker needs from our environment: object store and catalog client settings.
PASSED_PREFIXES = ("AWS_", "PYICEBERG_")


def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except DockerException as exc:
        raise IcebenchError(
            f"isolation docker needs a running Docker engine (make docker-engine, or set DOCKER_HOST): {exc}"
        ) from None
    return client


class ContainerHandle:
    pid = None  # sampled through the cgroup, never psutil

    def __init__(self, container: Container) -> None:
        self.container = container

    def wait(self) -> int:
        code = int(self.container.wait()["StatusCode"])
        return -9 if code == 137 else code  # like a process killed by SIGKILL

    def kill(self) -> None:
        with contextlib.suppress(APIError):  # already gone
            self.container.kill()

    def killed_by_oom(self) -> bool:
        self.container.reload()
        return bool(self.container.attrs["State"].get("OOMKilled"))


def launch_container(
    cap: CgroupCap,
    spec_path: Path,
    log_path: Path,
    *,
    image: str,
    read_only: list[Path],
    writable: list[Path],
    timeout_s: float,
    sample_interval_s: float,
    timeline_points: int,
    python_arguments: list[str],
    environment: dict[str, str],
    on_start: Callable[[WorkerHandle], None] | None = None,
) -> Launch:
    """`environment`: variables the worker gets beyond the object store's and catalog's."""
    client = docker_client()
    # Same paths inside as outside, so the spec's paths hold in both.
    volumes = {str(p.resolve()): {"bind": str(p.resolve()), "mode": "ro"} for p in [REPO_ROOT, *read_only]}
    volumes |= {str(p.resolve()): {"bind": str(p.resolve()), "mode": "rw"} for p in writable}
    passed = {k: v for k, v in os.environ.items() if k.startswith(PASSED_PREFIXES)}
    container = client.containers.create(
        image,
        ["python", *python_arguments, str(spec_path)],
        environment={**passed, **environment, "PYTHONPATH": str(REPO_ROOT)},
        labels=Owner.me().labels(),
        volumes=volumes,
        working_dir=str(REPO_ROOT),
        network_mode="host",
        mem_limit=cap.cap_bytes,
        memswap_limit=cap.cap_bytes,
        cgroup_parent=cap.hierarchy_path,
    )
    handle = ContainerHandle(container)
    launched: Launch | None = None
    try:
        start = time.perf_counter()
        container.start()
        launched = supervise(
            cap,
            handle,
            start,
            timeout_s=timeout_s,
            sample_interval_s=sample_interval_s,
            timeline_points=timeline_points,
            on_start=on_start,
        )
    finally:
        output = write_log(log_path, container.logs(stdout=True, stderr=True))
        container.remove(force=True)
    launched.output = output
    return launched


def remove_orphaned_containers() -> int:
    """Removes worker containers whose harness is dead; how many. Nothing when no engine answers
    (most runs have none): never an error."""
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        containers = client.containers.list(all=True, filters={"label": PID_LABEL})
    except DockerException:
        return 0
    removed = 0
    for container in containers:
        owner = Owner.from_labels(container.labels)
        if owner is not None and not owner.alive():
            with contextlib.suppress(APIError):  # another sweep got there first
                container.remove(force=True)
                removed += 1
    return removed
