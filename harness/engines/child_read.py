"""A reader run as a program of its own (`python -m MODULE`, its spec as JSON on stdin): its last
line of output is the table's row count and content checksum. The parent stays small, a JVM or
another environment's libraries end with the child, and a crash is the child's, said in one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from generators.checksum import Checksum
from harness.base.caps import format_size
from harness.base.errors import IcebenchError
from harness.services.own_memory import run_judging_child

READ_TIMEOUT_S = 1800.0


class ChildReadFailed(IcebenchError):
    """The reading program failed or timed out; one line naming the engine, the table and why.
    `harness_limit`: it was the harness's own limit (its cap, its time), not the table's fault."""

    def __init__(self, message: str, harness_limit: bool = False) -> None:
        super().__init__(message)
        self.harness_limit = harness_limit


def read_in_child(
    module: str, spec: BaseModel, engine: str, table: str, python: Path | None = None
) -> Checksum:
    """Row count and checksum of `table` as the program `module` reads it, run by `python` (another
    environment's interpreter) or this one's: a judging process, under the oracle's cap, its
    resident peak counted with the oracle's (harness/services/own_memory.py)."""
    done = run_judging_child(
        [str(python or sys.executable), "-m", module],
        spec.model_dump_json(),  # stdin, not argv: catalog properties may hold secrets
        timeout_s=READ_TIMEOUT_S,
    )
    if done.oom_kills:
        raise ChildReadFailed(
            f"{engine} was OOM-killed reading {table} under the harness's own cap "
            f"(peak {format_size(done.peak_rss_bytes)})",
            harness_limit=True,
        )
    if done.timed_out:
        raise ChildReadFailed(
            f"{engine} did not finish reading {table} in {READ_TIMEOUT_S:.0f} s", harness_limit=True
        )
    if done.returncode != 0:
        raise ChildReadFailed(f"{engine} could not read {table}: {_last_error(done.stderr)}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return Checksum.from_hex(result["checksum"], result["rows"])


def answer(checksum: Checksum) -> None:
    """The child's side: its answer to the parent, the last line it prints."""
    print(json.dumps({"rows": checksum.rows, "checksum": checksum.hex}))


def _last_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "Exception" in line]
    return (errors or lines or ["no output"])[-1][:500]
