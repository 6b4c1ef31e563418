"""Row counts as the rows axis spells them (`3M`), and the names of presets at a row count
(`wide-3M`: wide's shape at 3,000,000 rows; generators/presets.py makes them)."""

from __future__ import annotations

import re
from decimal import Decimal

# A base set's bound (generate's flags): keys are int64, with room above a set for the others' blocks.
MAX_ROWS = 2**40
ROW_UNITS = {"": 1, "k": 1_000, "M": 1_000_000, "B": 1_000_000_000}
_ROW_COUNT = re.compile(r"(\d+(?:\.\d+)?)(k|M|B)?")
_AT_ROWS = re.compile(r"(?P<base>[a-z]+)-(?P<rows>\d+(?:\.\d+)?[kMB]?)")


def row_count(text: str) -> int:
    """`3M` as 3,000,000; a fraction of a row, none or too many is refused."""
    match = _ROW_COUNT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a row count: {text!r} (e.g. 300k, 3M, 10M)")
    number, unit = match.groups()
    rows = Decimal(number) * ROW_UNITS[unit or ""]  # exact: a float would move 1234.567k off by one
    if rows != rows.to_integral_value() or not 1 <= rows <= MAX_ROWS:
        raise ValueError(f"not a row count: {text!r} (a whole number of rows, 1 to {MAX_ROWS:,})")
    return int(rows)


def rows_text(rows: int) -> str:
    """The shortest spelling `row_count` reads back exactly: 3000000 as 3M, 1500000 as 1.5M,
    1234567 as 1234.567k, 999 as is."""
    for unit, size in sorted(ROW_UNITS.items(), key=lambda item: -item[1]):
        if unit and rows >= size and rows % (size // 1000) == 0:
            whole, part = divmod(rows, size)
            fraction = f"{part // (size // 1000):03d}".rstrip("0")
            return f"{whole}.{fraction}{unit}" if fraction else f"{whole}{unit}"
    return str(rows)


def at_rows_name(base: str, rows: int) -> str:
    return f"{base}-{rows_text(rows)}"


def split_at_rows(name: str) -> tuple[str, int] | None:
    """`wide-3M` as (wide, 3000000); a name of no row count: None."""
    match = _AT_ROWS.fullmatch(name)
    if match is None:
        return None
    try:
        return match["base"], row_count(match["rows"])
    except ValueError:
        return None
