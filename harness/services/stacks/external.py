"""`external`: a REST catalog and S3 endpoint that already exist (your MinIO, AWS, lakehouse)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.base.errors import IcebenchError, one_line
from harness.base.redaction import has_credentials
from harness.base.settings import SOURCES_ENDPOINT_VARIABLE
from harness.services.processes import environment_variables
from harness.services.stacks.base import (
    CATALOG_NAME,
    RunCatalog,
    Stack,
    close_catalog,
    namespace_for,
    open_catalog,
    purge_namespace,
)

# pyiceberg (and every worker, which inherits it) reads the catalog's URI from here when the
# properties carry none: a URI with a password never reaches a spec file.
URI_VARIABLE = f"PYICEBERG_CATALOG__{CATALOG_NAME.upper()}__URI"


class ExternalStack(Stack):
    name = "external"
    description = (
        "your REST catalog (catalog_uri, warehouse) and S3 (s3_endpoint); secrets from the environment"
    )
    catalog_shape = {"type": "rest", "uri": "https://CATALOG", "warehouse": "s3://BUCKET"}  # noqa: RUF012

    @contextmanager
    def running(self, folder: Path) -> Iterator[None]:
        """Checks the catalog answers before any run: one line naming it, not a traceback per run."""
        uri = self.settings.catalog_uri
        if not uri:
            raise IcebenchError(
                "stack external needs catalog_uri (ICEBENCH_CATALOG_URI or [settings] catalog_uri)"
            )
        sources = {SOURCES_ENDPOINT_VARIABLE: self.settings.s3_endpoint or ""}  # "": AWS's own
        with environment_variables(({URI_VARIABLE: uri} if has_credentials(uri) else {}) | sources):
            try:
                catalog = open_catalog(self._properties())
                catalog.list_namespaces()
                close_catalog(catalog)
            except Exception as exc:
                raise IcebenchError(f"external catalog {uri} does not answer: {one_line(exc)}") from None
            yield

    def _properties(self) -> dict[str, str]:
        settings = self.settings
        properties = {
            "type": "rest",
            "s3.region": settings.s3_region,
            "s3.path-style-access": str(settings.s3_path_style).lower(),
        }
        if settings.catalog_uri and not has_credentials(settings.catalog_uri):
            properties["uri"] = settings.catalog_uri
        if settings.warehouse:
            properties["warehouse"] = settings.warehouse
        if settings.s3_endpoint:
            properties["s3.endpoint"] = settings.s3_endpoint
        return properties

    def catalog_for_run(self, work: Path, run_key: str) -> RunCatalog:
        # One namespace per run, never shared with what else lives in your catalog.
        return RunCatalog(self._properties(), namespace_for(run_key), work)

    def release(self, run: RunCatalog, keep: bool) -> None:
        if not keep:
            purge_namespace(run)
