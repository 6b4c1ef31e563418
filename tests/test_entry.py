"""`icebench -h` is answered by harness/entry.py without loading the engines (it took seconds),
and says exactly what the full parser would."""

import subprocess
import sys

import pytest

from harness.cli import build_parser
from harness.entry import top_level_parser


def test_the_top_level_help_is_the_full_parsers():
    assert top_level_parser().format_help() == build_parser().format_help()


def test_the_top_level_help_loads_no_engine_catalog_or_plotting_library():
    code = (
        "import sys; from harness.entry import main; main(['--help']); "
        "heavy = ('pyiceberg', 'pyarrow', 'matplotlib', 'numpy', 'harness.cli'); "
        "loaded = [m for m in heavy if m in sys.modules]; "
        "sys.exit(f'loaded {loaded}' if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "usage: icebench" in done.stdout and "matrix" in done.stdout


def test_any_other_use_goes_to_the_full_cli(capsys):
    from harness.entry import main

    with pytest.raises(SystemExit) as exited:  # argparse's own exit after a command's help
        main(["run", "--help"])
    assert exited.value.code == 0 and "--partition SPEC" in capsys.readouterr().out
    assert main(["run", "--writer", "no-such-writer", "--scenario", "append"]) == 2
