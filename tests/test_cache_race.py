"""Two invocations that find the data cache empty both pass: one generates each set while the
other waits for it, and neither sees the other's half-written files."""

import os
import subprocess
import sys

from generators.manifest import DatasetManifest


def test_two_cold_cache_invocations_both_pass(tmp_path):
    data = tmp_path / "data"
    env = {**os.environ, "ICEBENCH_DATA_DIR": str(data)}
    command = [sys.executable, "-m", "harness.cli", "run", "--scenario", "upsert", "--writer",
               "pyiceberg-table", "--preset", "tiny", "--memory", "1g"]  # fmt: skip
    harnesses = [
        subprocess.Popen(
            [*command, "--results", str(tmp_path / f"results-{n}")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for n in range(2)
    ]
    errors = [harness.communicate(timeout=600)[1].decode() for harness in harnesses]
    assert [harness.returncode for harness in harnesses] == [0, 0], errors
    (preset_folder,) = data.iterdir()
    sets = [p for p in preset_folder.iterdir() if p.is_dir()]
    assert sorted(p.name for p in sets) == ["base", "changes-u0.2-i0.1"]  # nothing partial left
    for folder in sets:
        DatasetManifest.load(folder)
