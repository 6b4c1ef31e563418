"""`embedded`: a local warehouse folder per run with a SQLite catalog file in it."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.services.stacks.base import RunCatalog, Stack

NAMESPACE = "bench"


class EmbeddedStack(Stack):
    name = "embedded"
    description = "local warehouse + SQLite catalog (pyiceberg SqlCatalog), nothing to start"
    catalog_shape = {"type": "sql", "uri": "sqlite:////RUN/catalog.db", "warehouse": "file:///RUN"}  # noqa: RUF012

    def catalog_for_run(self, work: Path, run_key: str) -> RunCatalog:
        root = (work / "warehouse").resolve()
        root.mkdir(parents=True, exist_ok=True)
        properties = {"type": "sql", "uri": f"sqlite:///{root / 'catalog.db'}", "warehouse": root.as_uri()}
        return RunCatalog(properties=properties, namespace=NAMESPACE, work=work)

    def release(self, run: RunCatalog, keep: bool) -> None:
        if not keep:
            shutil.rmtree(run.work / "warehouse", ignore_errors=True)
