"""Where tables live: a catalog and an object store, started (or reached) once per invocation."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchNamespaceError
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.utils.config import Config

from harness.base.settings import Settings
from harness.services.s3_counter import Traffic

# The name pyiceberg (and dlt, through pyiceberg) loads a run's catalog by.
CATALOG_NAME = "icebench"
# That catalog's bearer token in pyiceberg's environment configuration; pyiceberg's REST client
# sends it as `Authorization: Bearer`. The only way a token reaches a client (never a property).
CATALOG_TOKEN_VARIABLE = f"PYICEBERG_CATALOG__{CATALOG_NAME.upper()}__TOKEN"


@dataclass(frozen=True)
class RunCatalog:
    """The catalog of one run. `properties` hold no secrets: they are written to the worker's spec;
    credentials reach every process through the environment the stack set up."""

    properties: dict[str, str]
    namespace: str
    work: Path

    def open(self) -> Catalog:
        return open_catalog(self.properties)


def open_catalog(properties: dict[str, str]) -> Catalog:
    return load_catalog(CATALOG_NAME, **catalog_configuration(properties))


def catalog_configuration(properties: dict[str, str]) -> dict[str, str]:
    """These properties plus what the environment holds for the catalog (its token; a URI with a
    password), for clients that take a catalog's settings one by one. pyiceberg reads PYICEBERG_*
    once, at import, and a stack sets some later, so the environment is read again here, with
    pyiceberg's own precedence."""
    from_environment = Config().get_catalog_config(CATALOG_NAME) or {}
    return {**from_environment, **properties}


def namespace_for(run_key: str) -> str:
    """A namespace name every catalog accepts: letters, digits and underscores."""
    return "icebench_" + re.sub(r"\W", "_", run_key)


def purge_namespace(run: RunCatalog, through_catalog: bool = False) -> None:
    """Drops the run's tables and deletes every object under their locations, then the namespace.
    `through_catalog`: the catalog purges its tables' files itself (it owns their bucket, as S3
    Tables do, and refuses to have them deleted past it)."""
    catalog = run.open()
    try:
        try:
            identifiers = catalog.list_tables(run.namespace)
        except NoSuchNamespaceError:  # the run stopped before creating anything
            return
        namespace_folders = {}
        for identifier in identifiers:
            if through_catalog:
                catalog.purge_table(identifier)
                continue
            table = catalog.load_table(identifier)
            scheme, netloc, path = PyArrowFileIO.parse_location(table.location())
            filesystem = (
                table.io.fs_by_scheme(scheme, netloc) if isinstance(table.io, PyArrowFileIO) else None
            )
            catalog.drop_table(identifier)
            if filesystem is not None:
                filesystem.delete_dir(path)
                # The namespace's own folder (what writers kept beside the table, e.g. dlt's state
                # files), only when it is named after this run's namespace: never a shared folder.
                parent = path.rstrip("/").rsplit("/", 1)[0]
                if parent.rsplit("/", 1)[-1] == run.namespace:
                    namespace_folders[parent] = filesystem
        for folder, filesystem in namespace_folders.items():  # once every table in it is dropped
            filesystem.delete_dir(folder)
        catalog.drop_namespace(run.namespace)
    finally:
        close_catalog(catalog)


def close_catalog(catalog: Catalog) -> None:
    """Drop pooled SQLite connections so another process can commit without lock contention."""
    if isinstance(catalog, SqlCatalog):
        catalog.engine.dispose()


class Stack(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # The shape of this stack's catalog properties (no secrets), for `icebench writers`.
    catalog_shape: ClassVar[dict[str, str]]

    def __init__(self, settings: Settings, keep_sources: bool = False) -> None:
        self.settings = settings
        # Sets on this stack's object store outlive the invocation (`generate --out s3://...`,
        # `--source s3://...`): a stack whose object store it starts keeps that store's data.
        self.keep_sources = keep_sources

    @contextmanager
    def running(self, folder: Path) -> Iterator[None]:
        """Services this stack needs, up for the block (logs under `folder`)."""
        yield

    @abstractmethod
    def catalog_for_run(self, work: Path, run_key: str) -> RunCatalog:
        """A catalog and namespace no other run uses; `run_key` is unique to the run."""

    @abstractmethod
    def release(self, run: RunCatalog, keep: bool) -> None:
        """Removes what the run left (tables, files) unless `keep`."""

    @property
    def catalog(self) -> str | None:
        """The catalog a stack that offers several runs (--catalog), where not its default."""
        return None

    def services(self) -> dict[str, str]:
        """The servers this stack runs, by role, each named with its version (none: embedded)."""
        return {}

    def traffic(self) -> Traffic | None:
        """The object store's requests and bytes so far, where this stack counts them (None: not)."""
        return None
