"""The spellings of a table layout on the command line (`--partition`, `--sort`, `--table-property`,
docs/tables-and-caps.md) and their one-line errors: text only, so the CLI checks them before it loads
pyiceberg (harness/base/layout.py makes the tables).

Partition fields are spelled as Iceberg's metadata writes transforms, `day(c017_ts)`,
`bucket[16](id)`, `truncate[4](c003_str)`, or as Spark SQL does, `days(c017_ts)`,
`bucket(16, id)`, `truncate(4, c003_str)`; a bare column is `identity`. Both read as Iceberg's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness.base.errors import IcebenchError
from harness.base.table_properties import check_write_property
from harness.model import TableLayout

# Iceberg's own default for write.target-file-size-bytes (512 MiB), where a table does not set it.
TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
DEFAULT_TARGET_FILE_BYTES = 512 * 2**20
FORMAT_VERSION_PROPERTY = "format-version"
FORMAT_VERSIONS = ("1", "2", "3")
UNPARTITIONED = ("", "none", "unpartitioned")

_SPARK_NAMES = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
ICEBERG_FIELD = re.compile(r"(?P<transform>[a-z]+(?:\[\d+\])?)\((?P<column>[^(),\s]+)\)")
_SPARK_FIELD = re.compile(r"(?P<transform>bucket|truncate)\((?P<width>\d+)\s*,\s*(?P<column>[^(),\s]+)\)")
_COLUMN = re.compile(r"[^\s(),\[\]]+")
_TRANSFORMS = ("identity", "year", "month", "day", "hour", "bucket[N]", "truncate[W]")
# Iceberg's transforms as its metadata spells them (void aside: it would drop the column's values).
_TRANSFORM = re.compile(r"identity|year|month|day|hour|(bucket|truncate)\[[1-9][0-9]*\]")
MAX_WIDTH = 2**31 - 1  # a bucket count and a truncate width are Iceberg ints
_TIME_FIELD = re.compile(r"(?:year|month|day|hour)\((?P<column>[^()]+)\)")


def parse_layout(
    partition: str | None = None, sort: str | None = None, properties: Iterable[str] = ()
) -> TableLayout:
    """The layout of `--partition SPEC --sort COLS --table-property k=v ...`; a one-line error
    naming the part that does not parse."""
    return TableLayout(
        partition=parse_partition(partition or ""),
        sort=parse_sort(sort or ""),
        properties=tuple(sorted(_distinct(parse_property(text) for text in properties).items())),
    )


def _distinct(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in pairs:
        if key in found:
            raise IcebenchError(f"--table-property {key}: given twice ({found[key]}, {value}); give it once")
        found[key] = value
    return found


def parse_partition(text: str) -> tuple[str, ...]:
    """`day(c017_ts), bucket(16, id)` as Iceberg's fields: ("day(c017_ts)", "bucket[16](id)")."""
    if text.strip().lower() in UNPARTITIONED:
        return ()
    fields = tuple(_partition_field(part.strip()) for part in _top_level_commas(text))
    if len(set(fields)) < len(fields):
        raise IcebenchError(f"--partition {text}: a field is given twice")
    # Iceberg refuses two time transforms of one column (Java's "Cannot add redundant partition").
    timed = [match["column"] for field in fields if (match := _TIME_FIELD.fullmatch(field))]
    if twice := sorted({column for column in timed if timed.count(column) > 1}):
        raise IcebenchError(f"--partition {text}: {twice[0]} has two time transforms; Iceberg allows one")
    return fields


def _partition_field(text: str) -> str:
    if match := _SPARK_FIELD.fullmatch(text):
        spelled, transform = match["transform"], f"{match['transform']}[{match['width']}]"
    elif match := ICEBERG_FIELD.fullmatch(text):
        spelled = match["transform"]
        transform = _SPARK_NAMES.get(spelled, spelled)
    else:
        match = None
    if match is not None:
        width = re.search(r"\[(\d+)\]", transform)
        if not _TRANSFORM.fullmatch(transform) or (width is not None and int(width[1]) > MAX_WIDTH):
            raise IcebenchError(
                f"--partition {text}: unknown transform {spelled} (known: {', '.join(_TRANSFORMS)}; "
                f"a bucket count or truncate width is 1 to {MAX_WIDTH})"
            )
        return f"{transform}({match['column']})"
    if _COLUMN.fullmatch(text):
        return f"identity({text})"
    raise IcebenchError(
        f"--partition {text!r}: not a partition field (spell it as day(ts), bucket[16](id) or "
        "bucket(16, id), truncate[4](name), or a column name)"
    )


def _top_level_commas(text: str) -> list[str]:
    """`a(b, c), d` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    if any(not part.strip() for part in parts) or depth != 0:
        raise IcebenchError(f"--partition {text!r}: an empty field or unbalanced parentheses")
    return parts


def parse_sort(text: str) -> tuple[str, ...]:
    """`c001_int32, c002_int64 desc` as ("c001_int32", "c002_int64 desc"): ascending by default."""
    if not text.strip():
        return ()
    columns = []
    for part in (part.split() for part in text.split(",")):
        if not part:
            raise IcebenchError(f"--sort {text!r}: an empty column between commas")
        if len(part) > 2 or (len(part) == 2 and part[1].lower() not in ("asc", "desc")):
            raise IcebenchError(f"--sort {text}: give columns, each with asc or desc after it if you like")
        if part[0] in (column.split()[0] for column in columns):
            raise IcebenchError(f"--sort {text}: {part[0]} is given twice")
        columns.append(part[0] if len(part) == 1 or part[1].lower() == "asc" else f"{part[0]} desc")
    return tuple(columns)


def parse_property(text: str) -> tuple[str, str]:
    """`k=v` of --table-property. Iceberg's properties are dotted names (`write.target-file-size-bytes`)
    and `format-version`; anything else is a typo that would change nothing, so it is refused."""
    key, equals, value = (part.strip() for part in text.partition("="))
    if not equals or not key or not value:
        raise IcebenchError(
            f"--table-property {text}: give key=value, e.g. {TARGET_FILE_SIZE_PROPERTY}=134217728"
        )
    if "." not in key and key != FORMAT_VERSION_PROPERTY:
        raise IcebenchError(f"--table-property {text}: {key} is not an Iceberg table property")
    if key == FORMAT_VERSION_PROPERTY and value not in FORMAT_VERSIONS:
        raise IcebenchError(f"--table-property {text}: Iceberg's format versions are 1, 2 and 3")
    check_write_property(text, key, value)
    return key, value


def partition_columns(layout: TableLayout) -> list[str]:
    """The columns a layout partitions on, each once, in its fields' order."""
    columns = (match["column"] for text in layout.partition if (match := ICEBERG_FIELD.fullmatch(text)))
    return list(dict.fromkeys(columns))
