"""The contract layer stays at the bottom: harness/model.py imports nothing of the project, and
reading results (harness.results) loads neither pyiceberg nor Spark nor the scenarios."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("harness", "scenarios", "generators", "reports")


def project_imports(path: Path) -> list[str]:
    """The project modules a file imports (absolute imports only: the project uses no others)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found += [name for name in names if name.split(".")[0] in PROJECT_PACKAGES]
    return found


def test_the_contract_layer_imports_nothing_of_the_project():
    assert project_imports(REPO / "harness" / "model.py") == []


def test_the_layer_check_fires_on_an_upward_import(tmp_path):
    upward = tmp_path / "model.py"
    upward.write_text((REPO / "harness" / "model.py").read_text() + "\nfrom scenarios.oracle import judge\n")
    assert project_imports(upward) == ["scenarios.oracle"]


def test_reading_results_loads_no_engine():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, harness.results; print(sorted(sys.modules))"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for heavy in ("pyiceberg", "pyspark", "scenarios", "harness.writers"):
        assert f"'{heavy}'" not in loaded, heavy
