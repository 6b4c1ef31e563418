"""Baselines, comparisons and the regression gate on synthetic results (nothing is run or timed)."""

from pathlib import Path

import pytest

from harness.base.errors import IcebenchError, IcebenchWarning
from harness.base.results import ResultsStore, read_calibration
from harness.cli.main import main
from harness.model import Check, MachineSpeed, RunRecord, Verdict
from reports.baseline import build_baseline, load_baseline, save_baseline
from reports.compare import compare, comparison_markdown
from reports.gate import GateThresholds, gate, load_thresholds, regressions_markdown

MIB = 2**20
CHECKS = ("row_count", "keys_unique", "content_checksum")
APPEND_KEY = "append|pyiceberg-table|tiny|embedded|cgroup 1g|2000 rows/batch"
UPSERT_KEY = "upsert|pyiceberg-txn-batches|tiny|embedded|cgroup 1g|2000 rows/batch"
SCALE_KEY = "append|pyiceberg-txn-batches|tiny|embedded|cgroup 1g|50 rows/batch"


def run(
    scenario="append",
    writer="pyiceberg-table",
    *,
    status="ok",
    wall_s=10.0,
    cpu_s=None,
    write_s=None,
    peak_mib=500,
    failing=(),
    repeat=0,
    batch_rows=2000,
    rows=10_000,
    limit_rows=None,
) -> RunRecord:
    checks = [
        Check(name=name, passed=name not in failing, reason="wrong" if name in failing else None)
        for name in CHECKS
    ]
    return RunRecord(
        run_id="synthetic",
        scenario=scenario,
        writer=writer,
        preset="tiny",
        stack="embedded",
        operation=scenario,
        status=status,
        rows=rows,
        batch_rows=batch_rows,
        batches=rows // batch_rows,
        wall_s=wall_s,
        cpu_s=cpu_s,
        write_s=wall_s * 0.8 if write_s is None else write_s,
        peak_memory_bytes=peak_mib * MIB,
        peak_rss_bytes=peak_mib * MIB // 2,
        snapshots_added=1,
        data_files=5,
        metadata_files=1,
        metadata_bytes=20_000,
        isolation="cgroup",
        cap_bytes=2**30,
        versions={"pyiceberg": "0.12.0", "pyarrow": "26.0.1"},
        verdict=Verdict(passed=not failing, checks=checks),
        started_at="2026-01-01T00:00:00+00:00",
        repeat=repeat,
        limit_rows=limit_rows,  # scale points only
    )


def scale(exponent: float, unit_s: float = 0.01) -> list[RunRecord]:
    """The points of a scale axis whose write times grow as batches**exponent."""
    return [
        run(
            writer="pyiceberg-txn-batches",
            write_s=unit_s * n**exponent,
            batch_rows=50,
            rows=n * 50,
            limit_rows=n * 50,
        )
        for n in (50, 100)
    ]


def results(root: Path, name: str, runs=(), scales=(), calibration=()) -> Path:
    store = ResultsStore(root, run_id=name)
    for record in [*runs, *(point for points in scales for point in points)]:
        store.append(record)
    for cpu_s, wall_s in calibration:
        store.append_calibration(MachineSpeed(cpu_s=cpu_s, wall_s=wall_s))
    return store.folder


def three(**fields) -> list[RunRecord]:
    return [run(repeat=i, **fields) for i in range(3)]


def gate_of(tmp_path, base_runs, current_runs, thresholds=None):
    base = build_baseline([results(tmp_path, "base", base_runs)])
    current = build_baseline([results(tmp_path, "current", current_runs)])
    return gate(base, current, thresholds)


def kinds(regressions) -> list[tuple[str, str]]:
    return [(r.kind, r.subject) for r in regressions]


def test_equal_results_pass_and_the_baseline_survives_a_round_trip(tmp_path):
    runs = three() + three(scenario="upsert", writer="pyiceberg-txn-batches")
    # Matrix and scale sessions write folders of their own; a baseline gathers several.
    base_folders = [results(tmp_path, "base", runs), results(tmp_path, "base-scale", scales=[scale(1.0)])]
    current_folders = [results(tmp_path, "cur", runs), results(tmp_path, "cur-scale", scales=[scale(1.0)])]
    saved = save_baseline(base_folders, tmp_path / "baseline.json")
    loaded = load_baseline(tmp_path / "baseline.json")
    assert loaded == saved
    assert set(loaded.runs) == {APPEND_KEY, UPSERT_KEY}
    assert set(loaded.scales) == {SCALE_KEY}
    aggregate = loaded.runs[APPEND_KEY]
    assert aggregate.repeats == 3 and aggregate.statuses == ["ok"] * 3
    assert aggregate.checks_passed == sorted(CHECKS) and aggregate.checks_failed == {}
    assert loaded.versions == {"pyarrow": "26.0.1", "pyiceberg": "0.12.0"}
    assert gate(loaded, build_baseline(current_folders)) == []


def test_a_check_that_passed_and_now_fails_regresses(tmp_path):
    regressions = gate_of(tmp_path, three(), three(failing=("content_checksum",)))
    assert kinds(regressions) == [("check_regressed", "content_checksum")]
    assert regressions[0].key == APPEND_KEY and regressions[0].detail == "wrong"


def test_a_check_failing_in_one_repeat_of_three_regresses(tmp_path):
    # Correctness is not noisy: one failed repeat is a failure.
    current = [*three()[:2], run(repeat=2, failing=("row_count",))]
    assert kinds(gate_of(tmp_path, three(), current)) == [("check_regressed", "row_count")]


@pytest.mark.parametrize("status", ["oom", "error"])
def test_an_ok_run_that_now_fails_regresses(tmp_path, status):
    # A killed run stops early: its time and memory are no comparison, only its status is.
    current = three(status=status, wall_s=2.0, peak_mib=2048)
    regressions = gate_of(tmp_path, three(), current)
    assert kinds(regressions) == [("status_regressed", "status")]
    assert (regressions[0].base, regressions[0].current) == ("ok", status)


def test_a_failed_write_leaving_more_garbage_regresses_like_orphans_after_success(tmp_path):
    """OOM-killed in the baseline and now: the files it left no metadata reaches are its orphans,
    gated as a success's are (orphan_files_delta 0); the same garbage passes."""

    def killed(files: int) -> list[RunRecord]:
        runs = three(status="oom")
        return [r.model_copy(update={"orphan_files": files, "orphan_bytes": files * MIB}) for r in runs]

    regressions = gate_of(tmp_path, killed(0), killed(4))
    assert kinds(regressions) == [("orphan_files", "orphan_files")]
    assert (regressions[0].base, regressions[0].current) == (0, 4)
    assert gate_of(tmp_path / "same", killed(4), killed(4)) == []


def test_peak_memory_beyond_the_ratio_regresses(tmp_path):
    regressions = gate_of(tmp_path, three(peak_mib=500), three(peak_mib=700))
    assert kinds(regressions) == [("peak_memory", "peak_rss_bytes")]
    assert regressions[0].change == pytest.approx(1.4)
    assert regressions[0].threshold == 1.25
    assert gate_of(tmp_path / "within", three(peak_mib=500), three(peak_mib=600)) == []


def test_peak_memory_is_the_worst_repeat(tmp_path):
    current = [*three()[:2], run(repeat=2, peak_mib=800)]
    assert kinds(gate_of(tmp_path, three(), current)) == [("peak_memory", "peak_rss_bytes")]


def test_median_wall_time_beyond_the_ratio_regresses(tmp_path):
    regressions = gate_of(tmp_path, three(wall_s=10.0), three(wall_s=16.0))
    assert kinds(regressions) == [("wall_time", "wall_s")]
    assert regressions[0].change == pytest.approx(1.6)


def test_one_slow_repeat_of_three_does_not_regress_because_the_median_is_used(tmp_path):
    noisy = [run(repeat=0, wall_s=10.0), run(repeat=1, wall_s=40.0), run(repeat=2, wall_s=11.0)]
    assert gate_of(tmp_path, three(wall_s=10.0), noisy) == []
    base = build_baseline([tmp_path / "base"])
    assert base.runs[APPEND_KEY].wall_s == 10.0


def test_sub_second_wall_times_are_noise(tmp_path):
    assert gate_of(tmp_path, three(wall_s=0.2), three(wall_s=0.6)) == []
    fast_to_slow = gate_of(tmp_path / "slow", three(wall_s=0.5), three(wall_s=5.0))
    assert kinds(fast_to_slow) == [("wall_time", "wall_s")]


def test_cpu_time_is_gated_where_load_moved_only_the_wall_time(tmp_path):
    """CI's thresholds: other work on the machine made the wall time 2.6x while the CPU time held
    (seen in a CI run); compute that grew past 1.5x fails whatever the wall time did."""
    ci = GateThresholds(wall_time_ratio=4.0, cpu_time_ratio=1.5)
    loaded = gate_of(tmp_path, three(wall_s=1.6, cpu_s=2.0), three(wall_s=4.2, cpu_s=2.1), ci)
    assert loaded == []
    slower = gate_of(tmp_path / "slower", three(wall_s=1.6, cpu_s=2.0), three(wall_s=1.7, cpu_s=3.4), ci)
    assert kinds(slower) == [("cpu_time", "cpu_s")]
    assert slower[0].change == pytest.approx(1.7)
    # A side without CPU accounting (rlimit, none) leaves it ungated; its wall time still is.
    unaccounted = gate_of(tmp_path / "rlimit", three(wall_s=1.6), three(wall_s=1.7, cpu_s=3.4), ci)
    assert unaccounted == []


def calibrated_gate(tmp_path, base_runs, base_machine, current_runs, current_machine):
    """The gate of runs beside calibration samples (cpu_s, wall_s) on each side."""
    base = build_baseline([results(tmp_path, "base", base_runs, calibration=base_machine)])
    current = build_baseline([results(tmp_path, "current", current_runs, calibration=current_machine)])
    return gate(base, current, GateThresholds(wall_time_ratio=1.5, cpu_time_ratio=1.5))


def test_a_slower_machine_is_not_a_regression_and_the_code_on_it_still_is(tmp_path, capsys):
    """The last CI that failed: every pyiceberg writer's CPU time 1.5-1.66x the baseline's on a
    busier machine, the code unchanged. The calibration, timed beside the runs, took as much longer."""
    base_machine = [(0.33, 0.34), (0.35, 0.35), (0.34, 0.36)]
    busy_machine = [(0.52, 0.55), (0.55, 0.57), (0.53, 0.56)]  # median 1.56x cpu, 1.60x wall
    base = three(wall_s=2.0, cpu_s=1.66)
    assert (
        calibrated_gate(tmp_path / "busy", base, base_machine, three(wall_s=3.1, cpu_s=2.53), busy_machine)
        == []
    )
    # compare shows the ratios as measured, and the machine's beside them.
    assert main(["compare", str(tmp_path / "busy" / "base"), str(tmp_path / "busy" / "current")]) == 0
    assert "machine 1.56x cpu, 1.60x wall" in capsys.readouterr().out
    # The same machine, the code 1.6x slower: a regression, its measured ratio in the detail.
    slower = calibrated_gate(
        tmp_path / "slower", base, base_machine, three(wall_s=3.2, cpu_s=2.66), base_machine
    )
    assert kinds(slower) == [("wall_time", "wall_s"), ("cpu_time", "cpu_s")]
    assert (
        slower[1].change == pytest.approx(2.66 / 1.66)
        and slower[1].detail == "1.60x as measured, the machine's 1.00x taken out"
    )
    # A faster machine does not hide code that got slower: 1.2x as measured where the machine ran
    # the calibration at 1/0.7 the speed is 1.7x the code's own.
    fast_machine = [(cpu * 0.7, wall * 0.7) for cpu, wall in base_machine]
    hidden = calibrated_gate(
        tmp_path / "fast", base, base_machine, three(wall_s=2.0, cpu_s=2.0), fast_machine
    )
    assert kinds(hidden) == [("cpu_time", "cpu_s")]
    assert hidden[0].change == pytest.approx(2.0 / 1.66 / 0.7)


def test_without_a_calibration_on_one_side_times_are_compared_as_measured(tmp_path, capsys):
    """A baseline made before the calibration existed: nothing to divide by, and the gate says so."""
    base = build_baseline([results(tmp_path, "base", three(cpu_s=1.66))])
    assert base.machine is None
    current = build_baseline([results(tmp_path, "current", three(cpu_s=2.53), calibration=[(0.52, 0.55)])])
    assert current.machine == MachineSpeed(cpu_s=0.52, wall_s=0.55)
    assert kinds(gate(base, current)) == [("cpu_time", "cpu_s")]
    save_baseline([tmp_path / "base"], tmp_path / "old.json")
    assert main(["gate", "--baseline", str(tmp_path / "old.json"), str(tmp_path / "current")]) == 1
    assert "machine: no calibration on one side" in capsys.readouterr().out


def test_growth_exponent_beyond_the_delta_regresses(tmp_path):
    base = build_baseline([results(tmp_path, "base", scales=[scale(1.0)])])
    slightly = build_baseline([results(tmp_path, "slightly", scales=[scale(1.2)])])
    quadratic = build_baseline([results(tmp_path, "quadratic", scales=[scale(1.9)])])
    assert gate(base, slightly) == []
    regressions = gate(base, quadratic)
    assert kinds(regressions) == [("growth_exponent", "growth_exponent")]
    assert regressions[0].key == SCALE_KEY and regressions[0].change == pytest.approx(0.9)


def test_growth_of_sub_second_fits_is_not_gated(tmp_path):
    """Totals under min_scale_write_s are start-up noise: their exponent may wander."""
    base = build_baseline([results(tmp_path, "fast-base", scales=[scale(0.8, unit_s=0.001)])])
    wandered = build_baseline([results(tmp_path, "fast-now", scales=[scale(1.2, unit_s=0.001)])])
    assert wandered.scales[SCALE_KEY].longest_write_s < 2.0
    assert gate(base, wandered) == []


def test_a_vanished_key_regresses_and_a_new_one_does_not(tmp_path):
    base_runs = three() + three(scenario="upsert", writer="pyiceberg-txn-batches")
    current_runs = three() + three(scenario="replace")
    assert [(r.kind, r.key) for r in gate_of(tmp_path, base_runs, current_runs)] == [("missing", UPSERT_KEY)]


def test_improvements_do_not_regress(tmp_path):
    base = three(wall_s=20.0, peak_mib=900, failing=("row_count",))
    assert gate_of(tmp_path, base, three(wall_s=5.0, peak_mib=300)) == []
    rows = compare(build_baseline([tmp_path / "base"]), build_baseline([tmp_path / "current"]))
    assert rows[0].checks_now_passing == ["row_count"]


def test_thresholds_come_from_the_gate_table_of_a_config_file(tmp_path):
    config = tmp_path / "icebench.toml"
    config.write_text("[settings]\nmemory = '1g'\n\n[gate]\npeak_memory_ratio = 1.1\nmin_wall_s = 0.1\n")
    thresholds = load_thresholds(config)
    assert thresholds == GateThresholds(peak_memory_ratio=1.1, min_wall_s=0.1)
    assert thresholds.wall_time_ratio == 1.5 and thresholds.growth_exponent_delta == 0.3
    assert load_thresholds(None) == GateThresholds()
    regressions = gate_of(
        tmp_path, three(peak_mib=500, wall_s=0.2), three(peak_mib=600, wall_s=0.6), thresholds
    )
    assert kinds(regressions) == [("peak_memory", "peak_rss_bytes"), ("wall_time", "wall_s")]
    config.write_text("[gate]\npeak_memory_ratios = 1.1\n")
    with pytest.raises(IcebenchError, match="invalid \\[gate\\] table: peak_memory_ratios"):
        load_thresholds(config)


def test_a_missing_or_corrupt_baseline_is_one_line_naming_the_file(tmp_path):
    with pytest.raises(IcebenchError, match=r"baseline file .*nothing\.json does not exist"):
        load_baseline(tmp_path / "nothing.json")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    with pytest.raises(IcebenchError, match=r"baseline file .*corrupt\.json is not a baseline") as raised:
        load_baseline(corrupt)
    assert "\n" not in str(raised.value)


def test_the_runs_of_a_scale_fit_are_its_points_not_repeats(tmp_path):
    # `matrix --scale` leaves the matrix runs and the scale points (50-row batches) in one folder.
    writer = "pyiceberg-txn-batches"
    folder = results(tmp_path, "matrix", three(writer=writer, wall_s=10.0), [scale(1.0)])
    baseline = build_baseline([folder])
    aggregate = baseline.runs[f"append|{writer}|tiny|embedded|cgroup 1g|2000 rows/batch"]
    assert aggregate.repeats == 3 and aggregate.wall_s == 10.0
    assert baseline.scales[SCALE_KEY].growth_exponent == pytest.approx(1.0)  # fitted from the points now


def test_markdown_renderers_escape_run_keys(tmp_path):
    regressions = gate_of(tmp_path, three(), three(status="oom"))
    markdown = regressions_markdown(regressions)
    assert "append\\|pyiceberg-table\\|tiny\\|embedded" in markdown and "status_regressed" in markdown
    rows = compare(build_baseline([tmp_path / "base"]), build_baseline([tmp_path / "current"]))
    assert "| append | pyiceberg-table | tiny | embedded | ok → oom |" in comparison_markdown(rows)


def test_cli_baseline_gate_and_compare(tmp_path, capsys):
    base_folder = results(tmp_path / "results", "20260101-000000-aaaaaa", three())
    baseline_file = tmp_path / "baseline.json"
    assert main(["baseline", "save", str(base_folder), "--out", str(baseline_file)]) == 0
    assert "1 run keys" in capsys.readouterr().out

    same = results(tmp_path / "results", "20260102-000000-bbbbbb", three())
    assert main(["gate", "--baseline", str(baseline_file), str(same)]) == 0
    assert "gate passed" in capsys.readouterr().out

    slower = results(tmp_path / "results", "20260103-000000-cccccc", three(wall_s=16.0, peak_mib=700))
    # No RESULTS_DIR: the newest folder under the results root, which is `slower`.
    assert main(["gate", "--baseline", str(baseline_file), "--results", str(tmp_path / "results")]) == 1
    captured = capsys.readouterr()
    assert "wall_time" in captured.out and "peak_memory" in captured.out and "1.60x" in captured.out
    assert captured.err.strip() == (
        f"icebench: error: gate failed: 2 regressions, {slower} against {baseline_file}"
    )

    config = tmp_path / "gate.toml"
    config.write_text("[gate]\nwall_time_ratio = 2.0\npeak_memory_ratio = 1.5\n")
    assert main(["gate", "--baseline", str(baseline_file), "--config", str(config), str(slower)]) == 0
    capsys.readouterr()

    assert main(["compare", str(baseline_file), str(slower)]) == 0
    out = capsys.readouterr().out
    assert "1.60x" in out and "1.40x" in out

    missing = tmp_path / "missing.json"
    assert main(["gate", "--baseline", str(missing), str(same)]) == 2
    err = capsys.readouterr().err
    assert err == f"icebench: error: baseline file {missing} does not exist\n"
    assert main(["gate", "--baseline", str(baseline_file), str(tmp_path / "nowhere")]) == 2
    assert "nowhere does not exist" in capsys.readouterr().err


def test_compare_of_folders_with_nothing_in_common_says_so_and_why(tmp_path, capsys):
    base = results(tmp_path, "base", three())
    other = results(tmp_path, "other", [run(writer="pyiceberg-txn-batches", batch_rows=500)])
    assert main(["compare", str(base), str(other)]) == 0
    err = capsys.readouterr().err
    assert err.strip() == (
        "icebench: warning: nothing in common to compare (1 keys only in base, 1 only in current): "
        "writer pyiceberg-table vs pyiceberg-txn-batches; batch_rows 2000 vs 500"
    )
    assert main(["compare", str(base), str(results(tmp_path, "same", three()))]) == 0
    assert "nothing in common" not in capsys.readouterr().err


def test_a_calibration_that_cannot_run_is_said_and_the_matrix_goes_on(tmp_path, monkeypatch):
    """No sample then: the gate compares those results' times as measured, and says so."""
    from harness.run import matrix
    from harness.services import calibration

    assert calibration.measure().cpu_s > 0
    monkeypatch.setattr(calibration.sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(IcebenchError, match=r"^the machine's calibration workload failed: "):
        calibration.measure()
    store = ResultsStore(tmp_path, run_id="uncalibrated")
    with pytest.warns(IcebenchWarning, match="the gate will compare these results' times unadjusted"):
        matrix._calibrate(store)
    assert read_calibration(store.folder) == []
