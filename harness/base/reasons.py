"""A failed check's reason is one short line that names what differs, whatever the table's size.

Error messages of the libraries under test may print whole schemas (pyarrow's "Target schema's
field names are not matching ...: [100 names], [101 names]"): such lists are told by what differs
between them, long ones are cut, and the whole reason is held to REASON_CHARS. The full message
stays in the run's `error` and its worker log.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

# A reason is one line of the failed-checks table: room for a few names and a number or two.
REASON_CHARS = 300
# Names listed before "+N more".
NAMES_SHOWN = 3
# A quoted-strings list literal as Python's repr prints it: ['a', 'b'] or ["a", "b"].
_QUOTED = r"""(?:'[^'\\]*'|"[^"\\]*")"""
_NAME_LIST = re.compile(rf"\[{_QUOTED}(?:,\s*{_QUOTED})*\]")
# Two such lists printed side by side, as pyarrow does: [first], [second] (or "and", "vs").
_LIST_PAIR = re.compile(rf"({_NAME_LIST.pattern})(\s*(?:,|and|vs\.?)\s*)({_NAME_LIST.pattern})")


def first_few(problems: Sequence[str], shown: int = NAMES_SHOWN) -> str | None:
    """One line for a check's reason: the first problems and how many more (None: no problem)."""
    if not problems:
        return None
    more = f" (+{len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more


def counted(count: int, noun: str) -> str:
    """`1 key`, `990,000 keys`: a count as a reason reads it."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def some_names(names: Sequence[str], shown: int = NAMES_SHOWN) -> str:
    """`a, b, c +4 more`: a few names of a list that may be long."""
    more = f" +{len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def short_path(path: str) -> str:
    """A file as a reason names it: its folder and name inside the table (`data/0000-...parquet`),
    not the warehouse's whole URI, which is the same for every file of the run."""
    return "/".join(path.rstrip("/").split("/")[-2:])


def short_reason(text: str, limit: int = REASON_CHARS) -> str:
    """`text` as one short line: pairs of name lists replaced by their difference, long lists cut,
    whitespace folded, at most `limit` characters."""
    text = _LIST_PAIR.sub(lambda match: _list_difference(match.group(1), match.group(3)), text)
    return clipped(_NAME_LIST.sub(lambda match: _cut_list(_names(match.group(0))), text), limit)


def clipped(text: str, limit: int) -> str:
    """`text` with its whitespace folded into one line of at most `limit` characters; a cut one
    ends at a word, with `…`."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    return (head.rsplit(" ", 1)[0] if " " in head else head) + "…"


def _names(literal: str) -> list[str]:
    return [str(name) for name in ast.literal_eval(literal)]


def _list_difference(first_literal: str, second_literal: str) -> str:
    """Two name lists as what tells them apart: the names only one has, else the first position
    where their orders part."""
    first, second = _names(first_literal), _names(second_literal)
    only_first = [name for name in first if name not in set(second)]
    only_second = [name for name in second if name not in set(first)]
    counts = f"[{len(first)} names] vs [{len(second)} names]"
    if only_first or only_second:
        parts = [f"only in the first: {some_names(only_first)}"] if only_first else []
        parts += [f"only in the second: {some_names(only_second)}"] if only_second else []
        return f"{counts}, {'; '.join(parts)}"
    if first == second:
        return f"[{len(first)} names] twice, the same"
    parted = (i for i, (one, other) in enumerate(zip(first, second, strict=False)) if one != other)
    if (position := next(parted, None)) is None:
        return f"{counts}, the same names, some repeated"
    parting = f"at {position}: {first[position]} vs {second[position]}"
    return f"{counts}, the same names in another order ({parting})"


def _cut_list(names: list[str]) -> str:
    if len(names) <= NAMES_SHOWN + 1:
        return "[" + ", ".join(names) + "]"
    return f"[{len(names)} names: {some_names(names)}]"
