"""`--profile memray`: the worker runs under memray (native frames), and its flame graph at peak
memory is rendered next to the run, so one can see which call held the memory.

memray's own bookkeeping runs inside the worker's cap; a profiled run's numbers are for finding
the culprit, not for comparing with unprofiled runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

Profiler = Literal["memray"]
CAPTURE = "memray.bin"
FLAMEGRAPH = "memray-flamegraph.html"
RENDER_TIMEOUT_S = 600.0


def worker_arguments(profile: Profiler | None, work: Path) -> list[str]:
    """What follows `python`: the worker module, under memray when profiling."""
    worker = ["-m", "harness.engines.worker"]
    if profile is None:
        return worker
    return ["-m", "memray", "run", "--native", "--quiet", "--force", "-o", str(work / CAPTURE), *worker]


def render_flamegraph(work: Path) -> Path | None:
    """The flame graph of what was allocated at the moment of peak memory (memray's default view),
    or None when there is no readable capture (e.g. the worker was killed before memray wrote it)."""
    capture, output = work / CAPTURE, work / FLAMEGRAPH
    if not capture.is_file():
        return None
    done = subprocess.run(
        [sys.executable, "-m", "memray", "flamegraph", "--force", "-o", str(output), str(capture)],
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT_S,
        check=False,
    )
    (work / "memray-render.log").write_text(done.stdout + done.stderr)
    return output if done.returncode == 0 and output.is_file() else None
