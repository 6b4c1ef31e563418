"""sidequery's pyiceberg fork reads the table in its own environment, equality deletes applied.

It is the fork the `pyiceberg-equality-delete` writer writes with, so it is no independent judge of
that writer (Spark is, on the embedded stack); it is the capable reader that works on every stack,
S3 and REST included, as any pyiceberg does.
"""

from __future__ import annotations

from generators.checksum import Checksum
from harness.engines.child_read import ChildReadFailed
from harness.engines.pyiceberg_read import read_with_pyiceberg
from harness.engines.verifiers.base import Verifier, VerifierFailed
from harness.engines.writers.pyiceberg_equality_delete import SIDEQUERY_PYICEBERG
from harness.model import EngineOptions


class SidequeryPyicebergVerifier(Verifier):
    name = "sidequery-pyiceberg"
    description = (
        f"{SIDEQUERY_PYICEBERG} in its own environment, in a child process: row count and "
        "checksum of its scan, equality deletes applied"
    )
    reads_equality_deletes = True
    cost = 1  # one Python process
    environment = (SIDEQUERY_PYICEBERG,)

    def read(
        self, catalog_properties: dict[str, str], table_identifier: str, options: EngineOptions
    ) -> Checksum:
        if self.python is None:
            raise VerifierFailed(f"{self.name} was not given its environment ({SIDEQUERY_PYICEBERG})")
        try:
            return read_with_pyiceberg(catalog_properties, table_identifier, self.python, self.name)
        except ChildReadFailed as exc:
            raise VerifierFailed(str(exc), harness_limit=exc.harness_limit) from None
