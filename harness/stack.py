"""Where tables live. `embedded`: a local warehouse folder with a SQLite catalog file in it."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.catalog.sql import SqlCatalog

NAMESPACE = "bench"


class EmbeddedStack:
    """A fresh warehouse per run, so runs never see each other's tables."""

    name = "embedded"

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def catalog_properties(self) -> dict[str, str]:
        return {
            "type": "sql",
            "uri": f"sqlite:///{self.root / 'catalog.db'}",
            "warehouse": self.root.as_uri(),
        }

    def create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def destroy(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def open_catalog(properties: dict[str, str]) -> Catalog:
    return load_catalog("icebench", **properties)


def close_catalog(catalog: Catalog) -> None:
    """Drop pooled SQLite connections so another process can commit without lock contention."""
    if isinstance(catalog, SqlCatalog):
        catalog.engine.dispose()
