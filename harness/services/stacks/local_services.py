"""`local-services`: an S3 server and an Iceberg REST catalog the harness starts on loopback.

Both run for the whole invocation (logs under results/<run-id>/services/); every run gets its own
namespace, dropped and deleted afterwards. Neither accepts strangers: the S3 server (SeaweedFS)
admits only this invocation's generated key pair, the REST catalog only this invocation's bearer
token. Both reach the harness's clients and workers through the environment, never through catalog
properties (those are written to spec files and results). The REST catalog is Apache Iceberg's own
REST fixture over a JdbcCatalog (see compose/rest-catalog/), so the server side is independent of
pyiceberg.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from harness.base.config_file import DEFAULT_CATALOG
from harness.base.settings import SOURCES_ENDPOINT_VARIABLE
from harness.services.object_store import TABLE_BUCKET, S3Endpoint, SeaweedS3Server, seaweed_version
from harness.services.processes import LOOPBACK, environment_variables, free_port
from harness.services.rest_catalog import RestCatalogServer, fixture_version
from harness.services.s3_counter import Counter, Traffic, counting
from harness.services.stacks.base import (
    CATALOG_TOKEN_VARIABLE,
    RunCatalog,
    Stack,
    namespace_for,
    purge_namespace,
)

# The REST catalogs this stack can run (--catalog): Apache Iceberg's REST fixture over a JdbcCatalog,
# or SeaweedFS's own Iceberg catalog inside the S3 server (requests signed with SigV4, as AWS S3
# Tables'; its metadata written by the server itself, past the request counter).


# Under the data cache: the S3 server's data when sets live on it (`generate --out s3://...`).
KEPT_STORE = "s3-store"


class LocalServicesStack(Stack):
    name = "local-services"
    description = "S3 (SeaweedFS) + Iceberg REST catalog (Apache Iceberg's REST fixture) on loopback"
    catalog_shape = {"type": "rest", "uri": "http://127.0.0.1:PORT", "warehouse": "s3://BUCKET"}  # noqa: RUF012

    endpoint: S3Endpoint
    object_store: SeaweedS3Server
    counter: Counter | None = None
    catalog_uri: str

    @property
    def seaweed_catalog(self) -> bool:
        return self.settings.catalog == "seaweedfs"

    @contextmanager
    def running(self, folder: Path) -> Iterator[None]:
        with ExitStack() as services:
            catalog_port = free_port() if self.seaweed_catalog else None
            counter_port = free_port()  # SeaweedFS's catalog hands it to clients in table configs
            self.object_store = SeaweedS3Server(catalog_port, f"http://{LOOPBACK}:{counter_port}")
            kept = self.settings.data_dir.resolve() / KEPT_STORE if self.keep_sources else None
            store = services.enter_context(self.object_store.running(folder, kept))
            services.enter_context(environment_variables({SOURCES_ENDPOINT_VARIABLE: store.endpoint_url}))
            # Every client, the fixture's S3FileIO included, goes through the request counter.
            self.endpoint, self.counter = services.enter_context(counting(folder, store, counter_port))
            services.enter_context(environment_variables(self.endpoint.environment()))
            if catalog_port:
                self.catalog_uri = f"http://{LOOPBACK}:{catalog_port}"
            else:
                token = secrets.token_urlsafe(32)
                self.catalog_uri = services.enter_context(
                    RestCatalogServer().running(folder, self.endpoint, token)
                )
                services.enter_context(environment_variables({CATALOG_TOKEN_VARIABLE: token}))
            try:
                yield
            finally:
                self.counter = None  # stopped with the services

    def catalog_for_run(self, work: Path, run_key: str) -> RunCatalog:
        properties = {"type": "rest", "uri": self.catalog_uri, **self.endpoint.client_properties()}
        if self.seaweed_catalog:  # its tables live in the table bucket; clients sign with SigV4
            properties |= {
                "warehouse": TABLE_BUCKET,
                "rest.sigv4-enabled": "true",
                "rest.signing-name": "s3tables",
                "rest.signing-region": self.endpoint.region,
            }
        return RunCatalog(properties=properties, namespace=namespace_for(run_key), work=work)

    @property
    def catalog(self) -> str | None:
        return None if self.settings.catalog == DEFAULT_CATALOG else self.settings.catalog

    def services(self) -> dict[str, str]:
        return {
            "object store": f"SeaweedFS {seaweed_version()}",
            "catalog": f"SeaweedFS {seaweed_version()} Iceberg catalog"
            if self.seaweed_catalog
            else f"Apache Iceberg REST fixture {fixture_version()}",
            "request counter": "icebench s3-counter",
        }

    def traffic(self) -> Traffic | None:
        return None if self.counter is None else self.counter.traffic()

    def release(self, run: RunCatalog, keep: bool) -> None:
        if not keep:
            purge_namespace(run, through_catalog=self.seaweed_catalog)
            self.object_store.reclaim()
