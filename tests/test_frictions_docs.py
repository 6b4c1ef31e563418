"""The reference pages keep up with the code: every gate threshold (the registry's and those
baselines/ci-tiny.toml sets) documented with its default in docs/gates.md, every preset with its
size in docs/data.md; and the Makefile's set-up steps say what they do before they start."""

import re
import subprocess
import tomllib
from pathlib import Path

from generators.presets import PRESETS
from reports.gate import threshold_defaults

REPO = Path(__file__).resolve().parent.parent


def table_rows(page: str, first_header: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose first header is `first_header`, by their first cell
    (backticks removed)."""
    lines = (REPO / "docs" / page).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_every_gate_threshold_is_documented_with_its_default_and_ci_value():
    documented = table_rows("gates.md", "key")
    defaults = threshold_defaults()
    ci = tomllib.loads((REPO / "baselines" / "ci-tiny.toml").read_text())["gate"]
    assert set(ci) <= set(defaults)  # the CI config sets only thresholds the gate reads
    assert set(documented) == set(defaults)
    for name, (default, in_ci, meaning) in documented.items():
        assert float(default) == defaults[name], name
        assert float(in_ci) == float(ci.get(name, defaults[name])), name
        assert len(meaning.split()) >= 5, name  # a meaning, not a placeholder


def test_every_preset_is_listed_with_its_size():
    documented = table_rows("data.md", "preset")
    assert set(documented) == set(PRESETS)
    for name, preset in PRESETS.items():
        shape, files, on_disk, _ = documented[name]
        assert shape == f"{preset.rows:,} x {preset.columns}", name
        assert int(files) == preset.files, name
        assert re.fullmatch(r"[\d.]+ [MG]B", on_disk), name


def test_each_set_up_step_announces_itself_and_pip_shows_progress_on_a_terminal():
    planned = subprocess.run(
        ["make", "-n", "-B", "images"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    steps = {
        "-m venv": "creating the virtual environment",
        "-r requirements.lock": "installing the Python dependencies (requirements.lock, ~2 min",
        "--no-deps -e .": "installing icebench itself",
        "compose/rest-catalog/build.sh": "building the REST catalog server",
        "compose/docker-engine.sh start": "a Docker engine",
        "compose/images.sh": "building the worker, S3 and REST images",
    }
    for command, announced in steps.items():
        index = next(i for i, line in enumerate(planned) if command in line and "echo" not in line)
        assert planned[index - 1].startswith("echo '==> " + announced), (command, planned[index - 1])
    pip = [line for line in planned if "/pip install" in line]
    assert len(pip) == 2 and all("if [ -t 1 ]; then q=; fi" in line and "$q" in line for line in pip)
