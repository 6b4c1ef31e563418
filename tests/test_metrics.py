"""The metric registry, the results schema version, environment.json, the run key with its writer
source hash, the matrix's scale axis, and the layers of reports (synthetic results; nothing runs)."""

import hashlib
import inspect
import json
import subprocess
from pathlib import Path

import pytest
from test_gate import APPEND_KEY, gate_of, kinds, results, run, three

import harness.model
from harness.base.errors import IcebenchError
from harness.base.registry import source_hash
from harness.base.results import CHECKOUT, ResultsStore, environment, git_state, read_runs
from harness.cli.main import main
from harness.engines.writers import get_writer
from harness.model import RESULTS_SCHEMA_VERSION, Gate, Metric, run_key
from harness.run.config import MatrixConfig
from harness.run.matrix import axis_scenarios
from reports.baseline import aggregate_runs, build_baseline, save_baseline
from reports.compare import NOT_COMPARABLE, compare
from reports.gate import GateThresholds, gate
from reports.summary import summary_rows


def test_adding_a_metric_is_one_line(monkeypatch, tmp_path):
    # verify_peak_rss_bytes is a RunRecord field no metric names: registering it is all it takes.
    extra = Metric(
        name="verify_peak_rss_bytes",
        label="oracle rss",
        unit="bytes",
        gate=Gate(kind="oracle_memory", limit=1.2),
    )
    monkeypatch.setattr(harness.model, "METRICS", (*harness.model.METRICS, extra))

    def with_oracle_rss(mib: int, **fields) -> list:
        return [r.model_copy(update={"verify_peak_rss_bytes": mib * 2**20}) for r in three(**fields)]

    headers, rows, _ = summary_rows(with_oracle_rss(100))
    assert "oracle rss" in headers and "100.0 MiB" in rows[0]
    assert aggregate_runs(with_oracle_rss(100)).value("verify_peak_rss_bytes") == 100 * 2**20

    thresholds = GateThresholds()
    assert thresholds.oracle_memory_ratio == 1.2
    assert GateThresholds(oracle_memory_ratio=2.0).limit("oracle_memory_ratio") == 2.0

    base = build_baseline([results(tmp_path, "base", with_oracle_rss(100))])
    current = build_baseline([results(tmp_path, "current", with_oracle_rss(150))])
    (row,) = compare(base, current)
    assert row.metrics["verify_peak_rss_bytes"].ratio == pytest.approx(1.5)
    regressions = gate(base, current)
    assert [(r.kind, r.subject) for r in regressions] == [("oracle_memory", "verify_peak_rss_bytes")]


def test_orphans_and_manifests_are_summarised_compared_and_gated(tmp_path):
    headers, _, _ = summary_rows([run()])
    assert {"orphans", "manifests"} <= set(headers)
    base = [r.model_copy(update={"orphan_files": 0, "manifests": 2}) for r in three()]
    now = [r.model_copy(update={"orphan_files": 3, "manifests": 4}) for r in three()]
    regressions = gate(
        build_baseline([results(tmp_path, "base", base)]), build_baseline([results(tmp_path, "now", now)])
    )
    assert sorted((r.kind, r.change) for r in regressions) == [("manifests", 2.0), ("orphan_files", 3.0)]


def test_results_lines_carry_a_schema_version(tmp_path):
    store = ResultsStore(tmp_path, run_id="versions")
    store.append(run())
    (record,) = read_runs(store.folder)
    assert record.schema_version == RESULTS_SCHEMA_VERSION == 2

    old = json.loads(run().model_dump_json(exclude={"schema_version", "writer_source"}))
    store.runs_path.write_text(json.dumps(old) + "\n")
    assert read_runs(store.folder)[0].schema_version == 1  # written before the field existed

    store.runs_path.write_text(json.dumps({**old, "schema_version": 99}) + "\n")
    with pytest.raises(IcebenchError) as raised:
        read_runs(store.folder)
    message = str(raised.value)
    assert str(store.runs_path) in message and "schema version 99" in message and "\n" not in message


def test_environment_names_the_icebench_commit(tmp_path):
    env = environment("none", {"memory": "1g"})
    head = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert env.icebench_git is not None and env.icebench_git.commit == head.stdout.strip()
    assert git_state(tmp_path) is None  # no checkout: no commit, and no failure
    store = ResultsStore(tmp_path, run_id="env")
    store.write_environment(env.model_copy(update={"settings": {"catalog_uri": "https://u:secret@x/api"}}))
    written = json.loads((store.folder / "environment.json").read_text())
    assert written["icebench_git"]["commit"] == env.icebench_git.commit
    assert "secret" not in json.dumps(written)


def test_source_hash_is_the_writer_modules_file():
    writer = get_writer("pyiceberg-table")
    digest = hashlib.sha256(Path(inspect.getsourcefile(writer)).read_bytes()).hexdigest()
    assert source_hash(writer) == digest[:12]


def test_run_key_holds_the_setup_and_the_axis():
    point = run(batch_rows=50, rows=5000, limit_rows=5000)
    key = run_key(point)
    assert key.text == "append|pyiceberg-table|tiny|embedded|cgroup 1g|50 rows/batch|100 batches"
    assert key.without_axis().text == "append|pyiceberg-table|tiny|embedded|cgroup 1g|50 rows/batch"
    assert run_key(run()).text == APPEND_KEY
    # The writer's source is beside the key, not in it: a changed writer is the same key.
    changed = run().model_copy(update={"writer_source": "abc"})
    assert run_key(changed).text == APPEND_KEY and run_key(changed).writer_source == "abc"


def test_a_changed_writer_is_listed_not_compared_nor_failed(tmp_path, capsys):
    old = [r.model_copy(update={"writer_source": "aaaaaaaaaaaa"}) for r in three()]
    new = [r.model_copy(update={"writer_source": "bbbbbbbbbbbb"}) for r in three(wall_s=40.0, peak_mib=2000)]
    unchanged = three(scenario="upsert", writer="pyiceberg-txn-batches")  # the gate still compares one
    base_folder = results(tmp_path / "results", "20260101-000000-aaaaaa", old + unchanged)
    current_folder = results(tmp_path / "results", "20260102-000000-bbbbbb", new + unchanged)
    base, current = build_baseline([base_folder]), build_baseline([current_folder])
    (row,) = [row for row in compare(base, current) if row.key == APPEND_KEY]
    assert row.presence == "not comparable" and row.metrics == {}
    assert gate(base, current) == []

    baseline_file = tmp_path / "baseline.json"
    save_baseline([base_folder], baseline_file)
    assert main(["gate", "--baseline", str(baseline_file), str(current_folder)]) == 0
    out = capsys.readouterr().out
    assert f"{NOT_COMPARABLE}: {APPEND_KEY}" in out and "gate passed" in out
    assert main(["compare", str(baseline_file), str(current_folder)]) == 0
    assert "not comparable" in capsys.readouterr().out


def test_an_old_baseline_format_is_one_line(tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "runs": {}}))
    assert main(["gate", "--baseline", str(old), str(results(tmp_path, "r", three()))]) == 2
    err = capsys.readouterr().err
    assert "has format 1" in err and len(err.strip().splitlines()) == 1


def test_the_scale_axis_of_the_matrix_config():
    writers = ["pyiceberg-add-files", "pyiceberg-table"]
    # --scale alone: those writers over the default counts, append only.
    alone = MatrixConfig(writers=writers, scale_writers=["pyiceberg-txn-batches"]).resolved()
    assert (alone.batches, alone.scale_writers, axis_scenarios(alone)) == (
        [50, 100, 200],
        ["pyiceberg-txn-batches"],
        ["append"],
    )
    # --batches alone: the matrix's writers on the axis.
    axis = MatrixConfig(writers=writers, scenarios=["append", "upsert"], batches=[8, 2, 4]).resolved()
    assert (axis.batches, axis.scale_writers, axis_scenarios(axis)) == ([2, 4, 8], writers, ["append"])
    assert MatrixConfig.model_validate({"scale_batches": [2, 4]}).batches == [2, 4]  # the former name
    assert axis_scenarios(MatrixConfig(writers=writers).resolved()) == []
    with pytest.raises(IcebenchError, match="needs its whole set"):
        axis_scenarios(MatrixConfig(scenarios=["upsert"], batches=[2, 4]).resolved())
    with pytest.raises(ValueError, match="two different positive batch counts"):
        MatrixConfig(batches=[4])


def test_a_gate_that_compared_nothing_fails(tmp_path, capsys):
    """Every key's writer changed (or the baseline is of other runs): no number was held to
    anything, so the gate cannot pass."""
    old = [r.model_copy(update={"writer_source": "aaaaaaaaaaaa"}) for r in three()]
    new = [r.model_copy(update={"writer_source": "bbbbbbbbbbbb"}) for r in three()]
    baseline_file = tmp_path / "baseline.json"
    save_baseline([results(tmp_path / "results", "20260101-000000-aaaaaa", old)], baseline_file)
    current_folder = results(tmp_path / "results", "20260102-000000-bbbbbb", new)

    assert main(["gate", "--baseline", str(baseline_file), str(current_folder)]) == 1
    assert "gate compared nothing: no run key is in both" in capsys.readouterr().err


def test_scan_cost_is_summarised_compared_and_gated_above_its_floor(tmp_path):
    def scanned(full_s: float, delete_files: int, **fields) -> list:
        update = {
            "full_scan_s": full_s,
            "full_scan_delete_files": delete_files,
            "selective_scan_s": full_s / 10,
        }
        return [r.model_copy(update=update) for r in three(**fields)]

    headers, rows, _ = summary_rows(scanned(2.5, 0))
    assert "full scan s" in headers and "2.5" in rows[0]
    assert "selective scan s" not in headers  # in the report's scan table, not the summary

    def gated(base: list, now: list) -> list[tuple[str, str]]:
        return sorted(kinds(gate_of(tmp_path / str(len(list(tmp_path.iterdir()))), base, now)))

    assert gated(scanned(2.0, 0), scanned(4.0, 3)) == [
        ("scan_delete_files", "full_scan_delete_files"),
        ("scan_time", "full_scan_s"),
    ]
    # A `tiny` scan is well under a second: doubled, it is still noise, not a regression.
    assert gated(scanned(0.2, 0), scanned(0.5, 0)) == []
    # A baseline recorded before the scan existed compares nothing of it.
    assert gated(three(), scanned(4.0, 3)) == []
