"""The rows axis (`matrix --rows`): a preset's shape at other row counts, each pair's time and
memory fitted against the rows, the writer's and the harness's own."""

import pytest

from generators.presets import PRESETS, get_preset
from harness.base.results import read_runs
from harness.base.row_counts import row_count, rows_text, split_at_rows
from harness.cli.main import main
from harness.model import RunRecord, metric
from harness.run.config import MatrixConfig
from harness.run.runner import worker_timeout
from reports.baseline import newest_results_folder
from reports.report import write_report
from reports.rows import COMMIT_S, rows_fits, rows_rows


@pytest.mark.parametrize(
    ("text", "rows"),
    [("1M", 1_000_000), ("3M", 3_000_000), ("10M", 10_000_000), ("1.5M", 1_500_000), ("300k", 300_000),
     ("2B", 2_000_000_000), ("999", 999), ("1234.567k", 1_234_567), ("12.345k", 12_345),
     ("1099511627.776k", 2**40)],
)  # fmt: skip
def test_a_row_count_reads_and_spells_back(text, rows):
    assert row_count(text) == rows
    assert rows_text(rows) == text


@pytest.mark.parametrize("text", ["3x", "1.5", "0", "M", "-1M", "0.0001k", "2000B"])
def test_what_is_no_row_count_is_refused(text):
    with pytest.raises(ValueError, match="not a row count"):
        row_count(text)


def test_a_preset_at_a_row_count_keeps_its_shape_and_rows_per_file():
    wide = PRESETS["wide"]
    at_ten = get_preset("wide-10M")
    assert (at_ten.rows, at_ten.columns, at_ten.shape, at_ten.files) == (10_000_000, 400, "wide", 100)
    assert at_ten.rows // at_ten.files == wide.rows // wide.files
    assert get_preset("wide-1M") is wide  # its own count: the preset itself, the same data and keys
    assert get_preset("tiny-1k").files == 1
    assert split_at_rows("wide-3M") == ("wide", 3_000_000) and split_at_rows("wide") is None
    with pytest.raises(ValueError, match=r"unknown preset 'wide-3x'.*wide-3M"):
        get_preset("wide-3x")


def test_the_axis_takes_each_preset_at_each_count():
    config = MatrixConfig(presets=["wide", "tiny"], rows="1M,3M", writers=["pyiceberg-add-files"]).resolved()
    assert config.presets == ["wide", "wide-3M", "tiny-1M", "tiny-3M"]
    assert MatrixConfig(presets=["tiny"], rows=[5000, "10k"]).resolved().presets == ["tiny-5k", "tiny"]
    assert config.resolved().presets == config.presets  # the commands resolve twice


@pytest.mark.usefixtures("cli_settings")
@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["matrix", "--rows", "3x"], "argument --rows: Value error, not a row count: '3x'"),
        (["run", "--preset", "tiny-3x"], "unknown preset 'tiny-3x' (did you mean tiny?)"),
        (["matrix", "--rows", "5k,10k", "--source", "."], "--source and --rows"),
    ],
)
def test_bad_rows_are_one_line(capsys, arguments, said):
    assert main(arguments) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1, err


def _point(preset: str, rows: int, write_s: float, rss: int, oracle: int, **more: object) -> RunRecord:
    return RunRecord(
        run_id=f"{preset}-{rows}", scenario="append", writer="w", preset=preset, stack="embedded",
        operation="append", rows=rows, batch_rows=10_000, isolation="cgroup", cap_bytes=2**32,
        started_at="2026-01-01T00:00:00+00:00",
        status="ok", write_s=write_s, peak_rss_bytes=rss, verify_s=write_s / 2,
        oracle_peak_rss_bytes=oracle, **more,
    )  # fmt: skip


def test_a_fit_gives_each_metric_its_exponent_in_rows():
    mib = 2**20
    points = [
        _point("wide", 1_000_000, 40.0, 600 * mib, 900 * mib),
        _point("wide-3M", 3_000_000, 120.0, 600 * mib, 900 * mib),
        _point("wide-10M", 10_000_000, 400.0, 600 * mib, 990 * mib),
        _point("wide-10M", 10_000_000, 40.0, 600 * mib, 990 * mib, limit_rows=500),  # the batch axis
        _point("wide-3M", 3_000_000, 1.0, 1, 1, phase="compact"),  # a step after the write
    ]
    [fit] = rows_fits(points)
    assert fit.key.preset == "wide" and [p.preset for p in fit.points] == ["wide", "wide-3M", "wide-10M"]
    assert fit.exponent(metric("write_s")) == pytest.approx(1.0)
    assert fit.exponent(metric("peak_rss_bytes")) == pytest.approx(0.0, abs=1e-9)
    assert fit.spread(metric("oracle_peak_rss_bytes")) == pytest.approx(1.1)
    assert rows_fits(points[:1]) == []  # one row count: nothing to fit


def test_a_fit_is_carried_to_the_projected_rows_from_its_largest_point():
    """write s n^1 from 400 s at 10M: 4,000 s at 100M; memory n^0 stays; the commits' sum is a
    metric of the axis; the table marks the projections as such."""
    points = [
        _point("wide", 1_000_000, 40.0, 600 * 2**20, 900 * 2**20, commit_latencies_s=[1.0, 1.0]),
        _point("wide-10M", 10_000_000, 400.0, 600 * 2**20, 900 * 2**20, commit_latencies_s=[20.0]),
    ]
    [fit] = rows_fits(points)
    assert fit.projected(metric("write_s"), 100_000_000) == pytest.approx(4_000.0)
    assert fit.projected(metric("peak_rss_bytes"), 1_000_000_000) == pytest.approx(600 * 2**20)
    assert fit.exponent(COMMIT_S) == pytest.approx(1.0)
    _, rows, _ = rows_rows(fit)
    assert [row[:2] for row in rows[-2:]] == [["100,000,000", "projected"], ["1,000,000,000", "projected"]]


def test_a_failed_point_is_shown_but_not_fitted():
    points = [
        _point("tiny-5k", 5_000, 1.0, 2**20, 2**20),
        _point("tiny", 10_000, 2.0, 2**20, 2**20).model_copy(update={"status": "oom"}),
    ]
    [fit] = rows_fits(points)
    assert len(fit.points) == 2 and fit.exponent(metric("write_s")) is None


@pytest.mark.usefixtures("cli_settings")
def test_matrix_on_the_rows_axis_fits_and_plots_each_pair(capsys, settings):
    code = main(
        ["matrix", "--preset", "tiny", "--rows", "5k,10k,20k", "--scenarios", "append",
         "--writers", "pyiceberg-add-files", "--memory", "1g", "--report"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "rows pyiceberg-add-files / append / tiny shape" in out and "exponent" in out
    folder = newest_results_folder(settings.results_dir)
    runs = read_runs(folder)
    assert [(r.preset, r.rows, r.status, r.verdict.passed) for r in runs] == [
        ("tiny-5k", 5_000, "ok", True),
        ("tiny", 10_000, "ok", True),
        ("tiny-20k", 20_000, "ok", True),
    ]
    [fit] = rows_fits(runs)
    assert fit.exponent(metric("write_s")) is not None and fit.exponent(metric("peak_rss_bytes")) is not None
    assert (folder / "plots" / "rows.png").stat().st_size > 10_000
    page = write_report(folder).markdown.read_text()
    assert "Rows axis: the points of each fit" in page and "tiny-20k" in page


@pytest.mark.usefixtures("cli_settings")
def test_a_point_the_disk_cannot_hold_stops_the_axis_before_it_is_generated(capsys, settings):
    """1B rows of tiny's shape need ~170 GB for the set alone (10k rows took 1.7 MB): the matrix
    stops before making it, with one line of what it needs (scaled from the point before, the
    largest table's writer named) and the point before kept, reported."""
    code = main(
        ["matrix", "--preset", "tiny", "--rows", "10k,1B", "--scenarios", "append",
         "--writers", "pyiceberg-add-files", "--memory", "1g", "--report"]
    )  # fmt: skip
    assert code == 2
    captured = capsys.readouterr()
    [error] = [line for line in captured.err.splitlines() if line.startswith("icebench: error:")]
    assert error.startswith("icebench: error: rows point tiny-1B needs about "), error
    assert "for its base set + " in error and "for pyiceberg-add-files's table, scaled from tiny)" in error
    assert "free: free space, or leave the point out of --rows" in error
    folder = newest_results_folder(settings.results_dir)
    assert [(r.preset, r.status) for r in read_runs(folder)] == [("tiny", "ok")]
    assert (folder / "report.md").exists() and not list(settings.data_dir.glob("tiny-1B-*"))


def test_a_workers_time_limit_grows_with_its_rows():
    """Per million rows fed, never less than the setting: 10M rows of Spark get ten times 30 min."""
    assert worker_timeout(1800, 10_000) == 1800 and worker_timeout(1800, 1_000_000) == 1800
    assert worker_timeout(1800, 3_000_000) == 5400 and worker_timeout(0.5, 10_000_000) == 5.0
