"""Named data set sizes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from harness.base.errors import close_match
from harness.base.row_counts import at_rows_name, split_at_rows

# A base set's bounds (generate's flags; its rows: harness/base/row_counts.py): keys are int64, with room
# above a set for the others' blocks.
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


def at_rows(preset: Preset, rows: int) -> Preset:
    """`preset`'s shape (columns, types) at `rows`, its files as many rows each as the preset's: the
    rows axis varies the rows alone. At the preset's own count, the preset itself."""
    if rows == preset.rows:
        return preset
    files = max(1, min(rows, round(preset.files * rows / preset.rows)))
    return replace(preset, name=at_rows_name(preset.name, rows), rows=rows, files=files)


def get_preset(name: str) -> Preset:
    """A named preset, or one at another row count (`wide-3M`)."""
    if name in PRESETS:
        return PRESETS[name]
    if (at := split_at_rows(name)) and at[0] in PRESETS:
        return at_rows(PRESETS[at[0]], at[1])
    hint = close_match(name, PRESETS)
    raise ValueError(
        f"unknown preset {name!r}{hint}; choose from {', '.join(PRESETS)}, or one at a row count (wide-3M)"
    )


def is_preset(name: str) -> bool:
    """Whether `get_preset` knows `name`."""
    try:
        get_preset(name)
    except ValueError:
        return False
    return True
