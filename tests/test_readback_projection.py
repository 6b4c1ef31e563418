"""The read-back's projection shortcut (harness/judge/readback.py): files alike share one
projection, and a batch whose projection only relabels columns skips pyiceberg's schema walk.
The shortcut must never change what is read: a cast or a made-up column is never relabelled, and
a table read with it holds the same checksum, keys and statistics as one read without it."""

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.types import LongType
from test_oracle_checks import _append_table

import harness.judge.readback as readback
from harness.judge.readback import _relabelling, read_content
from scenarios.base import DataSets, register_set


def test_a_reordered_and_renamed_batch_is_a_relabelling():
    batch = pa.record_batch({"a": pa.array([1, 2], pa.int32()), "b": pa.array(["x", None])})
    projected = pa.RecordBatch.from_arrays([batch.column(1), batch.column(0)], names=["B", "A"])
    columns, schema = _relabelling(batch, projected)
    assert columns == [1, 0] and schema.names == ["B", "A"]


@pytest.mark.parametrize(
    "made",
    [
        lambda batch: [batch.column(0).cast(pa.int64()), batch.column(1)],  # a promotion
        lambda batch: [batch.column(0), pa.array(["x", "x"])],  # a column filled in
        lambda batch: [batch.column(0), batch.column(1).cast(pa.large_string())],  # another layout
    ],
)
def test_a_cast_or_made_column_is_no_relabelling(made):
    batch = pa.record_batch({"a": pa.array([1, 2], pa.int32()), "b": pa.array(["x", None])})
    assert _relabelling(batch, pa.RecordBatch.from_arrays(made(batch), names=["a", "b"])) is None


def test_columns_without_buffers_of_their_own_are_no_relabelling():
    batch = pa.record_batch({"a": pa.nulls(2), "b": pa.nulls(2)})
    assert _relabelling(batch, batch) is None


def _content(table: object, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """What the read found, each file's statistics as gathered (before they are let go) included."""
    gathered = []

    def held(claims: object, stats: object, rows: int, columns: list) -> list[str]:
        gathered.append((rows, stats))
        return checked(claims, stats, rows, columns)

    checked = readback.stats_problems
    monkeypatch.setattr(readback, "stats_problems", held)
    content = read_content(table, keep_keys=True)
    monkeypatch.setattr(readback, "stats_problems", checked)
    keys = content.keys.tolist(), content.tally.numbers().tolist()
    return content.checksum, content.rows, keys, gathered, content.nulls


def test_a_table_reads_alike_with_and_without_the_shortcut(
    tiny_sets: DataSets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Files before and after a promotion (two layouts, one cast): the same content either way."""
    table, _ = _append_table(tmp_path, tiny_sets)
    register_set(table, tiny_sets["base"])
    int_column = next(field.name for field in table.schema().fields if field.name.endswith("_int32"))
    with table.update_schema() as update:
        update.update_column(int_column, LongType())
    table = table.refresh()
    with_shortcut = _content(table, monkeypatch)
    monkeypatch.setattr(readback, "_relabelling", lambda *_: None)
    assert _content(table, monkeypatch) == with_shortcut


def test_a_slice_of_a_column_is_no_relabelling():
    batch = pa.record_batch({"a": pa.array([1, 2, 3], pa.int64()), "b": pa.array([4, 5, 6], pa.int64())})
    sliced = pa.RecordBatch.from_arrays(
        [batch.column(0).slice(1), batch.column(1).slice(1)], names=["a", "b"]
    )
    assert _relabelling(batch, sliced) is None
