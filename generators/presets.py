"""Named data set sizes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.base.errors import close_match

# A base set's bounds (generate's flags): keys are int64, with room above a set for the others' blocks.
MAX_ROWS = 2**40
MAX_COLUMNS = 10_000
MAX_FILES = 100_000
MAX_FIRST_KEY = 2**62


@dataclass(frozen=True)
class Preset:
    name: str
    rows: int
    columns: int
    files: int
    # wide: an integer key and flat columns (generators/wide.py); events: a string key and every
    # Iceberg type, nested ones too (generators/events.py).
    shape: Literal["wide", "events"] = "wide"


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("tiny", rows=10_000, columns=20, files=2),
        Preset("small", rows=200_000, columns=100, files=4),
        Preset("wide", rows=1_000_000, columns=400, files=10),
        # id + int32, int64, float64, string: no decimals, for library versions that cannot
        # write them (pyiceberg 0.9.1), so their commit costs can still be compared.
        Preset("narrow", rows=100_000, columns=5, files=2),
        Preset("events", rows=1_000_000, columns=120, files=10, shape="events"),
    )
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        hint = close_match(name, PRESETS)
        raise ValueError(f"unknown preset {name!r}{hint}; choose from {', '.join(PRESETS)}") from None
