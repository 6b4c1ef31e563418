"""The sets' key is the manifest's `key_columns`, not a fixed `id`: the writer's upsert key, the
oracle's key checks, the selective scan and the trace of a differing row all follow it (issue 23:
your data, your key)."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from generators.checksum import Checksum
from generators.datasets import DataSet, DataSets
from generators.manifest import DatasetManifest, file_entry, schema_fields
from harness.run.runner import Runner, RunPlan

READS_SCANS = True  # tests/conftest.py's runner keeps the downstream scans

KEY = "order_id"


def renamed_key(data: DataSet, folder: Path) -> DataSet:
    """`data` with its key column `id` renamed to KEY, files and manifest alike."""
    folder.mkdir()
    entries, checksum = [], Checksum()
    for path in data.manifest.file_paths(data.directory):
        rows = pq.read_table(path)
        rows = rows.rename_columns([KEY if name == "id" else name for name in rows.column_names])
        pq.write_table(rows, folder / path.name)
        entries.append(file_entry(folder / path.name, rows.num_rows))
        checksum.update(rows)  # the key's name is in every row's hash
    manifest = data.manifest.model_copy(
        update={
            "key_columns": [KEY],
            "files": entries,
            "schema_fields": schema_fields(rows.schema),
            "checksum": checksum.hex,
        }
    )
    manifest.save(folder)
    return DataSet(folder, DatasetManifest.load(folder))


@pytest.fixture
def keyed_sets(tiny_sets: DataSets, tmp_path: Path) -> DataSets:
    return {"base": renamed_key(tiny_sets["base"], tmp_path / "base")}


def test_an_append_is_judged_by_the_sets_own_key(runner: Runner, keyed_sets: DataSets):
    record = runner.run(
        RunPlan("append", "pyiceberg-add-files", "custom", keyed_sets, runner.settings.batch_rows, 1 << 30)
    )
    assert record.status == "ok" and record.verdict.passed, record.verdict
    checks = {check.name: check for check in record.verdict.checks}
    assert checks["keys_unique"].passed and checks["key_set"].passed
    assert record.selective_scan_rows == 100  # the first 1% of keys 0..9,999, filtered on order_id
