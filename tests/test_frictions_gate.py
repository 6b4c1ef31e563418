"""A gate that passes says what it held: the keys and runs compared against which baseline, each
threshold in use with the figure closest to it, and the closest margin of all. Synthetic results
(nothing is run or timed)."""

from pathlib import Path

from harness.base.results import ResultsStore
from harness.model import Check, RunRecord, Verdict
from reports.baseline import build_baseline
from reports.compare import compare
from reports.gate import GateThresholds, passed_text, regressions, threshold_defaults

MIB = 2**20
APPEND_KEY = "append|pyiceberg-table|tiny|embedded|cgroup 1g|2000 rows/batch"
FIT_KEY = "append|pyiceberg-txn-batches|tiny|embedded|cgroup 1g|50 rows/batch"


def run(writer: str = "pyiceberg-table", wall_s: float = 10.0, peak_mib: int = 500, **fields) -> RunRecord:
    return RunRecord(**{
        "run_id": "synthetic", "scenario": "append", "writer": writer, "preset": "tiny",
        "stack": "embedded", "operation": "append", "status": "ok", "rows": 10_000, "batch_rows": 2_000,
        "batches": 5, "wall_s": wall_s, "write_s": wall_s * 0.8, "peak_memory_bytes": peak_mib * MIB,
        "peak_rss_bytes": peak_mib * MIB // 2, "manifests": 2, "orphan_files": 0, "full_scan_s": 0.2,
        "full_scan_delete_files": 0, "isolation": "cgroup", "cap_bytes": 2**30,
        "verdict": Verdict(passed=True, checks=[Check(name="row_count", passed=True)]),
        "started_at": "2026-01-01T00:00:00+00:00", **fields,
    })  # fmt: skip


def scale_points(exponent: float) -> list[RunRecord]:
    return [
        run("pyiceberg-txn-batches", write_s=0.1 * n**exponent, batch_rows=50, rows=n * 50, limit_rows=n * 50)
        for n in (50, 100, 200)
    ]


def folder(root: Path, name: str, records: list[RunRecord]) -> Path:
    store = ResultsStore(root, run_id=name)
    for record in records:
        store.append(record)
    return store.folder


def rows_of(tmp_path: Path, base: list[RunRecord], current: list[RunRecord]):
    return compare(
        build_baseline([folder(tmp_path, "base", base)]), build_baseline([folder(tmp_path, "cur", current)])
    )


def test_a_pass_names_what_it_compared_each_threshold_and_the_closest_margin(tmp_path):
    base = [run(repeat=i) for i in range(3)] + scale_points(1.0)
    current = [run(wall_s=13.0, peak_mib=520, repeat=i) for i in range(3)] + scale_points(1.1)
    current.append(run("pyiceberg-reader"))  # a new key: never gated, counted apart
    rows = rows_of(tmp_path, base, current)
    thresholds = GateThresholds.model_validate({"wall_time_ratio": 2.0})
    assert regressions(rows, thresholds) == []

    lines = passed_text(rows, thresholds, "cur against ci-tiny.json").splitlines()
    assert lines[0] == "gate passed: cur against ci-tiny.json, no regressions"
    assert lines[1].startswith("  compared 1 run key (3 runs now, 3 in the baseline) and 1 scale fit: ")
    # Peak memory, wall time, manifests, orphans, delete files; the growth exponent; the scan floored.
    assert "6 gated figures (1 more under their floors, not gated)" in lines[1]
    assert lines[2] == (
        "  not gated: 1 key only in the results (new keys and changed writers never fail the gate)"
    )
    text = "\n".join(lines)
    for name in threshold_defaults():  # every threshold in use is named, floors too
        assert name in text, name
    wall = next(line for line in lines if line.lstrip().startswith("wall_time_ratio"))
    assert "wall_time_ratio 2.00x (default 1.50x), floor min_wall_s 1 s" in wall
    assert wall.endswith(f"closest 1.30x (1 figure) at {APPEND_KEY}")
    scan = next(line for line in lines if line.lstrip().startswith("scan_time_ratio"))
    assert scan.endswith("no figure gated, 1 under the floor")  # tiny's 0.2 s scans
    growth = next(line for line in lines if line.lstrip().startswith("growth_exponent_delta"))
    assert growth.endswith(f"closest +0.10 (1 figure) at {FIT_KEY}")
    manifests = next(line for line in lines if line.lstrip().startswith("manifests_delta"))
    assert "manifests_delta +0 " in manifests and "closest +0 (1 figure)" in manifests
    # log 1.3 / log 2 of the wall time's room against log 1.04 / log 1.25 of memory's, 0.1 / 0.3 of growth's.
    assert lines[-1] == (
        f"  closest margin: wall_time_ratio 1.30x of 2.00x allowed (38% of its room) at {APPEND_KEY}"
    )


def test_a_pass_with_nothing_but_improvements_has_no_margin_used(tmp_path):
    rows = rows_of(tmp_path, [run(wall_s=10.0)], [run(wall_s=5.0, peak_mib=400)])
    text = passed_text(rows, GateThresholds(), "cur against base.json")
    assert text.splitlines()[-1].endswith("allowed (0% of its room) at " + APPEND_KEY)
    assert "(default" not in text  # every threshold at its default
