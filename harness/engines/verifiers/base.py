"""The small interface of a verifier: another engine that reads a table back for the oracle."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from generators.checksum import Checksum
from harness.base.errors import IcebenchError
from harness.model import ORACLE_READER, EngineOptions

# The oracle's own read (harness/judge/readback.py), done on every run: the name `--verify-with` takes
# for "no second engine", never a plug-in's.
PRIMARY = ORACLE_READER


class VerifierFailed(IcebenchError):
    """The verifier could not read the table; its one line becomes the failed check's reason.
    `harness_limit`: because of the harness's own limit (its cap, its time), not the table."""

    def __init__(self, message: str, harness_limit: bool = False) -> None:
        super().__init__(message)
        self.harness_limit = harness_limit


class Verifier(ABC):
    """An engine the oracle also reads with (`--verify-with NAME`): it must reach pyiceberg's rows
    and checksum. Subclasses in harness/engines/verifiers/ are found by name, nothing to register."""

    name: ClassVar[str]
    description: ClassVar[str]
    # Its engine's options ([engines.<engine>] of the config file); the empty model: none.
    options: ClassVar[type[EngineOptions]] = EngineOptions
    # It applies equality deletes, which the oracle's pyiceberg cannot: on a table that holds any,
    # its rows and checksum are the ones judged.
    reads_equality_deletes: ClassVar[bool] = False
    # What a read costs, relative to the others (start-up and memory): a table with equality deletes
    # and no capable verifier asked for is judged by the cheapest capable one that can run here.
    cost: ClassVar[int] = 100
    # pip requirements of an environment of its own (as Writer.environment); the runner makes it
    # and sets `python` to its interpreter before the first read.
    environment: ClassVar[tuple[str, ...]] = ()
    python: Path | None = None

    @classmethod
    def supports_catalog(cls, catalog_properties: dict[str, str]) -> str | None:
        """None when this verifier can read the run's catalog, else why not (the run is refused)."""
        return None

    @classmethod
    def unavailable(cls) -> str | None:
        """None when this verifier can run on this machine, else why not (e.g. a jar missing)."""
        return None

    @abstractmethod
    def read(
        self, catalog_properties: dict[str, str], table_identifier: str, options: EngineOptions
    ) -> Checksum:
        """Rows and content checksum (generators.checksum) of the table as this engine reads it;
        VerifierFailed, with one line, when it cannot."""
