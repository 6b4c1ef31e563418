import pytest

from harness.errors import IcebenchError
from harness.settings import load_settings


def test_precedence_defaults_file_environment_flags(tmp_path, monkeypatch):
    config = tmp_path / "icebench.toml"
    config.write_text('[settings]\nmemory = "1g"\nbatch_rows = 500\nseed = 7\n')
    assert load_settings(None).memory == "2g"
    from_file = load_settings(config)
    assert (from_file.memory, from_file.batch_rows, from_file.seed) == ("1g", 500, 7)
    monkeypatch.setenv("ICEBENCH_MEMORY", "3g")
    assert load_settings(config).memory == "3g"
    assert load_settings(config, memory="4g", batch_rows=None).memory == "4g"
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
