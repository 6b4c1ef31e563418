"""Every value-taking flag and argument of every command, read from the parser itself (a new flag
is covered without a word here), driven with bad values: exit 2, one line on stderr naming the
flag or the value, no traceback, no traceback file. In process, and stopped before any real work:
a value that got that far was accepted."""

import argparse
import functools
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_error_contract import a_record

import harness.cli.main as cli
import reports.baseline as baseline
import reports.screenshot as screenshot
from generators import changes, wide
from harness.base.results import ResultsStore
from harness.cli import session
from harness.cli.flags import VERSIONED_LIBRARIES
from harness.engines import spark_generate
from harness.model import Environment
from harness.services import cleanup
from reports.gate import threshold_defaults

HUGE = "9" * 40
MISSING = "/nonexistent/icebench-fuzz"
BAD_VALUES = ["", "0", "-1", "nan", "inf", "1e30", "abc", "☃", MISSING, HUGE]

CREATES = "any path is a file or folder this command creates (an unwritable one: test_error_contract.py)"
VERSION = "a well-formed version; whether it exists is pip's to say"
RUNNING = ("run", "matrix", "scale", "rounds")
# (command, flag) -> the values of BAD_VALUES it legitimately takes, and why.
VALID: dict[tuple[str, str], dict[str, str]] = {
    ("generate", "--seed"): {"0": "seed 0 is a seed"},
    ("generate", "--first-key"): {"0": "keys start at 0 by default"},
    ("generate", "--out"): dict.fromkeys(BAD_VALUES[1:], CREATES),
    ("baseline save", "--out"): dict.fromkeys(BAD_VALUES[1:], CREATES),
    ("report", "--screenshot"): dict.fromkeys(BAD_VALUES[1:], CREATES),
    **{(command, "--results"): dict.fromkeys(BAD_VALUES[1:], CREATES) for command in RUNNING},
    **{(command, "--update-ratio"): {"0": "a derived change set of inserts only"} for command in RUNNING},
    **{(command, "--insert-ratio"): {"0": "a derived change set of updates only"} for command in RUNNING},
    **{(command, "--reads"): {"0": "a table nobody reads: its write alone"} for command in RUNNING},
    **{
        (command, f"--{library}"): {"0": VERSION, HUGE: VERSION}
        for command in RUNNING
        for library in VERSIONED_LIBRARIES
    },
}


PARSER = functools.cache(cli.build_parser)


class Reached(BaseException):
    """The command got past its checks to real work: every value was accepted."""


def _stop(*_: object, **__: object) -> None:
    raise Reached


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        for name, sub in action.choices.items():
            yield from commands(sub, (*path, name))
    if path and not subcommands:
        yield " ".join(path), parser


def value_arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions if action.nargs != 0 and action.dest != "help"]


def argument_name(action: argparse.Action) -> str:
    """A flag (its long form), or a positional argument's metavar."""
    return action.option_strings[-1] if action.option_strings else str(action.metavar or action.dest)


def cases() -> list[tuple[str, str]]:
    return [
        (command, argument_name(action))
        for command, parser in commands(cli.build_parser())
        for action in value_arguments(parser)
    ]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    store = ResultsStore(root / "results")
    store.write_environment(Environment())
    store.append(a_record(store.run_id))
    baseline = root / "baseline.json"
    assert cli.main(["baseline", "save", str(store.folder), "--out", str(baseline)]) == 0
    return {"root": root, "results": root / "results", "folder": store.folder, "baseline": baseline}


def valid_command(command: str, places: dict[str, Path]) -> tuple[list[str], dict[str, list[str]]]:
    """A command line that passes every check (the fuzzed value is added to it), and the valid
    values of its positional arguments."""
    folder, root = str(places["folder"]), str(places["root"])
    flags = {
        "generate": ["--preset", "tiny", "--out", f"{root}/generated"],
        "run": ["--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny"],
        "matrix": ["--preset", "tiny", "--scenarios", "append", "--writers", "pyiceberg-table"],
        "scale": ["--writer", "pyiceberg-table", "--preset", "tiny"],
        "rounds": ["--preset", "tiny", "--writers", "pyiceberg-table"],
        "baseline save": ["--out", f"{root}/fuzzed-baseline.json"],
        "gate": ["--baseline", str(places["baseline"]), "--results", str(places["results"])],
    }.get(command, [])
    positionals = {
        "report": {"RESULTS_DIR": [folder]},
        "summary": {"RESULTS_DIR": [folder]},
        "baseline save": {"RESULTS_DIR": [folder]},
        "compare": {"BASE": [folder], "CUR": [folder]},
    }.get(command, {})
    return [*command.split(), *flags], positionals


def command_line(command: str, places: dict[str, Path], argument: str | None, value: str) -> list[str]:
    base, positionals = valid_command(command, places)
    if argument is not None and not argument.startswith("-"):  # a positional argument
        positionals = {**positionals, argument: [value]}
    elif argument is not None:
        base += [argument, value]
    return base + [v for values in positionals.values() for v in values]


@pytest.fixture
def stopped(monkeypatch, tmp_path, cli_settings) -> Path:
    """Real work replaced by Reached; traceback files go to a folder of the test's own."""
    for module, name in (
        (session, "session"),
        (wide, "generate_base"),
        (changes, "generate_changes"),
        (spark_generate, "generate_base_on_spark"),
        (screenshot, "screenshot"),
    ):  # the commands import them as they run: patched where they live
        monkeypatch.setattr(module, name, _stop)
    monkeypatch.setattr(cleanup, "remove", _stop)
    monkeypatch.setattr(
        cli, "build_parser", lambda *_: PARSER()
    )  # parsing leaves a parser as it was: build it once
    monkeypatch.chdir(tmp_path)
    kept = tmp_path / "tmp"
    kept.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(kept))
    return kept


def test_every_command_line_used_is_valid(capsys, places, stopped):
    """Else the fuzz below would pass for the wrong culprit."""
    for command, _ in commands(cli.build_parser()):
        try:
            code = cli.main(command_line(command, places, None, ""))
        except Reached:
            continue
        assert code == 0, (command, capsys.readouterr().err)


def test_the_values_excused_are_taken(capsys, places, stopped, monkeypatch):
    """The table of valid values holds no bad value in disguise."""
    monkeypatch.setattr(baseline, "save_baseline", _stop)  # it would make the missing folder
    for (command, argument), valid in VALID.items():
        for value in valid:
            try:
                code = cli.main(command_line(command, places, argument, value))
            except Reached:
                continue
            assert code == 0, (command, argument, value, capsys.readouterr().err)


def named(culprit: str, value: str, err: str) -> bool:
    return culprit in err or (value != "" and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", err) is not None)


def assert_refused(capsys, argv: list[str], argument: str, value: str) -> None:
    try:
        code = cli.main(argv)
    except Reached:
        pytest.fail(f"{argument} {value!r} was accepted: {' '.join(argv)}")
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert len(err.strip().splitlines()) == 1, (argv, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    assert named(argument, value, err), (argv, err)


@pytest.mark.parametrize(("command", "argument"), cases())
def test_bad_values_are_one_line_naming_the_flag(capsys, places, stopped, command, argument):
    valid = VALID.get((command, argument), {})
    for value in BAD_VALUES:
        if value not in valid:
            assert_refused(capsys, command_line(command, places, argument, value), argument, value)
    assert not list(stopped.iterdir())  # no traceback file


# Values bad for one flag only, each once seen accepted (or an internal error) and failing later.
FLAG_BAD_VALUES = [
    ("scale", "--batches", "5,5"),
    ("run", "--sort", ","),
    ("run", "--sort", "c001_int32 desc, c001_int32"),
    ("run", "--partition", "month(c017_ts), day(c017_ts)"),
    ("run", "--partition", "bucket[0](id)"),
    ("run", "--partition", "bucket(0, id)"),
    ("run", "--partition", f"bucket[{HUGE}](id)"),
    ("run", "--partition", "truncate[0](c003_str)"),
    ("run", "--memory", "16m"),
    ("run", "--spark-master", "standalone[0]"),
    ("run", "--spark-master", "standalone[9]"),
    ("matrix", "--spark-master", "standalone[2,2]"),
    # A flag of one kind of generation given to another would change nothing.
    ("generate", "--update-ratio", "0.5"),
    ("generate", "--memory", "2g"),
    ("generate", "--spark-master", "local[2]"),
]


@pytest.mark.parametrize(("command", "argument", "value"), FLAG_BAD_VALUES)
def test_values_bad_for_one_flag_are_refused_before_any_work(
    capsys, places, stopped, command, argument, value
):
    assert_refused(capsys, command_line(command, places, argument, value), argument, value)
    assert not list(stopped.iterdir())


@pytest.mark.parametrize("threshold", ["nan", "inf", "-1.0"])
def test_a_gate_threshold_that_is_no_finite_number_is_refused(capsys, places, stopped, threshold):
    config = places["root"] / f"gate-{threshold}.toml"
    config.write_text(f"[gate]\nwall_time_ratio = {threshold}\n")
    argv = command_line("gate", places, "--config", str(config))
    assert_refused(capsys, argv, "wall_time_ratio", threshold)


@pytest.mark.parametrize("command", ["summary", "report", "compare", "baseline save", "gate"])
def test_an_empty_results_file_is_bad_input_not_a_report_of_nothing(capsys, places, stopped, command):
    """Exit 2 naming the file (exit 1 is the gate's for a regression)."""
    empty = places["root"] / f"empty-{command.replace(' ', '-')}"
    empty.mkdir()
    (empty / "runs.jsonl").write_text("")
    argv = {
        "compare": ["compare", str(empty), str(places["folder"])],
        "gate": ["gate", "--baseline", str(places["baseline"]), str(empty)],
        "baseline save": ["baseline", "save", str(empty), "--out", str(empty / "baseline.json")],
    }.get(command, [command, str(empty)])
    assert_refused(capsys, argv, str(empty / "runs.jsonl"), "")


def test_a_generation_flag_that_would_change_nothing_is_refused(capsys, places, stopped, tiny_sets):
    out = str(places["root"] / "never-written")
    assert_refused(capsys, ["generate", "--preset", "tiny", "--evolved", "--out", out], "--evolved", "")
    base = str(tiny_sets["base"].directory)
    no_rows = ["generate", "--changes-of", base, "--update-ratio", "0", "--insert-ratio", "0", "--out", out]
    assert_refused(capsys, no_rows, "--update-ratio 0 and --insert-ratio 0", "")
    assert_refused(capsys, ["generate", "--changes-of", base, "--rows", "5", "--out", out], "--rows", "")


@pytest.mark.parametrize(
    ("extra", "culprit"),
    [
        (["--scenario", "append", "--preset", "tiny"], "--source and --preset"),
        (["--scenario", "append", "--changes", "{base}"], "--changes"),
        (["--scenario", "append", "--update-ratio", "0.5"], "--update-ratio"),
        (["--scenario", "upsert", "--changes", "{base}", "--insert-ratio", "0.5"], "--insert-ratio"),
    ],
)
def test_your_data_flags_that_would_change_nothing_are_refused(
    capsys, places, stopped, tiny_sets, extra, culprit
):
    base = str(tiny_sets["base"].directory)
    argv = ["run", "--writer", "pyiceberg-table", "--source", base, *(a.format(base=base) for a in extra)]
    assert_refused(capsys, argv, culprit, "")


# --- the config file: every key of every table, read from its model, driven with bad values ----

# TOML values bad for most keys; a key that takes one says why in CONFIG_VALID.
CONFIG_BAD = ['""', "-1", '"abc"', "nan", "1e30", '"☃"', "[1, 2]", "{a = 1}"]
NAME = "a name the service it is given to checks (a Docker image, a REST warehouse, an S3 region)"
PATH = "a folder name; whether it can be made is the run's to find"
CONFIG_VALID: dict[tuple[str, str], dict[str, str]] = {
    **{
        ("settings", key): dict.fromkeys(['"abc"', '"☃"', "-1", "1e30"], PATH)
        for key in ("data_dir", "results_dir")
    },
    **{
        ("settings", key): dict.fromkeys(['"abc"', '"☃"'], NAME)
        for key in ("worker_image", "warehouse", "s3_region")
    },
    ("matrix", "batches"): {"[1, 2]": "batch counts 1 and 2 are a scale axis"},
    ("matrix", "rows"): {"[1, 2]": "row counts 1 and 2 are a rows axis"},
    **{(table, "format_versions"): {"[1, 2]": "format versions 1 and 2"} for table in ("matrix", "rounds")},
    **{(table, "sort"): {'""': "the default: unsorted"} for table in ("matrix", "rounds")},
    **{
        (table, "maintainer"): {'""': "the default: each writer's own maintainer"}
        for table in ("matrix", "rounds")
    },
    **{
        ("gate", key): {"1e30": "a threshold no figure reaches is the user's to set"}
        for key in threshold_defaults()
    },
}


def config_cases() -> list[tuple[str, str, str]]:
    """(table, key, command that reads it) for every key a config file may hold."""
    from harness.base.settings import Settings
    from harness.run.config import MatrixConfig, RoundsConfig

    reading = {"settings": "matrix", "matrix": "matrix", "rounds": "rounds", "gate": "gate"}
    keys = {
        "settings": [name for name in Settings.model_fields if name != "engines"],
        "matrix": list(MatrixConfig.model_fields),
        "rounds": list(RoundsConfig.model_fields),
        "gate": list(threshold_defaults()),
    }
    return [(table, key, reading[table]) for table, names in keys.items() for key in names]


@pytest.mark.parametrize(("table", "key", "command"), config_cases())
def test_bad_config_values_are_one_line_naming_the_key(capsys, places, stopped, table, key, command):
    valid = CONFIG_VALID.get((table, key), {})
    base, positionals = valid_command(command, places)
    # The flags that would override the key are left out (--preset: [matrix] presets is one).
    overriding = {"--preset", f"--{key}"}
    pairs = list(zip(base[len(command.split()) :: 2], base[len(command.split()) + 1 :: 2], strict=True))
    kept = [
        word for flag, value in pairs if command == "gate" or flag not in overriding for word in (flag, value)
    ]
    base = [*command.split(), *kept]
    misbehaved = []
    for number, value in enumerate(CONFIG_BAD):
        if value in valid:
            continue
        config = places["root"] / f"config-{table}-{key}-{number}.toml"
        config.write_text(f"[{table}]\n{key} = {value}\n")
        argv = [*base, "--config", str(config), *(v for values in positionals.values() for v in values)]
        try:
            assert_refused(capsys, argv, key, value.strip('"'))
        except (AssertionError, pytest.fail.Exception):
            misbehaved.append(value)
    assert not misbehaved, misbehaved
    assert not list(stopped.iterdir())
