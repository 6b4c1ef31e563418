import pytest

from harness.base.errors import IcebenchError
from harness.base.settings import SOURCES_ENDPOINT_VARIABLE, Settings, check_environment, load_settings
from harness.cli.main import main
from harness.engines.spark import SparkOptions


def test_precedence_defaults_file_environment_flags(tmp_path, monkeypatch):
    config = tmp_path / "icebench.toml"
    config.write_text('[settings]\nmemory = "1g"\nbatch_rows = 500\nseed = 7\n')
    # sizes are read once into bytes, wherever they come from
    assert load_settings(None).memory == 2 * 2**30
    from_file = load_settings(config)
    assert (from_file.memory, from_file.batch_rows, from_file.seed) == (2**30, 500, 7)
    monkeypatch.setenv("ICEBENCH_MEMORY", "3g")
    assert load_settings(config).memory == 3 * 2**30
    assert load_settings(config, memory="4g", batch_rows=None).memory == 4 * 2**30
    assert load_settings(config, memory="4g", batch_rows=None).batch_rows == 500


def test_config_from_environment_variable(tmp_path, monkeypatch):
    config = tmp_path / "other.toml"
    config.write_text("[settings]\nbatch_rows = 123\n")
    monkeypatch.setenv("ICEBENCH_CONFIG", str(config))
    assert load_settings(None).batch_rows == 123


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        ("[settings]\nbatch_rows = -1\n", "batch_rows"),
        (
            "[settings]\nworker_timeout_s = 1e10\n",
            "worker_timeout_s: Input should be less than or equal to 604800",
        ),
        ("[settings]\nworker_timeout_s = nan\n", "worker_timeout_s: Input should be a finite number"),
        ("[settings]\nworker_timeout_s = inf\n", "worker_timeout_s: Input should be a finite number"),
        ("[settings]\nresults_dir = ''\n", "results_dir: Value error, must not be empty"),
        ("[settings]\nseed = -1\n", "seed"),
        ("[settings]\nreads = -1\n", "reads: Input should be greater than or equal to 0"),
        (
            "[settings]\nlibrary_versions = {pyiceberg = ['x.y']}\n",
            "not a version, a source folder, a wheel or sdist, or a VCS URL",
        ),
        ("[settings]\nmemroy = '1g'\n", "memroy"),
        ("not toml at all [", "not valid TOML"),
    ],
)
def test_bad_config_is_one_line_naming_the_culprit(tmp_path, text, culprit):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(IcebenchError, match=culprit):
        load_settings(config)


def test_missing_config_file(tmp_path):
    with pytest.raises(IcebenchError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_engine_options_from_file_environment_and_flags_option_by_option(tmp_path, monkeypatch):
    config = tmp_path / "icebench.toml"
    config.write_text('[engines.spark]\nmaster = "spark://file:7077"\n')

    def master(settings: Settings) -> str:
        return settings.engine_options(SparkOptions).master

    assert master(load_settings(None)) == "local[*]"
    assert load_settings(config).engines == {"spark": {"master": "spark://file:7077"}}
    monkeypatch.setenv("ICEBENCH_ENGINES", '{"spark": {"master": "spark://json:7077"}}')
    assert master(load_settings(config)) == "spark://json:7077"
    monkeypatch.setenv("ICEBENCH_SPARK_MASTER", "spark://env:7077")
    assert master(load_settings(config)) == "spark://env:7077"
    assert master(load_settings(config, engines={"spark": {"master": None}})) == "spark://env:7077"
    assert master(load_settings(config, engines={"spark": {"master": "local[2]"}})) == "local[2]"


def run_error(capsys, *args: str) -> str:
    assert main(["run", "--scenario", "append", "--writer", "pyiceberg-table", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        (
            "[engines.sprak]\nmaster = 'local[2]'\n",
            "unknown engine [engines.sprak] (did you mean spark?); engines with options: "
            "[engines.pyiceberg-maintenance], [engines.ray], [engines.spark]",
        ),
        (
            "[engines.spark]\nmastr = 'local[2]'\n",
            "[engines.spark]: unknown option mastr (did you mean master?); it takes master",
        ),
        ("[engines.spark]\nmaster = 2\n", "[engines.spark]: option master: Input should be a valid string"),
        ("[engines]\nspark = 'local[2]'\n", "engines.spark: Input should be a valid dictionary"),
        *(
            (
                f"[engines.spark]\nmaster = 'standalone[2]'\nexecutor_memory = {v}\n",
                "option executor_memory",
            )
            for v in ("'0'", "-1", "'nan'", "'1e30g'", "''", f"'{'9' * 40}g'")
        ),
        (
            "[engines.spark]\nexecutor_memory = '2g'\n",
            "executor_memory caps the executors of standalone[N] only, and master is local[*]",
        ),
        *(
            (f"[engines.ray]\nnodes = {v}\n", f"[engines.ray]: option nodes: {said}")
            for v, said in (
                ("0", "Input should be greater than or equal to 1"),
                ("9", "Input should be less than or equal to 8"),
                ("'two'", "Input should be a valid integer"),
                ("1.5", "Input should be a valid integer"),
            )
        ),
        *(
            (f"[engines.ray]\nnodes = 2\nnode_memory = {v}\n", "option node_memory")
            for v in ("'0'", "-1", "'nan'", "''", f"'{'9' * 40}g'")
        ),
        ("[engines.ray]\nnode_memory = '2g'\n", "node_memory caps the nodes of a cluster of `nodes` only"),
        ("[engines.ray]\naddress = ''\n", "[engines.ray]: option address: String should have at least 1"),
        ("[engines.ray]\naddress = 'h:6379'\nnodes = 2\n", "address joins a cluster icebench did not start"),
    ],
)
def test_engine_tables_and_options_nobody_takes_are_one_line(capsys, tmp_path, text, culprit):
    config = tmp_path / "icebench.toml"
    config.write_text(text)
    assert culprit in run_error(capsys, "--config", str(config))


def test_the_engines_own_variables_are_known_and_their_typos_are_not(capsys, monkeypatch):
    monkeypatch.setenv("ICEBENCH_SPARK_MASTER", "local[2]")
    check_environment()
    monkeypatch.setenv("ICEBENCH_SPARK_MASTR", "local[2]")
    assert "did you mean ICEBENCH_SPARK_MASTER?" in run_error(capsys)


def test_a_command_started_while_a_stack_runs_accepts_the_variables_it_set(monkeypatch):
    """local-services sets the sets' S3 endpoint for its children (CI of 2026-12-06: a command run
    in a module whose stack was up failed on it as an unknown setting)."""
    monkeypatch.setenv(SOURCES_ENDPOINT_VARIABLE, "http://127.0.0.1:1")
    check_environment()
