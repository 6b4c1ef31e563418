"""The CLI reads and checks every flag before anything heavy loads: `--help`, `--version` and a
refusal of bad input import no engine, catalog, data or plot library (timed figures: the closing
notes, by farm-bench; tests assert what is loaded, not how long it takes). Its name checks are the
registries' names, and an axis declared once on its config field is a flag of matrix and rounds."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import names
from harness.cli.commands import commands
from harness.engines.verifiers import verifier_names
from harness.engines.writers import writers
from harness.services.stacks import stacks
from scenarios import scenarios

REPO = Path(__file__).resolve().parent.parent
HEAVY = (
    "pyiceberg",
    "pyarrow",
    "numpy",
    "polars",
    "pyspark",
    "matplotlib",
    "rich",
    "harness.engines.writers",
)


def loaded_by(arguments: list[str], cwd: Path = REPO) -> tuple[int, str, list[str]]:
    script = (
        "import sys\nfrom harness.cli.main import main\n"
        f"try:\n    code = main({arguments!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print('LOADED', sorted(sys.modules), file=sys.stderr)\nsys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True)
    lines = done.stderr.splitlines()
    modules = next(line for line in lines if line.startswith("LOADED"))
    return (
        done.returncode,
        "\n".join(done.stdout.splitlines() + lines[:-1]),
        eval(modules.removeprefix("LOADED ")),
    )


COMMANDS = sorted(commands())


@pytest.mark.parametrize(
    "arguments",
    [["--help"], ["--version"], *([name, "--help"] for name in COMMANDS)],
    ids=lambda arguments: " ".join(arguments),
)
def test_help_and_version_load_nothing_heavy(arguments):
    code, _, modules = loaded_by(arguments)
    assert code == 0
    assert not [heavy for heavy in HEAVY if heavy in modules]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["matrix", "--writers", "pyiceberg-fast-apend"], "did you mean pyiceberg-fast-append"),
        (["run", "--scenario", "apend", "--writer", "daft"], "unknown scenario 'apend'"),
        (["matrix", "--memroy", "2g"], "unrecognized arguments: --memroy"),
        (["matrix", "--memory", "4x"], "memory cap '4x' is not a size"),
        (["rounds", "--rounds", "1"], "--rounds"),
        (["matrix", "--partition", "bucket(0, id)"], "unknown transform bucket"),
        (["matrix", "--stack", "s3"], "unknown stack 's3'"),
        (["run", "--scenario", "append", "--writer", "daft", "--memory", "300m", "--harness-memory", "200m"],
         "is above --harness-memory"),
    ],
)  # fmt: skip
def test_a_refusal_is_one_line_before_anything_heavy(arguments, named):
    code, err, modules = loaded_by(arguments)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and named in err, err
    assert not [heavy for heavy in HEAVY if heavy in modules], err


def test_the_names_read_from_the_sources_are_the_registries():
    assert names.writer_names() == list(writers())
    assert names.scenario_names() == list(scenarios())
    assert names.stack_names() == list(stacks())
    assert names.verifier_names() == verifier_names()


def test_an_axis_declared_once_is_on_matrix_rounds_and_the_config_file(tmp_path):
    """A dummy axis added to the config's shared axes, and only there, in a copy of the code."""
    copy = tmp_path / "icebench"
    for package in ("harness", "scenarios", "generators", "reports"):
        shutil.copytree(REPO / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    config = copy / "harness" / "run" / "config.py"
    text = config.read_text()
    anchor = '    _split = field_validator("writers", "format_versions", mode="before")(comma_separated)'
    assert anchor in text
    config.write_text(
        text.replace(
            anchor,
            '    colours: Annotated[list[str], Flag("--colours", "a dummy axis")] = '
            + "Field(default_factory=list)\n"
            + anchor,
        )
    )
    for command in ("matrix", "rounds"):
        code, out, _ = loaded_by([command, "--help"], cwd=copy)
        assert code == 0 and "--colours" in out, out
    (tmp_path / "icebench.toml").write_text('[matrix]\ncolours = ["red"]\n[rounds]\ncolours = ["blue"]\n')
    script = (
        "from pathlib import Path\nfrom harness.run.config import load_matrix_config, load_rounds_config\n"
        f"path = Path({str(tmp_path / 'icebench.toml')!r})\n"
        "print(load_matrix_config(path).colours, load_rounds_config(path).colours)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=copy, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['red'] ['blue']"
