"""Whether a writer can write at all (`Writer.unavailable`), asked in the environment its workers
run in: `python -m harness.engines.availability WRITER` there prints the reason, or nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.base.errors import IcebenchError
from harness.engines.writers import get_writer

PROBE_TIMEOUT_S = 120.0


def unavailable_in(python: Path | None, writer: str) -> str | None:
    """The writer's `unavailable()` reason, from this process or from `python`'s environment."""
    if python is None:
        return get_writer(writer).unavailable()
    done = subprocess.run(
        [str(python), "-m", __name__, writer],
        capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise IcebenchError(f"asking {writer} whether it can write failed in {python}: {last}")
    return done.stdout.strip() or None


def main() -> None:
    print(get_writer(sys.argv[1]).unavailable() or "")


if __name__ == "__main__":
    main()
