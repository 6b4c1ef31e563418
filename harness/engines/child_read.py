"""A reader run as a program of its own (`python -m MODULE`, its spec as JSON on stdin): its last
line of output is the table's row count and content checksum. The parent stays small, a JVM or
another environment's libraries end with the child, and a crash is the child's, said in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from generators.checksum import Checksum
from harness.base.errors import IcebenchError

READ_TIMEOUT_S = 1800.0


class ChildReadFailed(IcebenchError):
    """The reading program failed or timed out; one line naming the engine, the table and why."""


def read_in_child(
    module: str, spec: BaseModel, engine: str, table: str, python: Path | None = None
) -> Checksum:
    """Row count and checksum of `table` as the program `module` reads it, run by `python` (another
    environment's interpreter) or this one's."""
    try:
        done = subprocess.run(
            [str(python or sys.executable), "-m", module],
            input=spec.model_dump_json(),  # stdin, not argv: catalog properties may hold secrets
            capture_output=True,
            text=True,
            timeout=READ_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ChildReadFailed(f"{engine} did not finish reading {table} in {READ_TIMEOUT_S:.0f} s") from None
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
