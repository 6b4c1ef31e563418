"""Run by the sidequery fork's interpreter (tests/test_equality_delete.py): upserts a change set with
the fork's `upsert_by_equality_delete`, faithfully or with one defect that keeps the row count.

Spec on stdin (JSON): catalog, table, source (a change set's folder), damage:
- "none": the change set as it is (the control);
- "one-value-changed": one updated row carries another value in one column;
- "wrong-key-deleted": one updated row's old version is left in place (its delete goes missing)
  and an untouched row of the base set is deleted instead.
"""

import json
import sys
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog import load_catalog

from generators.schema import KEY_COLUMN
from generators.source import ParquetSource


def main() -> None:
    spec = json.loads(sys.stdin.read())
    table = load_catalog("icebench", **spec["catalog"]).load_table(spec["table"])
    changes = ParquetSource.open(Path(spec["source"]), 1 << 20).read_all()
    updated = changes.slice(0, 1)  # the change set leads with updates of existing keys
    if spec["damage"] == "none":
        table.upsert_by_equality_delete(changes, join_cols=[KEY_COLUMN])
    elif spec["damage"] == "one-value-changed":
        column = next(name for name in changes.column_names if name != KEY_COLUMN)
        index = changes.column_names.index(column)
        values = changes.column(column).to_pylist()
        values[0] = values[1] if values[1] != values[0] else None
        changed = changes.set_column(index, column, pa.array(values, changes.schema.field(column).type))
        table.upsert_by_equality_delete(changed, join_cols=[KEY_COLUMN])
    elif spec["damage"] == "wrong-key-deleted":
        keys = changes.column(KEY_COLUMN)
        changed = set(keys.to_pylist())
        untouched = next(key for key in range(len(changed) + 1) if key not in changed)  # base keys from 0
        with table.transaction() as txn:
            txn.upsert_by_equality_delete(
                changes.slice(1),
                join_cols=[KEY_COLUMN],
                delete_df=pa.table({KEY_COLUMN: pa.array([untouched], keys.type)}),
            )
            txn.append(updated)  # the new version lands, the old one stays
    else:
        raise ValueError(spec["damage"])


if __name__ == "__main__":
    main()
