"""Upsert by equality deletes: the sidequery fork of pyiceberg (`upsert_by_equality_delete`).

Per batch, one call in one transaction: an equality-delete file holding the batch's keys and a data
file holding its rows, as one row-delta snapshot; one catalog commit at the end. No existing data
file is read or rewritten, so the cost follows the change set, not the table; the rows replaced
stay in their files, masked by the deletes, until a reader applies them. Apache pyiceberg 0.12
cannot (the oracle judges such a table through a reader that can, e.g. `--verify-with spark`).

The fork installs as the `pyiceberg` package, hence a worker environment of its own
(`environment`, harness/services/envs.py). There, `importlib.metadata.version("pyiceberg")` reads
the main environment's pyiceberg 0.12.0, which the fork shadows: the version recorded is the fork's
own distribution's. It adds nothing to append or replace, which stay unsupported.
"""

from __future__ import annotations

from functools import partial

from harness.base.layout_text import partition_columns
from harness.engines.writers.base import StepTimer, WriteJob, Writer
from harness.engines.writers.pyiceberg_txn_batches import _stage_each_then_commit
from harness.model import TableLayout

SIDEQUERY_PYICEBERG = "sidequery-pyiceberg==0.12.0.post2"


class PyicebergEqualityDelete(Writer):
    name = "pyiceberg-equality-delete"
    description = (
        "sidequery's pyiceberg fork: one transaction, txn.upsert_by_equality_delete per batch "
        "(an equality-delete file of its keys + its rows), one commit"
    )
    single_commit = True
    libraries = ("sidequery-pyiceberg", "pyarrow")
    environment = (SIDEQUERY_PYICEBERG,)

    @classmethod
    def supports_layout(cls, layout: TableLayout, key_columns: list[str]) -> str | None:
        # The fork refuses it itself: a delete file lies in one partition, so its keys must fix it.
        if missing := [column for column in partition_columns(layout) if column not in key_columns]:
            return f"the fork's equality deletes need each partition column in the key, not {missing[0]}"
        return None

    def upsert(self, job: WriteJob, timer: StepTimer) -> None:
        txn = job.table.transaction()
        # The fork's method; Apache pyiceberg's Transaction has none (this runs in the fork's env).
        by_equality_delete = txn.upsert_by_equality_delete  # type: ignore[attr-defined]
        _stage_each_then_commit(job, timer, txn, partial(by_equality_delete, join_cols=job.key_columns))
