"""bad-source: the source breaks partway, and the write must fail cleanly.

The table holds the replacement set; the writer appends a copy of the base set whose middle file
is damaged (generators/faults.py). Whatever the writer staged before it met the damage must not
be committed: the run is an error naming the file, the table stays at its snapshot with its
content, and what the writer left behind shows as orphans.
"""

from abc import abstractmethod

from generators.faults import Damage
from harness.model import Expectation, Operation
from scenarios.base import DataSets, Scenario


class BadSource(Scenario):
    operation = Operation.APPEND
    initial_set = "replacement"
    in_default_matrix = False  # fault scenarios are named: SCENARIOS=bad-source-...
    expects_bad_input = True

    @property
    @abstractmethod
    def damage(self) -> Damage:
        """Set as a class attribute by each concrete scenario."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("damage"), str):
            cls.source_set = f"base-{cls.__dict__['damage']}"  # made by generators/datasets.py

    def expected_after(self, sets: DataSets, limit_rows: int | None = None) -> Expectation:
        return self.expected_before(sets)  # a damaged source must never land, not even in part


class BadSourceCorruptPage(BadSource):
    name = "bad-source-corrupt-page"
    description = "append a set whose middle file has a valid footer but unreadable pages"
    damage = "corrupt-page"


class BadSourceWrongSchema(BadSource):
    name = "bad-source-wrong-schema"
    description = "append a set whose middle file has a column of another type"
    damage = "wrong-schema"


class BadSourceEmptyFile(BadSource):
    name = "bad-source-empty-file"
    description = "append a set whose middle file is empty (0 bytes)"
    damage = "empty-file"
