"""The contract layer stays at the bottom: harness/model.py imports nothing of the project, and
reading results (harness.base.results) loads neither pyiceberg nor Spark nor the scenarios."""

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
    upward.write_text(
        (REPO / "harness" / "model.py").read_text() + "\nfrom harness.judge.oracle import judge\n"
    )
    assert project_imports(upward) == ["harness.judge.oracle"]


def test_reading_results_loads_no_engine():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, harness.base.results; print(sorted(sys.modules))"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for heavy in ("pyiceberg", "pyspark", "scenarios", "harness.engines.writers"):
        assert f"'{heavy}'" not in loaded, heavy


def test_a_worker_loads_no_checksum_kernel():
    """The worker's resident memory is the writer's: the checksum's numba (~100 MB) stays in the
    harness, whatever a writer or the manifest imports."""
    script = (
        "import sys, harness.engines.worker\n"
        "from harness.engines.writers import get_writer, writers\n"
        "for name in writers(): get_writer(name)\n"
        "print(sorted(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    for heavy in ("numba", "generators.checksum"):
        assert f"'{heavy}'" not in loaded, heavy


# The layers, bottom up: module prefixes, and the layers each may import besides its own.
LAYERS: dict[str, tuple[str, ...]] = {
    "model": ("harness.model",),
    "base": ("harness.base",),
    "data": ("generators",),
    "services": ("harness.services",),
    "engines": ("harness.engines",),
    "judge": ("harness.judge",),
    "scenarios": ("scenarios",),
    "run": ("harness.run",),
    "report": ("reports",),
    "cli": ("harness.cli", "harness.entry"),
}
MAY_IMPORT: dict[str, set[str]] = {
    "model": set(),
    "base": {"model"},
    "data": {"model", "base"},
    "services": {"model", "base"},
    "engines": {"model", "base", "data", "services"},
    "judge": {"model", "base", "data", "services", "engines"},
    "scenarios": {"model", "base", "data", "services", "engines", "judge"},
    "run": {"model", "base", "data", "services", "engines", "judge", "scenarios"},
    "report": {"model", "base"},  # reads results; never runs, judges or loads an engine
    "cli": set(LAYERS),
}
# print() outside the CLI, each with its reason: everything else hands the CLI its words.
MAY_PRINT = {
    "harness/engines/child_read.py": "a reading program's answer to its parent (spark_read, pyiceberg_read)",
    "harness/engines/availability.py": "a program of its own too, in a writer's environment: its answer",
    "harness/base/signals.py": "the CLI's signal handling: the last words before an exit",
}


def layer_of(module: str) -> str:
    matches = [
        (len(prefix), layer)
        for layer, prefixes in LAYERS.items()
        for prefix in prefixes
        if module == prefix or module.startswith(f"{prefix}.")
    ]
    assert matches, f"{module} is in no layer: add it to LAYERS"
    return max(matches)[1]


def project_modules() -> dict[str, Path]:
    """Every module of the project but the packages' own roots (`harness`: a name, no code)."""
    modules = {}
    for package in PROJECT_PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if name not in PROJECT_PACKAGES or project_imports(path):
                modules[name] = path
    return modules


def layer_violations(modules: dict[str, Path]) -> list[str]:
    violations = []
    for module, path in sorted(modules.items()):
        layer = layer_of(module)
        for imported in project_imports(path):
            target = layer_of(imported)
            if target != layer and target not in MAY_IMPORT[layer]:
                violations.append(f"{module} ({layer}) imports {imported} ({target})")
    return violations


def test_every_module_imports_only_its_own_layer_and_those_below():
    assert layer_violations(project_modules()) == []


def test_an_upward_import_is_a_violation(tmp_path):
    oracle = tmp_path / "oracle.py"
    oracle.write_text(
        (REPO / "harness" / "judge" / "oracle.py").read_text() + "\nfrom harness.run.runner import Runner\n"
    )
    reports = tmp_path / "summary.py"
    reports.write_text((REPO / "reports" / "summary.py").read_text() + "\nimport harness.engines.writers\n")
    assert layer_violations({"harness.judge.oracle": oracle, "reports.summary": reports}) == [
        "harness.judge.oracle (judge) imports harness.run.runner (run)",
        "reports.summary (report) imports harness.engines.writers (engines)",
    ]


def printing_calls(path: Path) -> list[int]:
    """Lines that print or make a console of their own."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in ("print", "Console")
    ]


def test_only_the_cli_prints():
    printing = {
        str(path.relative_to(REPO)): lines
        for module, path in project_modules().items()
        if layer_of(module) != "cli" and (lines := printing_calls(path))
    }
    assert set(printing) <= set(MAY_PRINT), printing


def test_a_print_below_the_cli_is_caught(tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text("def warn_user(text: str) -> None:\n    print(text)\n")
    assert printing_calls(runner) == [2]
