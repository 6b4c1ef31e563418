"""The Iceberg REST catalog server of `compose/rest-catalog/`: Apache Iceberg's REST fixture (the
adapter and servlet apache/iceberg-rest-fixture runs) over a JdbcCatalog on SQLite, writing metadata
with Iceberg's S3FileIO, started on a free loopback port against an S3 endpoint. It answers only
requests that carry the bearer token it was started with (401 otherwise)."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.base.checkout import REPO_ROOT
from harness.base.errors import IcebenchError
from harness.services.object_store import S3Endpoint
from harness.services.processes import LOOPBACK, free_port, managed_process

SERVER_DIR = REPO_ROOT / "compose" / "rest-catalog"
BUILD_DIR = SERVER_DIR / "build"
MAIN_CLASS = "org.apache.iceberg.rest.IcebenchRestServer"
# The server reads the token it demands from here (IcebenchRestServer.TOKEN_ENV), never from argv.
SERVER_TOKEN_VARIABLE = "ICEBENCH_REST_TOKEN"


def classpath() -> str:
    path = BUILD_DIR / "classpath.txt"
    if not path.is_file():
        raise IcebenchError(
            f"the REST catalog server is not built: run `make rest-catalog` ({SERVER_DIR}/build.sh)"
        )
    return path.read_text().strip()


def fixture_version() -> str:
    """The Iceberg release the server's jars are (compose/rest-catalog/pom.xml's iceberg.version)."""
    found = re.search(r"<iceberg.version>([^<]+)</iceberg.version>", (SERVER_DIR / "pom.xml").read_text())
    return found.group(1) if found else "unknown"


class RestCatalogServer:
    name = "iceberg-rest-fixture (JdbcCatalog + S3FileIO)"

    @contextmanager
    def running(self, folder: Path, endpoint: S3Endpoint, token: str, heap: str = "768m") -> Iterator[str]:
        """The catalog's base URI while the block runs; every request must carry `token`.
        Credentials (S3 keys, token) reach the server through its environment only."""
        port = free_port()
        uri = f"http://{LOOPBACK}:{port}"
        # The server writes metadata with Iceberg's S3FileIO (keys from the AWS_* environment).
        properties = {
            "s3.endpoint": endpoint.endpoint_url,
            "client.region": endpoint.region,
            "s3.path-style-access": "true",
        }
        command = [
            "java", f"-Xmx{heap}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp", classpath(), MAIN_CLASS,
            "--host", LOOPBACK, "--port", str(port),
            "--warehouse", f"s3://{endpoint.bucket}/warehouse",
            "--jdbc-uri", f"jdbc:sqlite:{(folder / 'rest-catalog.db').resolve()}",
        ]  # fmt: skip
        for key, value in properties.items():
            command += ["--prop", f"{key}={value}"]
        server_environment = {**os.environ, **endpoint.environment(), SERVER_TOKEN_VARIABLE: token}
        with managed_process(
            "REST catalog server",
            command,
            folder / "rest-catalog.log",
            lambda: _serves(uri, token),
            env=server_environment,
            outside_box=True,
        ):
            yield uri


def _serves(uri: str, token: str) -> bool:
    request = urllib.request.Request(f"{uri}/v1/config", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=2) as response:
        return response.status == 200 and "defaults" in json.loads(response.read())
