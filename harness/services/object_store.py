"""S3 endpoints: the one interface the stacks use, and the S3 server the harness can start itself.

No MinIO binary can be had on these machines; moto's server passed every protocol check that
matters here (multipart, ranged GET, ListObjectsV2 paging, DeleteObjects, conditional writes).
Another server drops in by implementing `S3Server`.
"""

from __future__ import annotations

import os
import secrets
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pyarrow import fs as pafs

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


class MotoS3Server:
    """moto's S3 server on a free loopback port (harness/services/moto_server.py: it admits only this
    invocation's key, checks every SigV4 signature, and hides moto's control API). Keeps objects
    in memory: fine for correctness and for relative timings, not for absolute throughput."""

    name = "moto"

    @contextmanager
    def running(self, folder: Path) -> Iterator[S3Endpoint]:
        port = free_port()
        url = f"http://{LOOPBACK}:{port}"
        endpoint = S3Endpoint(
            endpoint_url=url,
            region="us-east-1",
            bucket="icebench",
            access_key_id=f"AKIA{secrets.token_hex(8).upper()}",
            secret_access_key=secrets.token_urlsafe(30),
        )
        command = [sys.executable, "-m", "harness.services.moto_server", "-H", LOOPBACK, "-p", str(port)]
        # The key pair the server admits travels in its environment, never in argv.
        server_environment = {**os.environ, **endpoint.environment()}
        with managed_process(
            "moto S3 server",
            command,
            folder / "s3-moto.log",
            lambda: _answers(url),
            env=server_environment,
            outside_box=True,
        ):
            endpoint.filesystem().create_dir(endpoint.bucket)
            yield endpoint


def _answers(url: str) -> bool:
    """Any HTTP answer means the server is up: unsigned requests get a 403 by design."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
