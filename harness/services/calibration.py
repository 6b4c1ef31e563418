"""The machine's speed now: a fixed workload, timed in a Python process of its own.

A gate compares times measured today, maybe on another machine or beside other work, with a baseline's.
A workload whose code never changes, timed in the same run as the writers, tells how much of a change
is the machine's: the gate divides a time's ratio by the workload's ratio on the same clock. It does
what the writers do most: start Python and import pyarrow, build Python objects, encode and decode
parquet with zstd. One sample is noisy (+-15% seen on a shared machine): a matrix takes many.
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time

from harness.base.errors import IcebenchError, one_line
from harness.model import MachineSpeed

ROWS = 200_000
REPEATS = 2  # ~0.7 s of work beside ~0.7 s of start-up and imports, as in a tiny run's worker
TIMEOUT_S = 120


def _python_work() -> int:
    """Dicts, strings and ints, as pyiceberg's metadata code builds them."""
    found: dict[str, int] = {}
    for number in range(120_000):
        text = f"c{number % 400:03d}-{number}"
        found[text[:4]] = found.get(text[:4], 0) + len(text)
    return sum(found.values())


def _arrow_work() -> int:
    """A deterministic table of mixed columns through parquet (zstd) and back, then sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    numbers = pa.array(range(ROWS), type=pa.int64())
    table = pa.table(
        {
            "id": numbers,
            "value": pc.multiply(pc.cast(numbers, pa.float64()), 1.5),
            "text": pc.cast(pc.multiply(numbers, 7919), pa.string()),
            "flag": pc.equal(pc.bit_wise_and(numbers, 1), 0),
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    read = pq.read_table(io.BytesIO(buffer.getvalue()), use_threads=False)  # one core, as the clock reads
    return len(read.sort_by([("text", "descending")]))


def work() -> None:
    for _ in range(REPEATS):
        _python_work()
        _arrow_work()


def measure() -> MachineSpeed:
    """One sample: the workload in a fresh Python process, as a worker runs, timed whole (start-up and
    imports too, as a worker's CPU time counts them): its CPU time (user and system) as it reports it
    at its end, its wall time from outside."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.services.calibration"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=True,
        )
        cpu_s = float(done.stdout.split()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError) as exc:
        stderr = getattr(exc, "stderr", None)
        raise IcebenchError(f"the machine's calibration workload failed: {one_line(stderr or exc)}") from None
    return MachineSpeed(cpu_s=cpu_s, wall_s=time.perf_counter() - started)


if __name__ == "__main__":
    work()
    usage = resource.getrusage(resource.RUSAGE_SELF)  # this process since it started, every thread
    print(usage.ru_utime + usage.ru_stime)
