"""`external`: a REST catalog and S3 endpoint that already exist (your MinIO, AWS, lakehouse)."""

from __future__ import annotations

from pathlib import Path

from harness.errors import IcebenchError
from harness.stacks.base import RunCatalog, Stack, namespace_for, purge_namespace


class ExternalStack(Stack):
    name = "external"
    description = (
        "your REST catalog (catalog_uri, warehouse) and S3 (s3_endpoint); secrets from the environment"
    )
    catalog_shape = {"type": "rest", "uri": "https://CATALOG", "warehouse": "s3://BUCKET"}  # noqa: RUF012

    def catalog_for_run(self, work: Path, run_key: str) -> RunCatalog:
        settings = self.settings
        if not settings.catalog_uri:
            raise IcebenchError(
                "stack external needs catalog_uri (ICEBENCH_CATALOG_URI or [settings] catalog_uri)"
            )
        properties = {
            "type": "rest",
            "uri": settings.catalog_uri,
            "s3.region": settings.s3_region,
            "s3.path-style-access": str(settings.s3_path_style).lower(),
        }
        if settings.warehouse:
            properties["warehouse"] = settings.warehouse
        if settings.s3_endpoint:
            properties["s3.endpoint"] = settings.s3_endpoint
        # One namespace per run, never shared with what else lives in your catalog.
        return RunCatalog(properties=properties, namespace=namespace_for(run_key), work=work)

    def release(self, run: RunCatalog, keep: bool) -> None:
        if not keep:
            purge_namespace(run)
