"""`icebench report`: the HTML page with its plots embedded, the Markdown beside it, and the
memray flame graph a profiled run links."""

import json
from pathlib import Path

import pytest

from harness.base.results import read_runs
from harness.cli.main import main
from reports.baseline import build_baseline, newest_results_folder

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


pytestmark = pytest.mark.usefixtures("cli_settings")


def test_matrix_with_repeats_and_scale_ends_with_a_report(capsys, settings, tiny_sets, tmp_path):
    config = tmp_path / "bench.toml"
    config.write_text("[matrix]\nscale_batches = [2, 4, 8]\n")
    code = main(
        [
            "matrix", "--config", str(config), "--preset", "tiny", "--scenarios", "append",
            "--writers", "pyiceberg-add-files,pyiceberg-fast-append-naive", "--repeat", "2",
            "--scale", "pyiceberg-txn-batches,pyiceberg-add-files", "--memory", "1g", "--report",
            "--batch-rows", "2000",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    folder = newest_results_folder(settings.results_dir)
    assert f"report: {folder / 'report.html'}" in out
    runs = read_runs(folder)
    matrix_runs = [r for r in runs if r.limit_rows is None]
    assert sorted((r.writer, r.repeat) for r in matrix_runs) == [
        ("pyiceberg-add-files", 0), ("pyiceberg-add-files", 1),
        ("pyiceberg-fast-append-naive", 0), ("pyiceberg-fast-append-naive", 1),
    ]  # fmt: skip
    prefixes = sorted(r.limit_rows for r in runs if r.limit_rows)
    assert prefixes == [1000, 1000, 2000, 2000, 4000, 4000]  # batches of 500 rows

    page = (folder / "report.html").read_text()
    names = ["verdict", "latency", "scale", "peak-memory", "memory-timeline", "metrics", "scan-cost"]
    assert page.count("data:image/png;base64,") == len(names)
    for name in names:
        assert (folder / "plots" / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
    # The trap's failed checks, each with its reason, in both pages.
    markdown = (folder / "report.md").read_text()
    for text in (page, markdown):
        assert "pyiceberg-fast-append-naive" in text and "keys_unique" in text and "keys repeated" in text
    assert "![Total write time against batch count](plots/scale.png)" in markdown
    # The verdict first: the repeated pair that passed ranked, the trap apart with its failed check.
    verdict = markdown.index("## Verdict: which writer to use")
    assert verdict < markdown.index("![Write time against peak memory") < markdown.index("## Runs")
    assert "| 1 | pyiceberg-add-files (2 runs) | pass |" in markdown
    assert "| - | pyiceberg-fast-append-naive | FAIL |" in markdown
    assert "## Downstream scan cost (one fixed reader)" in markdown and "selective scan s" in markdown

    baseline = build_baseline([folder])
    setup = f"{runs[0].isolation} 1g"
    assert baseline.runs[f"append|pyiceberg-add-files|tiny|embedded|{setup}|2000 rows/batch"].repeats == 2
    assert set(baseline.scales) == {  # points apart
        f"append|pyiceberg-txn-batches|tiny|embedded|{setup}|500 rows/batch",
        f"append|pyiceberg-add-files|tiny|embedded|{setup}|500 rows/batch",
    }
    assert main(["report"]) == 0  # the newest results folder by default
    assert str(folder / "report.html") in capsys.readouterr().out


def test_profiled_run_links_its_flame_graph(capsys, settings, tiny_sets):
    code = main(
        ["run", "--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny",
         "--memory", "1g", "--profile", "memray"]
    )  # fmt: skip
    assert code == 0
    folder = newest_results_folder(settings.results_dir)
    (record,) = read_runs(folder)
    assert record.status == "ok" and record.verdict.passed
    flamegraph = record.profile_flamegraph
    assert flamegraph and flamegraph.endswith("memray-flamegraph.html")
    assert "pyiceberg" in Path(flamegraph).read_text()  # the writer's frames are in the profile
    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    assert 'href="work/001-append-pyiceberg-table/memray-flamegraph.html"' in page


def test_report_of_a_folder_without_runs_is_one_line(capsys, tmp_path):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(tmp_path) in err and len(err.splitlines()) == 1


def test_report_reads_json_lines_only(tmp_path, capsys):
    (tmp_path / "runs.jsonl").write_text(json.dumps({"bad": 1}) + "\n")
    assert main(["report", str(tmp_path)]) == 2
    assert "runs.jsonl" in capsys.readouterr().err


def test_writers_that_did_not_run_are_listed_with_their_reason(capsys, settings, tiny_sets):
    """DuckDB cannot write on the embedded stack (REST catalogs only): the report and the Markdown
    summary say why, once per writer, with the scenarios it was given."""
    code = main(
        ["matrix", "--preset", "tiny", "--scenarios", "append,upsert", "--writers", "duckdb",
         "--memory", "1g", "--report"]
    )  # fmt: skip
    assert code == 0
    folder = newest_results_folder(settings.results_dir)
    row = "| duckdb | append, upsert | duckdb does not support this catalog: DuckDB's iceberg extension"
    assert "## Not run (unsupported)" in (folder / "report.md").read_text()
    assert row in (folder / "report.md").read_text()
    capsys.readouterr()
    assert main(["summary", str(folder), "--markdown"]) == 0
    assert row in capsys.readouterr().out


def test_the_newest_of_two_runs_begun_in_one_second_is_the_one_written_last(tmp_path):
    """Run ids are stamped to the second; their random tails must not decide which is newest."""
    import os

    later, earlier = tmp_path / "20261126-083818-000000", tmp_path / "20261126-083818-ffffff"
    for age, folder in enumerate([later, earlier]):
        folder.mkdir()
        (folder / "runs.jsonl").write_text("")
        os.utime(folder / "runs.jsonl", ns=(10**18 - age, 10**18 - age))
    assert newest_results_folder(tmp_path) == later
