"""The cap axis: a matrix under several caps says what fits in each, and --find-cap bisects the
smallest cap each pair survives; both read back from the records alone."""

import pytest
from rich.console import Console

from harness.base.caps import cgroup_parent
from harness.base.results import read_runs
from harness.cli import main as cli
from harness.cli import output
from harness.model import RunRecord, Verdict
from reports.baseline import newest_results_folder
from reports.caps import cap_figures, cap_lines
from reports.report import write_report
from reports.verdict import verdict_groups

MIB = 2**20


def _record(
    writer: str, cap_mib: int, status: str = "ok", passed: bool = True, probe: bool = False
) -> RunRecord:
    return RunRecord(
        run_id="r", scenario="append", writer=writer, preset="tiny", stack="embedded", operation="append",
        status=status, batch_rows=1000, isolation="cgroup", started_at="now", cap_bytes=cap_mib * MIB,
        verdict=Verdict(passed=passed, checks=[]) if status == "ok" else None, cap_probe=probe,
        error="OOM-killed" if status == "oom" else None,
    )  # fmt: skip


def test_a_line_per_cap_says_who_fits_who_fails_and_who_is_killed():
    records = [
        _record("a", 512), _record("b", 512, "oom"), _record("c", 512, passed=False),
        _record("a", 2048), _record("b", 2048), _record("c", 2048, passed=False),
        _record("a", 100, "oom", probe=True),  # a probe: not a cap of the matrix's
    ]  # fmt: skip
    lines = {line.cap_bytes: line for line in cap_lines(records)}
    assert sorted(lines) == [512 * MIB, 2048 * MIB]
    assert lines[512 * MIB].text == "append tiny - fits in 512.0 MiB: a; fits, table FAIL: c; OOM: b"
    assert lines[2048 * MIB].fits == ["a", "b"]
    assert cap_lines([_record("a", 512), _record("b", 512)]) == []  # one cap: the verdict says it


def test_the_smallest_cap_is_the_smallest_survived_and_bracketed_by_the_largest_failed_below():
    records = [
        _record("a", 1024), _record("a", 128, "oom", probe=True), _record("a", 362, probe=True),
        _record("a", 215, "oom", probe=True), _record("a", 279, probe=True),
        _record("a", 245, "oom", probe=True), _record("a", 262, probe=True),
        _record("b", 1024),  # b was never probed: no figure
    ]  # fmt: skip
    (figure,) = cap_figures(records)
    assert (figure.writer, figure.smallest_bytes, figure.failed_below_bytes) == ("a", 262 * MIB, 245 * MIB)
    assert figure.text == "262.0 MiB (OOM at 245.0 MiB, within 7%)"
    assert [g.cap_bytes for g in verdict_groups(records)] == [1024 * MIB]  # probes stay out of the verdict


def test_several_caps_are_a_matrix_axis_only(capsys):
    code = cli.main(["run", "--scenario", "append", "--writer", "pyiceberg-table", "--memory", "300m,1g"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "several caps are matrix's axis" in err and len(err.splitlines()) == 1


def test_a_config_files_caps_are_held_to_the_box_as_the_flags_are(capsys, tmp_path):
    config = tmp_path / "caps.toml"
    config.write_text('[matrix]\nmemory = ["100m", "6g"]\n')
    code = cli.main(["matrix", "--config", str(config), "--harness-memory", "4g", "--results", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "--memory 6g is above --harness-memory 4g" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == [config]  # refused before any work


@pytest.mark.skipif(cgroup_parent() is None, reason="the kernel OOM killer needs a cgroup memory cap")
def test_a_matrix_under_two_caps_says_what_fits_and_finds_each_writers_smallest_cap(
    cli_settings, tiny_sets, monkeypatch
):
    """The issue's command: a verdict per cap, then a figure per writer good to 10%."""
    console = Console(width=160, record=True)
    monkeypatch.setattr(output, "console", console)
    code = cli.main(
        ["matrix", "--preset", "tiny", "--memory", "300m,1g", "--scenarios", "append",
         "--writers", "pyiceberg-table,pyiceberg-add-files", "--find-cap"]
    )  # fmt: skip
    assert code == 0
    text = console.export_text()
    assert "append tiny - fits in 300.0 MiB: pyiceberg-add-files, pyiceberg-table" in text
    assert "append tiny - fits in 1.0 GiB: pyiceberg-add-files, pyiceberg-table" in text
    folder = newest_results_folder(cli_settings.results_dir)
    records = read_runs(folder)
    figures = {figure.writer: figure for figure in cap_figures(records)}
    assert sorted(figures) == ["pyiceberg-add-files", "pyiceberg-table"]
    for writer, figure in figures.items():
        assert figure.smallest_bytes and figure.failed_below_bytes, figure
        assert figure.smallest_bytes <= 1.1 * figure.failed_below_bytes  # bisected to ~10%
        assert f"{writer} {figure.text}" in text
        probes = [r for r in records if r.writer == writer and r.cap_probe]
        assert {r.cap_bytes for r in probes if r.status == "ok"} >= {figure.smallest_bytes}
    assert text.rstrip().splitlines()[-1].startswith("results: ")
    report = write_report(folder)
    assert (report.html.parent / "plots" / "caps.png").is_file()
    failed = report.markdown.read_text().split("## Failed checks")[1].split("\n## ")[0]
    assert "operation_completed" not in failed  # a probe OOM-killed by design is the caps' finding
