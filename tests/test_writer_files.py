"""Writers from outside icebench: a file, a module or an installed entry point takes part like a
built-in writer (its own capped worker, the oracle, the record), and a faulty one is recorded as
a built-in one would be, never a crash of the harness."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.base.results import read_runs
from harness.cli.main import main
from harness.engines.writers import WRITER_CONTRACT, writer_files, writers
from reports.baseline import newest_results_folder

pytestmark = pytest.mark.usefixtures("cli_settings")
REPO = Path(__file__).resolve().parent.parent

# The writer docs/writers.md shows a user, as it is there: the page's example is what runs here.
WRITERS_PAGE = (REPO / "docs" / "writers.md").read_text()
MINE = re.search(r"## Your own writer.*?```python\n(.*?)```", WRITERS_PAGE, re.S)[1]


def writer_file(folder: Path, name: str, body: str, operation: str = "append") -> Path:
    """A writer `name` whose `operation` runs `body` (indented as a method's)."""
    path = folder / f"{name.replace('-', '_')}.py"
    path.write_text(
        "from harness.engines.writers import Writer\n\n\n"
        f"class Faulty(Writer):\n    name = {name!r}\n    description = 'a faulty writer'\n"
        f"    single_commit = True\n\n    def {operation}(self, job, timer):\n"
        + textwrap.indent(textwrap.dedent(body), " " * 8)
    )
    return path


def test_a_writer_file_runs_in_its_own_worker_and_passes_the_oracle(tmp_path, settings):
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    assert main(["run", "--scenario", "append", "--writer-file", str(mine)]) == 0
    [record] = read_runs(newest_results_folder(settings.results_dir))
    assert (record.writer, record.status, record.verdict.passed) == ("my-pipeline", "ok", True)
    assert record.writer_origin == str(mine.resolve())
    assert record.writer_source is not None and record.peak_rss_bytes
    assert record.versions["pyiceberg"] != "missing"  # read in the worker, as a built-in's are
    assert writer_files() == [] and "my-pipeline" not in writers()  # the registry as it was


def test_a_raising_printing_or_hanging_writer_is_recorded_and_the_matrix_goes_on(tmp_path, settings):
    raising = writer_file(tmp_path, "raises", 'print("about to fail")\nraise RuntimeError("lost my key")')
    hanging = writer_file(tmp_path, "hangs", "import time\ntime.sleep(600)")
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    code = main(
        [
            "matrix", "--preset", "tiny", "--scenarios", "append", "--writers", "pyiceberg-add-files",
            "--timeout", "20", *(f"--writer-file={path}" for path in (raising, hanging, mine)),
        ]
    )  # fmt: skip
    assert code == 0  # results are the product: failed runs are in them (--fail-on-verdict: 3)
    records = {r.writer: r for r in read_runs(newest_results_folder(settings.results_dir))}
    assert list(records) == ["pyiceberg-add-files", "raises", "hangs", "my-pipeline"]
    assert records["raises"].status == "error"
    assert records["raises"].error == "RuntimeError: lost my key"
    assert "about to fail" in Path(records["raises"].worker_log).read_text()  # its output, in its log
    assert (records["hangs"].status, records["hangs"].error) == ("error", "worker timed out after 20 s")
    assert records["my-pipeline"].verdict.passed and records["pyiceberg-add-files"].verdict.passed


def test_a_writer_that_grows_past_its_cap_is_oom_killed_not_the_harness(tmp_path, settings):
    leaking = writer_file(tmp_path, "leaks", "kept = []\nwhile True:\n    kept.append(bytearray(2**24))")
    assert main(["run", "--scenario", "append", "--memory", "256m", "--writer-file", str(leaking)]) == 0
    [record] = read_runs(newest_results_folder(settings.results_dir))
    assert (record.writer, record.status) == ("leaks", "oom")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (None, "argument --writer-file: {path} does not exist or is not a file"),
        ("def append(:\n", "writer file {path}: SyntaxError: invalid syntax (bad.py, line 1)"),
        ("import no_such_library_of_yours\n", "writer file {path}: ModuleNotFoundError: No module named"),
        ("x = 1\n", "writer file {path}: defines no Writer subclass"),
        (
            "from harness.engines.writers import Writer\nclass Taken(Writer):\n    name = 'polars-sink'\n",
            "writer file {path}: writer name 'polars-sink' is taken by the built-in writer",
        ),
        (
            "from harness.engines.writers import Writer\nclass Old(Writer):\n"
            f"    name = 'old'\n    contract = {WRITER_CONTRACT + 1}\n",
            f"writer file {{path}}: old is written for writer contract {WRITER_CONTRACT + 1}; this icebench "
            f"speaks {WRITER_CONTRACT}",
        ),
    ],
)
def test_a_writer_file_that_cannot_load_is_one_line_before_any_work(
    tmp_path, settings, capsys, source, expected
):
    path = tmp_path / "bad.py"
    if source is not None:
        path.write_text(source)
    before = sorted(settings.results_dir.glob("*")) if settings.results_dir.exists() else []
    assert main(["run", "--scenario", "append", "--writer-file", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"icebench: error: {expected.format(path=path if source is None else path.resolve())}"
    ), err
    assert len(err.splitlines()) == 1
    assert (sorted(settings.results_dir.glob("*")) if settings.results_dir.exists() else []) == before


def test_writer_flags_may_name_a_file_writer_before_the_file_is_given_and_a_misspelling_is_refused(
    tmp_path, capsys
):
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    code = main(["run", "--scenario", "replace", "--writer", "my-pipelin", "--writer-file", str(mine)])
    assert code == 2
    assert "unknown writer 'my-pipelin' (did you mean my-pipeline?)" in capsys.readouterr().err
    two = tmp_path / "two.py"
    two.write_text(MINE.replace("my-pipeline", "my-other").replace("MyPipeline", "MyOther"))
    assert main(["run", "--scenario", "append", "--writer-file", str(mine), "--writer-file", str(two)]) == 2
    assert "--writer-file defines 2 (my-pipeline, my-other): name the writer with --writer" in (
        capsys.readouterr().err
    )


def test_an_installed_entry_point_and_a_module_class_are_writers_too(tmp_path, settings):
    """A package of the user's with an `icebench.writers` entry point, on the path of every process."""
    package = tmp_path / "site"
    (package / "their_pipeline").mkdir(parents=True)
    (package / "their_pipeline" / "__init__.py").write_text(MINE.replace("my-pipeline", "their-pipeline"))
    info = package / "their_pipeline-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: their-pipeline\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[icebench.writers]\ntheir-pipeline = their_pipeline:MyPipeline\n")
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(package), str(REPO)]),
        "ICEBENCH_DATA_DIR": str(settings.data_dir),
        "ICEBENCH_RESULTS_DIR": str(tmp_path / "results"),
    }
    for arguments in (
        ["--writer", "their-pipeline"],  # the entry point
        ["--writer-file", "their_pipeline:MyPipeline"],  # the module, named
    ):
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", "--scenario", "append", *arguments],
            env=environment, capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        records = read_runs(newest_results_folder(tmp_path / "results"))
        assert [(r.writer, r.status, r.verdict.passed) for r in records] == [("their-pipeline", "ok", True)]
        assert records[0].writer_origin == "their_pipeline:MyPipeline"
