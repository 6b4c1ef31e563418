"""The folders are the layers: a file's layer is its folder, it imports only its own layer and
those below, no import circle anywhere (inside a layer either), only the CLI prints; the contract
layer stays at the bottom, and reading results loads neither pyiceberg nor Spark nor the scenarios."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_the_contract_layer_imports_nothing_but_itself():
    for path in (REPO / "harness" / "model").rglob("*.py"):
        assert all(name.startswith("harness.model") for name in project_imports(path)), path


def test_the_layer_check_fires_on_an_upward_import(tmp_path):
    upward = tmp_path / "model.py"
    upward.write_text(
        (REPO / "harness" / "model" / "__init__.py").read_text()
        + "\nfrom harness.judge.oracle import judge\n"
    )
    assert "harness.judge.oracle" in project_imports(upward)


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


# The layers, bottom up, each a folder: harness/<layer>/, or a top-level package of the project;
# and the layers each may import besides its own.
MAY_IMPORT: dict[str, set[str]] = {
    "model": set(),
    "base": {"model"},
    "generators": {"model", "base"},
    "services": {"model", "base"},
    "engines": {"model", "base", "generators", "services"},
    "judge": {"model", "base", "generators", "services", "engines"},
    "scenarios": {"model", "base", "generators", "services", "engines", "judge"},
    "run": {"model", "base", "generators", "services", "engines", "judge", "scenarios"},
    "reports": {"model", "base"},  # reads results; never runs, judges or loads an engine
    "cli": {"model", "base", "generators", "services", "engines", "judge", "scenarios", "run", "reports"},
}
LAYERS = tuple(MAY_IMPORT)
# print() outside the CLI, each with its reason: everything else hands the CLI its words.
MAY_PRINT = {
    "harness/engines/child_read.py": "a reading program's answer to its parent (spark_read, pyiceberg_read)",
    "harness/engines/availability.py": "a program of its own too, in a writer's environment: its answer",
    "harness/base/signals.py": "the CLI's signal handling: the last words before an exit",
    "harness/services/rust_worker.py": "a program of its own too (make lint-rust asks it): its answer",
    "harness/services/calibration.py": "a program of its own too: its CPU time, to the harness timing it",
}


def layer_of(path: Path, root: Path = REPO) -> str:
    """A file's layer is its folder: harness/<layer>/..., or <layer>/... at the top."""
    parts = path.relative_to(root).parts
    layer = parts[1] if parts[0] == "harness" and len(parts) > 2 else parts[0]
    assert layer in LAYERS, f"{path.relative_to(root)} is in no layer's folder ({', '.join(LAYERS)})"
    return layer


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    """Every module of the project but the packages' own roots (`harness`: a name, no code)."""
    modules = {}
    for package in PROJECT_PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = module_name(path)
            if name not in PROJECT_PACKAGES or project_imports(path):
                modules[name] = path
    return modules


def layer_violations(modules: dict[str, Path], root: Path = REPO) -> list[str]:
    violations = []
    everything = project_modules()
    for module, path in sorted(modules.items()):
        layer = layer_of(path, root)
        for imported in project_imports(path):
            name = resolved(imported, everything)  # a package's empty root is its folder, the layer
            target = layer_of(everything[name]) if name in everything else name.split(".")[0]
            if target != layer and target not in MAY_IMPORT[layer]:
                violations.append(f"{module} ({layer}) imports {imported} ({target})")
    return violations


def test_every_module_imports_only_its_own_layer_and_those_below():
    assert layer_violations(project_modules()) == []


def test_an_upward_import_is_a_violation(tmp_path):
    oracle = tmp_path / "harness" / "judge" / "oracle.py"
    summary = tmp_path / "reports" / "summary.py"
    for planted, original, line in (
        (oracle, REPO / "harness" / "judge" / "oracle.py", "from harness.run.runner import Runner"),
        (summary, REPO / "reports" / "summary.py", "import harness.engines.writers"),
    ):
        planted.parent.mkdir(parents=True)
        planted.write_text(f"{original.read_text()}\n{line}\n")
    assert layer_violations({"harness.judge.oracle": oracle, "reports.summary": summary}, tmp_path) == [
        "harness.judge.oracle (judge) imports harness.run.runner (run)",
        "reports.summary (reports) imports harness.engines.writers (engines)",
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
        if layer_of(path) != "cli" and (lines := printing_calls(path))
    }
    assert set(printing) <= set(MAY_PRINT), printing


def test_a_print_below_the_cli_is_caught(tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text("def warn_user(text: str) -> None:\n    print(text)\n")
    assert printing_calls(runner) == [2]


def resolved(imported: str, modules: dict[str, Path]) -> str:
    """`from a.b import c` names module a.b.c when there is one, else a.b's name c."""
    while imported not in modules and "." in imported:
        imported = imported.rsplit(".", 1)[0]
    return imported


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports: anywhere in it, annotations-only ones too."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        found = {resolved(name, modules) for name in names if name.split(".")[0] in PROJECT_PACKAGES}
        graph[module] = {name for name in found if name in modules and name != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each strongly connected group of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_anywhere():
    """Not across layers (the layers forbid it) and not inside one."""
    assert circles(import_graph(project_modules())) == []


def test_a_circle_inside_a_layer_is_caught(tmp_path):
    matrix = tmp_path / "matrix.py"
    matrix.write_text((REPO / "harness" / "run" / "matrix.py").read_text())
    find_cap = tmp_path / "find_cap.py"
    find_cap.write_text(
        (REPO / "harness" / "run" / "find_cap.py").read_text()
        + "\nfrom harness.run.matrix import run_matrix\n"
    )
    modules = {**project_modules(), "harness.run.find_cap": find_cap}
    assert ["harness.run.find_cap", "harness.run.matrix"] in [
        [name for name in group if name in ("harness.run.find_cap", "harness.run.matrix")]
        for group in circles(import_graph(modules))
    ]


def test_a_file_outside_its_layers_folder_is_caught():
    for stray in ("harness/stray.py", "harness/widgets/part.py", "tools/helper.py"):
        with pytest.raises(AssertionError, match="is in no layer's folder"):
            layer_of(REPO / stray)
    assert layer_of(REPO / "harness" / "cli" / "commands" / "run.py") == "cli"
    assert layer_of(REPO / "generators" / "wide.py") == "generators"
