"""A library on a version axis built from source: named as built (version + commit, dirty or
clean) from the environment its worker ran in, rebuilt when its tree changes, reused otherwise."""

import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.base.builds import Source, build_tag, check_library_version, parse_source
from harness.base.results import read_runs
from harness.cli.main import main
from reports.baseline import newest_results_folder

pytestmark = pytest.mark.usefixtures("cli_settings")

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"

[tool.setuptools.packages.find]
include = ["{name}*"]

[tool.setuptools.package-data]
"*" = ["*.so", "*.pyi", "py.typed", "*.json"]
"""


def git(folder: Path, *arguments: str) -> str:
    command = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def checkout_of_installed(library: str, folder: Path, version: str) -> Path:
    """The installed `library` copied into a package folder of its own at `version`, committed."""
    installed = Path(importlib.import_module(library).__file__).parent
    shutil.copytree(installed, folder / library, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "pyproject.toml").write_text(PYPROJECT.format(name=library, version=version))
    git(folder, "init", "-q")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "a branch of the user's")
    return folder


def test_a_checkout_on_the_axis_is_named_as_built_and_rebuilt_when_its_tree_changes(tmp_path, settings):
    checkout = checkout_of_installed("pyiceberg", tmp_path / "pyiceberg-branch", "0.12.0.post900")
    commit = git(checkout, "rev-parse", "--short=7", "HEAD")
    envs = settings.data_dir.parent / "envs"

    def run_on_the_axis() -> tuple[str | None, str]:
        arguments = [
            "run",
            "--scenario",
            "append",
            "--writer",
            "pyiceberg-table",
            "--pyiceberg",
            str(checkout),
        ]
        assert main(arguments) == 0
        [record] = read_runs(newest_results_folder(settings.results_dir))
        assert record.verdict.passed, record.verdict
        return record.variant, record.versions["pyiceberg"]

    assert run_on_the_axis() == (f"pyiceberg 0.12.0.post900+{commit}", f"0.12.0.post900+{commit}")
    built = sorted(envs.glob("pyiceberg-src-*"))
    assert run_on_the_axis()[0] == f"pyiceberg 0.12.0.post900+{commit}"
    assert sorted(envs.glob("pyiceberg-src-*")) == built  # unchanged source: the same environment

    with (checkout / "pyiceberg" / "__init__.py").open("a") as init:
        init.write("\nBRANCH_MARK = 1  # a change not yet committed\n")
    assert run_on_the_axis() == (f"pyiceberg 0.12.0.post900+{commit}.dirty", f"0.12.0.post900+{commit}.dirty")
    assert len(sorted(envs.glob("pyiceberg-src-*"))) == len(built) + 1  # the changed tree: built again


def test_what_an_axis_takes_and_refuses(tmp_path):
    assert parse_source("1.23.0") is None and check_library_version("1.23.0") == "1.23.0"
    assert parse_source("git+https://github.com/dlt-hub/dlt@dc01193") == Source(
        "git+https://github.com/dlt-hub/dlt@dc01193", "vcs"
    )
    wheel = tmp_path / "dlt-1.23.0-py3-none-any.whl"
    wheel.write_bytes(b"not really")
    assert check_library_version(str(wheel)) == str(wheel.resolve())
    with pytest.raises(ValueError, match="no Python package to build"):
        parse_source(str(tmp_path))  # a folder without pyproject.toml or setup.py
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    with pytest.raises(ValueError, match="not a wheel or sdist"):
        parse_source(str(notes))
    with pytest.raises(ValueError, match="not a version, a source folder"):
        parse_source("../no-such-checkout")
    with pytest.raises(ValueError, match="pyspark takes releases only"):
        check_library_version(str(wheel), "pyspark")
    with pytest.raises(ValueError, match="not a version, a checkout folder or a git URL"):
        check_library_version(str(wheel), "iceberg-rust")  # cargo builds no wheel
    with pytest.raises(ValueError, match=r"without Cargo\.toml .* no cargo workspace to build"):
        check_library_version(str(tmp_path), "iceberg-rust")
    rust_git = "git+https://github.com/apache/iceberg-rust@6f1b2d4"
    assert check_library_version(rust_git, "iceberg-rust") == rust_git
    with pytest.raises(ValueError, match="not a version, a checkout folder or a git URL"):
        check_library_version("hg+https://example.org/iceberg-rust", "iceberg-rust")
    assert build_tag({"commit": "dc01193", "dirty": True}) == "dc01193.dirty"
    assert build_tag({"commit": None, "digest": "0123456789abcdef"}) == "src.01234567"


def test_a_source_that_is_not_there_is_one_line_before_any_work(capsys, tmp_path):
    assert main(["run", "--scenario", "append", "--writer", "dlt", "--dlt", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "icebench: error: argument --dlt: not a version, a source folder, a wheel or sdist"
    ), err


def test_a_branch_against_its_base_interleaved_with_ratios_and_a_gate(tmp_path, settings, capsys):
    """Two builds on the axis, `--repeat 2`: run A B A B, the table gives each metric's ratio with
    its spread and the outcome, and the gate fails the build that regressed (a 300 MiB ballast in
    the branch) but not the other way round."""
    base = checkout_of_installed("pyiceberg", tmp_path / "base", "0.12.0.post900")
    branch = checkout_of_installed("pyiceberg", tmp_path / "branch", "0.12.0.post900")
    with (branch / "pyiceberg" / "__init__.py").open("a") as init:
        init.write('\nBALLAST = b"x" * (300 * 2**20)  # the regression the gate must catch\n')
    git(branch, "commit", "-qam", "a branch that holds 300 MiB more")
    labels = [
        f"pyiceberg 0.12.0.post900+{git(folder, 'rev-parse', '--short=7', 'HEAD')}"
        for folder in (base, branch)
    ]
    code = main(
        [
            "matrix", "--preset", "tiny", "--scenarios", "append", "--writers", "pyiceberg-table",
            "--repeat", "2", "--memory", "1g", "--pyiceberg", f"{base},{branch}",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    folder = newest_results_folder(settings.results_dir)
    records = read_runs(folder)
    assert [(r.variant, r.repeat) for r in records] == [
        (labels[0], 0), (labels[1], 0), (labels[0], 1), (labels[1], 1)
    ]  # fmt: skip
    assert f"{labels[1]} against {labels[0]}" in out
    peak = next(line for line in out.splitlines() if "pyiceberg-table" in line and "2 / 2" in line)
    assert re.search(r"\d\.\d\dx \(\d\.\d\d-\d\.\d\d\)", peak), peak  # ratio (the repeats' range)

    assert main(["gate", "--variants", ",".join(labels), str(folder)]) == 1
    assert "peak" in capsys.readouterr().out
    assert main(["gate", "--variants", ",".join(reversed(labels)), str(folder)]) == 0
