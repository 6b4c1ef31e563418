"""`icebench clean [--all]` removes what icebench made, and nothing else: not a user's other
caches, not what a running engine, process or test session still uses, never results."""

import getpass
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.base.settings import load_settings
from harness.cli.main import main
from harness.services import cleanup


def _dead_pid() -> int:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def _file(path: Path, size: int = 1_000) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home, temp folder, Docker folder and checkout of their own, holding icebench's caches
    beside others' (no docker CLI on PATH: no engine to ask)."""
    home, temp, checkout = tmp_path / "home", tmp_path / "tmp", tmp_path / "checkout"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ICEBENCH_CACHE", raising=False)
    monkeypatch.setenv("ICEBENCH_DOCKER_DIR", str(tmp_path / "docker"))
    monkeypatch.setenv("ICEBENCH_DATA_DIR", str(checkout / ".icebench" / "data"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(cleanup, "REPO_ROOT", checkout)  # never the real checkout's wheelhouse
    old = _file(temp / "icebench-dlt-abandoned" / "pipeline.json")
    os.utime(old.parent, (0, 0))
    pytest_root = temp / f"pytest-of-{getpass.getuser()}"
    places = {
        "data": _file(checkout / ".icebench" / "data" / "tiny" / "base" / "part-00000.parquet").parents[2],
        "envs": _file(checkout / ".icebench" / "envs" / "pyiceberg-0.9.1" / "bin" / "python").parents[2],
        "wheelhouse": _file(checkout / "compose" / "worker" / "wheelhouse" / "a.whl").parent,
        "results": _file(checkout / "results" / "20261123-000000-abcdef" / "runs.jsonl").parent,
        "our cache": _file(home / ".cache" / "icebench" / "rootfs" / "bookworm.tar", 50_000).parents[1],
        "pip cache": _file(home / ".cache" / "pip" / "http" / "wheel").parent,
        "engine": _file(tmp_path / "docker" / "data" / "overlay2" / "layer", 20_000).parents[2],
        "dead spark": _file(temp / f"icebench-spark-{_dead_pid()}" / "blockmgr").parent,
        "live spark": _file(temp / f"icebench-spark-{os.getpid()}" / "blockmgr").parent,
        "abandoned": old.parent,
        "fresh": _file(temp / "icebench-duckdb-fresh" / "spill").parent,
        "other temp": _file(temp / "someone-else" / "file").parent,
        "ended session": _file(pytest_root / "pytest-1" / "icebench0" / "data" / "x").parents[2],
        "live session": _file(pytest_root / "pytest-2" / "icebench0" / "x").parents[1],
        "other session": _file(pytest_root / "pytest-3" / "test_something0" / "x").parents[1],
    }
    (places["live session"] / ".lock").write_text(str(os.getpid()))
    (places["engine"] / "dockerd.pid").write_text(str(_dead_pid()))
    return places


OURS = ("data", "envs", "wheelhouse", "our cache", "engine", "dead spark", "abandoned", "ended session")
IN_USE = ("live spark", "fresh", "live session")
NOT_OURS = ("results", "pip cache", "other temp", "other session")


def test_clean_all_removes_only_ours_and_not_what_is_in_use(machine, capsys):
    assert main(["clean", "--all", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert all(path.exists() for path in machine.values())  # a dry run removes nothing
    assert "would go" in dry and "would be freed" in dry

    assert main(["clean", "--all"]) == 0
    out = capsys.readouterr().out
    gone = {name for name, path in machine.items() if not path.exists()}
    assert gone == set(OURS), gone
    for name in OURS:
        assert f" {machine[name]}" in out, name  # said as it goes
    assert "kept" in out and "a running process may use it" in out
    assert f"its test session runs as pid {os.getpid()}" in out
    assert "KiB" in out and "freed" in out  # with sizes


def test_clean_without_all_stays_in_the_checkout(machine):
    found = cleanup.places(load_settings(None), everything=False, checkout=machine["data"].parents[1])
    assert {place.path for place in found} == {machine["data"], machine["envs"], machine["wheelhouse"]}


def test_a_running_private_engine_is_kept(machine):
    (machine["engine"] / "dockerd.pid").write_text(str(os.getpid()))
    engine = next(
        place
        for place in cleanup.places(load_settings(None), everything=True)
        if place.path == machine["engine"]
    )
    assert engine.kept_because == f"its dockerd runs as pid {os.getpid()}, stop it first with make down"
    assert engine.size >= 20_000
