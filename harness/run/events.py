"""What a workload (the matrix, rounds, find-cap) reports as it goes: nothing here prints; the CLI's
events draw progress bars."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the CLI subclasses this before it loads any engine
    from harness.model import RunRecord
    from harness.run.runner import RunPlan

# description, total -> advance(amount): one progress bar
ProgressFactory = Callable[[str, int], Callable[[int], None]]


class MatrixEvents:
    """What a matrix reports as it goes. This one tells nobody; the CLI's draws progress bars."""

    @contextmanager
    def generating(self) -> Iterator[ProgressFactory]:
        """While data sets are generated: a progress bar per set."""
        yield lambda description, total: lambda amount: None

    @contextmanager
    def stage(self, description: str, total: int) -> Iterator[None]:
        """Around `total` runs of one preset (and library variant)."""
        yield

    def run_started(self, plan: RunPlan) -> None:
        pass

    def run_progress(self, fed: int, rows: int) -> None:
        """Within a run: its worker's source has handed `fed` of its `rows` to the writer."""

    def run_finished(self, plan: RunPlan, record: RunRecord) -> None:
        pass

    def step_finished(self, plan: RunPlan, record: RunRecord) -> None:
        """A maintenance step after a run (matrix --maintenance): not one of the stage's runs."""
