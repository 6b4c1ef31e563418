"""Library version variants (--pyiceberg 0.9.1,0.12.0; --dlt, --polars, --daft alike): each version
in its own cached environment layered over the main one, its runs labelled, side by side in
results, baselines and reports."""

import pytest

from harness.base.errors import IcebenchError
from harness.base.results import ResultsStore, read_runs
from harness.cli.main import main
from harness.engines.writers import writers
from harness.engines.writers.pyiceberg_table import PyicebergTable
from harness.run.runner import Runner, RunPlan
from harness.services.envs import Variant, installed_version, library_env
from harness.services.stacks.embedded import EmbeddedStack
from reports.baseline import build_baseline, newest_results_folder

OLD = "0.9.1"
# pyiceberg 0.9.1 collects decimal(p <= 18) statistics as INT64 only, so it cannot append Arrow
# decimals that pyarrow stores as FIXED_LEN_BYTE_ARRAY; 0.12 can.
OLD_DECIMAL_ERROR = "Unexpected physical type FIXED_LEN_BYTE_ARRAY for decimal(10, 3), expected INT64"
OLD_POLARS = "2.0.0"  # the release before the main environment's 2.1.0; it has sink_iceberg too

pytestmark = pytest.mark.usefixtures("cli_settings")


def test_an_environment_per_version_is_built_once(settings):
    root = settings.data_dir.parent / "envs"
    python = library_env("pyiceberg", OLD, root)
    assert installed_version(python, "pyiceberg") == OLD
    assert library_env("pyiceberg", OLD, root) == python  # cached: no second install


def test_versions_side_by_side_show_the_decimal_difference(capsys, settings, tiny_sets):
    code = main(
        ["run", "--scenario", "append", "--writer", "pyiceberg-table", "--preset", "tiny",
         "--memory", "1g", "--pyiceberg", f"{OLD},0.12.0"]
    )  # fmt: skip
    assert code == 0
    folder = newest_results_folder(settings.results_dir)
    old, new = read_runs(folder)
    assert (old.variant, old.versions["pyiceberg"]) == (f"pyiceberg {OLD}", OLD)
    assert (new.variant, new.versions["pyiceberg"]) == ("pyiceberg 0.12.0", "0.12.0")
    assert old.status == "error" and OLD_DECIMAL_ERROR in old.error
    assert {c.name: c for c in old.verdict.checks}["table_unchanged_after_failure"].passed
    assert new.status == "ok" and new.verdict.passed
    out = capsys.readouterr().out
    assert f"pyiceberg-table [pyiceberg {OLD}]" in out
    keys = set(build_baseline([folder]).runs)
    setup = f"{new.isolation} 1g|{new.batch_rows} rows/batch"
    assert keys == {
        f"append|pyiceberg-table|tiny|embedded|{setup}|pyiceberg {OLD}",
        f"append|pyiceberg-table|tiny|embedded|{setup}|pyiceberg 0.12.0",
    }


def test_an_unknown_version_is_one_line(capsys, tiny_sets):
    code = main(["run", "--scenario", "append", "--writer", "pyiceberg-table", "--pyiceberg", "0.0.999"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "pyiceberg==0.0.999" in err and len(err.splitlines()) == 1


def test_versions_do_not_run_in_containers(settings):
    docker = settings.model_copy(update={"isolation": "docker"})
    with pytest.raises(IcebenchError, match="not containers"):
        Runner(docker, ResultsStore(settings.results_dir), EmbeddedStack(docker), Variant("pyiceberg", OLD))


class OwnEnvironment(PyicebergTable):
    """A writer whose libraries cannot share the main environment (like a pyiceberg fork)."""

    name = "own-environment"
    environment = (f"pyiceberg=={OLD}",)


@pytest.fixture
def own_environment_writer(monkeypatch):
    monkeypatch.setitem(writers(), OwnEnvironment.name, OwnEnvironment)
    return OwnEnvironment


def test_a_writer_with_its_own_environment_runs_its_workers_there(runner, own_environment_writer):
    python = runner._worker_python(own_environment_writer)
    assert python == library_env("pyiceberg", OLD, runner.envs_root)  # the same cached environment
    assert installed_version(python, "pyiceberg") == OLD
    assert runner._worker_python(PyicebergTable) is None  # the others: the main environment


def test_a_writer_environment_that_cannot_be_installed_is_the_runs_error(
    runner, tiny_sets, own_environment_writer, monkeypatch
):
    monkeypatch.setattr(own_environment_writer, "environment", ("pyiceberg==0.0.999",))
    record = runner.run(RunPlan("append", OwnEnvironment.name, "tiny", tiny_sets, 2_000, cap_bytes=1 << 30))
    assert record.status == "error"
    assert record.error.startswith("own-environment's environment: cannot install pyiceberg==0.0.999")


def test_a_writer_environment_is_refused_with_variants_and_containers(settings, own_environment_writer):
    store = ResultsStore(settings.results_dir)
    docker = settings.model_copy(update={"isolation": "docker"})
    in_container = Runner(docker, store, EmbeddedStack(docker))
    assert "not in the worker container" in in_container._environment_refusal(own_environment_writer)
    variant = Runner(settings, store, EmbeddedStack(settings), Variant("pyiceberg", OLD))
    assert "not a variant's" in variant._environment_refusal(own_environment_writer)
    assert variant._environment_refusal(PyicebergTable) is None


def test_any_writer_library_has_variants(settings, tiny_sets):
    """Not only pyiceberg: --polars runs the polars sink with that polars (2.0.0 has sink_iceberg too)."""
    code = main(
        ["run", "--scenario", "replace", "--writer", "polars-sink", "--preset", "tiny",
         "--memory", "1g", "--polars", OLD_POLARS]
    )  # fmt: skip
    assert code == 0
    (record,) = read_runs(newest_results_folder(settings.results_dir))
    assert (record.variant, record.versions["polars"]) == (f"polars {OLD_POLARS}", OLD_POLARS)
    assert record.status == "ok" and record.verdict.passed


def test_an_env_made_for_a_vanished_checkout_is_pointed_at_this_one(tmp_path):
    """A library env whose `.pth` names a main environment that is gone (another checkout's, a venv
    made anew) would start workers without pyarrow: it is pointed at this one when used."""
    import subprocess
    import sysconfig
    import venv

    from harness.services.envs import READY, env_name, requirements_env

    folder = tmp_path / env_name(["somelib==1.0"])
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    (folder / READY).write_text("somelib==1.0\n")
    python = requirements_env(["somelib==1.0"], tmp_path)
    (link,) = folder.rglob("icebench-main.pth")
    link.write_text("/gone/.venv/lib/python3.11/site-packages\n/gone\n")
    assert requirements_env(["somelib==1.0"], tmp_path) == python
    assert link.read_text().splitlines()[0] == sysconfig.get_path("purelib")
    imported = subprocess.run(
        [str(python), "-c", "import pyarrow, harness"], capture_output=True, check=False
    )
    assert imported.returncode == 0, imported.stderr


def placeholder_wheel(folder, name: str, version: str):
    """A wheel that installs `name`'s metadata and no module (as PyPI's yanked pyiceberg 0.0.1 does)."""
    import zipfile

    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def test_a_release_that_imports_another_version_is_refused_before_any_run(settings, tmp_path, monkeypatch):
    """Its environment holds pyiceberg 0.0.1's metadata, but `import pyiceberg` finds the main
    environment's 0.12.0: the record would say 0.0.1 for 0.12.0's work."""
    from harness.services.envs import requirements_env

    python = requirements_env([str(placeholder_wheel(tmp_path, "pyiceberg", "0.0.1"))], tmp_path / "envs")
    assert installed_version(python, "pyiceberg") == "0.12.0"  # what the worker imports, not the metadata
    monkeypatch.setattr("harness.run.runner.library_env", lambda *_: python)
    with pytest.raises(
        IcebenchError, match=r"--pyiceberg 0\.0\.1: its environment imports pyiceberg 0\.12\.0"
    ):
        Runner(
            settings,
            ResultsStore(tmp_path / "results"),
            EmbeddedStack(settings),
            Variant("pyiceberg", "0.0.1"),
        )
