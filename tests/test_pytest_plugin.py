"""Another project's test suite uses the `icebench` fixture (the pytest11 entry point) from a
folder outside this repository: the record comes back, a faulty writer is in it, bad input raises."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WRITER = re.search(
    r"## Your own writer.*?```python\n(.*?)```", (REPO / "docs" / "writers.md").read_text(), re.S
)[1]
THEIR_TESTS = """
import pytest

from harness.cli.pytest_plugin import IcebenchRunFailed


def test_append_stays_small_and_correct(icebench):
    record = icebench(writer="pyiceberg-add-files")
    assert record.status == "ok" and record.verdict.passed
    assert record.writer == "pyiceberg-add-files" and record.peak_rss_bytes < 2**30


def test_our_writer(icebench):
    record = icebench(writer_file="our_writer.py")
    assert (record.writer, record.verdict.passed) == ("my-pipeline", True)


def test_bad_input_raises_with_the_one_line(icebench):
    with pytest.raises(IcebenchRunFailed, match="unknown writer 'no-such-writer'"):
        icebench(writer="no-such-writer")
"""


def test_a_project_outside_the_repository_uses_the_fixture(tmp_path):
    project = tmp_path / "their-project"
    project.mkdir()
    (project / "test_theirs.py").write_text(THEIR_TESTS)
    (project / "our_writer.py").write_text(WRITER)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "test_theirs.py"],
        cwd=project, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
    assert (project / ".pytest_cache" / "d" / "icebench-data").is_dir()  # data generated once, kept
    uncached = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "bad_input", "test_theirs.py"],
        cwd=project, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert uncached.returncode == 0 and "1 passed" in uncached.stdout, uncached.stdout[-3000:]
