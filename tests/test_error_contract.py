"""Every mistake a user can make is one line naming the culprit and exit 2, never a traceback;
regressions alone exit 1 (test_gate.py)."""

import os

import pytest

from harness.base.caps import machine_memory_bytes
from harness.base.errors import IcebenchError, IcebenchWarning
from harness.base.redaction import redact
from harness.base.results import ResultsStore, read_runs
from harness.base.settings import load_settings
from harness.cli.flags import check_memory_within_box as _check_memory_within_box
from harness.cli.main import main
from harness.model import Environment, RunRecord


def one_line_error(capsys, *args: str) -> str:
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


RUN = ("run", "--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny")


@pytest.mark.parametrize(
    ("variable", "value", "culprit"),
    [
        ("ICEBENCH_BATCH_ROWS", "lots", "ICEBENCH_BATCH_ROWS"),
        ("ICEBENCH_KEEP_WAREHOUSE", "perhaps", "ICEBENCH_KEEP_WAREHOUSE"),
        ("ICEBENCH_ISOLATION", "vm", "ICEBENCH_ISOLATION"),
        ("ICEBENCH_MEMROY", "1g", "did you mean ICEBENCH_MEMORY?"),
        ("ICEBENCH_SOMETHING", "1", "unknown environment variable ICEBENCH_SOMETHING"),
    ],
)
def test_environment_mistakes(capsys, monkeypatch, variable, value, culprit):
    monkeypatch.setenv(variable, value)
    assert culprit in one_line_error(capsys, *RUN)


def test_variables_that_are_not_settings_are_accepted(monkeypatch):
    monkeypatch.setenv("ICEBENCH_REQUIRE_DOCKER", "1")
    monkeypatch.setenv("ICEBENCH_REST_PORT", "8181")
    load_settings(None)


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        ("[sttings]\nmemory = '1g'\n", "unknown table [sttings] (did you mean settings?)"),
        ("[settings]\nmemory = '1g'\n[matrx]\n", "unknown table [matrx] (did you mean matrix?)"),
        ("memory = '1g'\n", "unknown table [memory]"),
    ],
)
def test_config_tables_nobody_reads(capsys, tmp_path, text, culprit):
    config = tmp_path / "icebench.toml"
    config.write_text(text)
    assert culprit in one_line_error(capsys, *RUN, "--config", str(config))


def test_an_engine_option_out_of_its_range_in_the_config(capsys, tmp_path):
    config = tmp_path / "icebench.toml"
    config.write_text("[engines.spark]\nmaster = 'nowhere'\n")
    err = one_line_error(capsys, *RUN, "--config", str(config))
    assert "[engines.spark]: option master: Value error, not a Spark master: 'nowhere'" in err


def test_config_that_is_a_folder(capsys, tmp_path):
    assert "is a folder" in one_line_error(capsys, *RUN, "--config", str(tmp_path))


def test_results_folder_that_cannot_be_made(capsys, settings, tiny_sets, monkeypatch):
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(settings.data_dir))
    err = one_line_error(capsys, *RUN, "--results", "/proc/icebench-results")
    assert "cannot use /proc/icebench-results" in err


def test_data_folder_that_cannot_be_written(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(blocker / "data"))
    err = one_line_error(capsys, *RUN, "--results", str(tmp_path / "results"))
    assert str(blocker) in err


def a_record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id=run_id, scenario="append", writer="pyiceberg-table", preset="tiny", stack="embedded",
        operation="append", status="ok", batch_rows=1, isolation="none", started_at="now",
    )  # fmt: skip


def test_baseline_and_report_paths_that_cannot_be_written(capsys, tmp_path):
    store = ResultsStore(tmp_path / "results")
    store.write_environment(Environment())
    store.append(a_record(store.run_id))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    err = one_line_error(capsys, "baseline", "save", str(store.folder), "--out", str(blocker / "b.json"))
    assert str(blocker) in err
    (store.folder / "plots").write_text("a file where the report's plots go")
    err = one_line_error(capsys, "report", str(store.folder))
    assert str(store.folder / "plots") in err


def test_cap_above_the_machine_is_refused_unless_allowed(capsys):
    above = f"{machine_memory_bytes() // 2**30 + 8}g"
    err = one_line_error(capsys, *RUN, "--memory", above)
    assert f"memory cap {above} is more than this machine's" in err and "--allow-overcommit" in err
    err = one_line_error(capsys, *RUN, "--memory", "9999999999999999999999g")
    assert "beyond any machine" in err
    err = one_line_error(capsys, *RUN, "--harness-memory", above)
    assert f"harness memory {above}" in err


def test_overcommit_runs_and_records_the_cap_the_kernel_holds(capsys, settings, tiny_sets, tmp_path):
    above = machine_memory_bytes() + 2**30 + 123  # not a whole page: the kernel rounds it down
    os.environ["ICEBENCH_DATA_DIR"] = str(settings.data_dir)
    try:
        code = main([*RUN, "--memory", str(above), "--allow-overcommit", "--results", str(tmp_path)])
    finally:
        del os.environ["ICEBENCH_DATA_DIR"]
    assert code == 0, capsys.readouterr().err
    (record,) = read_runs(next(tmp_path.iterdir()))
    assert record.status == "ok"
    if record.isolation == "cgroup":
        assert record.cap_bytes == above // 4096 * 4096


def test_unreachable_external_catalog_is_one_line_without_its_password(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ICEBENCH_STACK", "external")
    monkeypatch.setenv("ICEBENCH_CATALOG_URI", "http://bob:hunter2@127.0.0.1:9/catalog")
    err = one_line_error(capsys, *RUN, "--results", str(tmp_path))
    assert "external catalog http://bob:***@127.0.0.1:9/catalog does not answer" in err
    assert "hunter2" not in err
    for path in tmp_path.rglob("*"):
        assert path.is_dir() or b"hunter2" not in path.read_bytes(), path


def test_redaction_of_uris_and_secret_parameters():
    text = (
        "postgresql://app:pa55@db:5432/x and https://cat/v1?token=abc&warehouse=w "
        "and https://b.s3.amazonaws.com/k?X-Amz-Signature=ff00 and s3://bucket/plain"
    )
    redacted = redact(text)
    assert "pa55" not in redacted and "abc" not in redacted and "ff00" not in redacted
    assert "postgresql://app:***@db:5432/x" in redacted and "warehouse=w" in redacted
    assert "s3://bucket/plain" in redacted


def test_results_never_hold_a_password_from_the_settings(tmp_path):
    store = ResultsStore(tmp_path)
    store.write_environment(Environment(settings={"catalog_uri": "https://u:topsecret@catalog.example/api"}))
    written = (store.folder / "environment.json").read_text()
    assert "topsecret" not in written and "https://u:***@catalog.example/api" in written


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path):
    store = ResultsStore(tmp_path)
    line = a_record(store.run_id).model_dump_json()
    store.runs_path.write_text(f"{line}\n{line}\n{line[:40]}")  # killed mid-write
    with pytest.warns(IcebenchWarning, match="line 3 was cut short"):
        assert len(read_runs(store.folder)) == 2
    store.runs_path.write_text(f"{line}\n{line[:40]}\n{line}\n")  # not at the end: corrupt
    with pytest.raises(Exception, match="corrupt: line 2"):
        read_runs(store.folder)


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (("matrix", "--writers", ""), "argument --writers: must not be empty"),
        (("matrix", "--writers", ",,"), "argument --writers: no name in ',,'"),
        (("rounds", "--rounds", "0"), "argument --rounds: Input should be greater than or equal to 2"),
        (("generate", "--preset", "tiny", "--rows", "0", "--out", "x"), "argument --rows: must be from 1"),
        (("scale", "--writer", ""), "argument --writer: must not be empty"),
        (("matrix", "--repeat", "0"), "argument --repeat: Input should be greater than or equal to 1"),
        ((*RUN, "--timeout", "1e10"), "argument --timeout: Input should be less than or equal to 604800"),
        ((*RUN, "--timeout", "inf"), "argument --timeout"),
        ((*RUN, "--timeout", "nan"), "argument --timeout"),
        ((*RUN, "--results", ""), "argument --results: must not be empty"),
        ((*RUN, "--memory", "6g", "--harness-memory", "4g"), "--memory 6g is above --harness-memory 4g"),
    ],
)
def test_zero_empty_and_out_of_range_flags_are_one_line_naming_the_flag(capsys, args, culprit):
    assert culprit in one_line_error(capsys, *args)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ICEBENCH_RESULTS_DIR", ""),
        ("ICEBENCH_WORKER_TIMEOUT_S", "inf"),
        ("ICEBENCH_BATCH_ROWS", "0"),
        ("ICEBENCH_SEED", "-1"),
        ("ICEBENCH_HARNESS_MEMORY", " "),
    ],
)
def test_the_same_ranges_hold_for_the_environment(capsys, monkeypatch, tmp_path, variable, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    assert f"invalid setting in the environment: {variable}" in one_line_error(capsys, *RUN)
    assert not list(tmp_path.iterdir())  # nothing written into the current folder


def test_a_worker_cap_above_the_box_is_taken_when_asked():
    allowed = load_settings(None, memory="300m", harness_memory="200m", allow_memory_above_box=True)
    _check_memory_within_box(allowed)
    with pytest.raises(IcebenchError, match="--memory 300m is above --harness-memory 200m"):
        _check_memory_within_box(load_settings(None, memory="300m", harness_memory="200m"))


def test_a_baseline_of_no_runs_is_refused(capsys, tmp_path):
    store = ResultsStore(tmp_path / "results")
    store.write_environment(Environment())
    store.runs_path.write_text("")
    err = one_line_error(capsys, "baseline", "save", str(store.folder), "--out", str(tmp_path / "b.json"))
    assert f"{store.runs_path} holds no runs: nothing to read" in err
    assert not (tmp_path / "b.json").exists()
