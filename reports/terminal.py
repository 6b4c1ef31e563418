"""Tables that fit the terminal: a table wider than the screen is narrowed, its headers kept.

Step by step, each only while the table is still too wide: a compact frame (no outer border, two
spaces between columns, headers wrapped at their spaces); a leading column that only repeats
(the scenario of a summary's runs) folded into a bold heading row per value; long words that
recur in cells abbreviated (`unsupported` as `unsup.`); then whole columns dropped by priority,
the least important first, and named under the table. A dropped free-text column (a writer's
description) follows the table as a line per row instead, so none of its text is lost. Names are
never cut, so `pyiceberg-fast-append` and `pyiceberg-fast-append-naive` stay two names. Only a
screen too narrow for a row's name itself gets one block per row (`as_blocks`)."""

from __future__ import annotations

import re
import textwrap
import weakref
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.style import StyleType
from rich.table import Column, Table
from rich.text import Text

INDENT = 4  # a block's pairs, under its heading
PAIR_GAP = "  "
UNBOUNDED = 10**6  # a width to measure a table's unwrapped width against (rich clamps to the one given)
# Whole cells a narrow table shortens: words that recur down a column and set its width.
ABBREVIATIONS = {"unsupported": "unsup.", "not comparable (writer changed)": "writer changed"}
# The columns a table keeps longest when narrowed (keep_first); weak, as tables are short-lived.
_KEPT: weakref.WeakKeyDictionary[Table, tuple[str, ...]] = weakref.WeakKeyDictionary()


def rich_table(
    title: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Collection[int],
    *,
    markup: bool = False,
    keep: Sequence[str] = (),
) -> Table:
    """A table whose `numeric` columns (by index) are right-aligned; the text columns before them
    name the row and are never wrapped, so a narrow terminal squeezes the numbers instead (a table
    without numbers: all but its last column, a reason that may wrap). Cells are plain text unless
    `markup`; `keep`: the headers a narrow terminal drops last (keep_first)."""
    table = Table(title=title, header_style="bold")
    first_numeric = min(numeric, default=len(headers) - 1)
    for index, header in enumerate(headers):
        table.add_column(
            header, justify="right" if index in numeric else "left", no_wrap=index < first_numeric
        )
    for row in rows:
        table.add_row(*(row if markup else (escape(cell) for cell in row)))
    return keep_first(table, *keep)


def keep_first(table: Table, *headers: str) -> Table:
    """Says which columns a too-narrow terminal drops last, the first named last of all; the
    columns not named go before them, the rightmost first."""
    if headers:
        _KEPT[table] = headers
    return table


def fitted(renderable: RenderableType, console: Console) -> RenderableType:
    """`renderable` as is when it fits the console's width; a wider table narrowed (squeezed)."""
    if not isinstance(renderable, Table) or needed_width(renderable, console) <= console.width:
        return renderable
    return squeezed(renderable, console)


def needed_width(table: Table, console: Console) -> int:
    """The table's width with names and figures whole and its free-text columns (left-aligned
    and wrappable: a verdict, a reason, a description) at their longest word: narrower, rich
    would cut names or break figures, or crop the table's right edge."""
    options = console.options.update_width(UNBOUNDED)
    natural = console.measure(table, options=options).maximum
    give = 0
    for column in table.columns:
        if _free_text(column):
            spans = [console.measure(cell, options=options) for cell in [column.header, *column.cells]]
            widest = max(span.maximum for span in spans)
            give += widest - max(max(span.minimum for span in spans), column.min_width or 0)
    return natural - give


@dataclass
class _Shape:
    """A table being narrowed: its columns (empty: their cells are `cells`, a list per column),
    the rows' looks, and the columns it dropped."""

    columns: list[Column]
    cells: list[list[RenderableType]]
    row_styles: list[StyleType | None]
    sections: list[bool]  # a line (a section's end) after the row
    headings: list[str | None]  # a folded leading value, on the row that starts its group
    dropped: tuple[int, ...] = ()  # indexes into `columns`, in the order they were dropped

    def but(self, columns: list[Column], cells: list[list[RenderableType]]) -> _Shape:
        return _Shape(columns, cells, self.row_styles, self.sections, self.headings, self.dropped)


def squeezed(table: Table, console: Console) -> RenderableType:
    """The table narrowed to the console's width, step by step (see the module's docstring)."""
    width = console.width
    cells = [list(column.cells) for column in table.columns]
    shape = _Shape(
        columns=[
            _wrapped_header(column, own, console) for column, own in zip(table.columns, cells, strict=True)
        ],
        cells=cells,
        row_styles=[row.style for row in table.rows],
        sections=[row.end_section for row in table.rows],
        headings=[None] * table.row_count,
    )
    for step in (_folded, _abbreviated):
        if _width(table, shape, console) <= width:
            return _rendered(table, shape, width)
        shape = step(shape)
    for index in _drop_order(shape.columns, _KEPT.get(table, ())):
        if _width(table, shape, console) <= width:
            break
        shape.dropped += (index,)
    else:
        if _width(table, shape, console) > width:  # not even a row's name fits: a block per row
            return as_blocks(table, width)
    return _rendered(table, shape, width)


def _free_text(column: Column) -> bool:
    return column.justify == "left" and not column.no_wrap


def _name(column: Column) -> str:
    """A column's header on one line (a wrapped one joined again: `local-` and `services` as one)."""
    return re.sub(r"(?<=-)\n", "", str(column.header)).replace("\n", " ")


def _plain(cell: RenderableType) -> str:
    return _text(cell).plain if isinstance(cell, str | Text) else ""


def _wrapped_header(column: Column, cells: Sequence[RenderableType], console: Console) -> Column:
    """An empty copy of the column, its header, where wider than every cell, on lines of its own
    words (`peak` over `rss`), so that the header no longer sets the column's width; only free
    text wraps (rich would otherwise squeeze the figures of a right-aligned column too)."""
    copy, header = column.copy(), str(column.header)
    copy.no_wrap = not _free_text(column)  # a number or a name is never broken, however narrow
    options = console.options.update_width(UNBOUNDED)
    widest = max((console.measure(cell, options=options).maximum for cell in cells), default=0)
    if len(header) > widest and "\n" not in header:
        width = max(widest, *(len(word) for word in header.split()))  # `a long` over `figure`
        copy.header = "\n".join(textwrap.wrap(header, width=width, break_long_words=False))
    return copy


def _folded(shape: _Shape) -> _Shape:
    """The first column as heading rows, where its values run down the table (each value on two
    rows or more on average): the scenario over its writers' runs."""
    values = [_plain(cell) for cell in shape.cells[0]]
    runs = {index for index, value in enumerate(values) if index == 0 or value != values[index - 1]}
    if not values or len(shape.columns) < 2 or not shape.columns[0].no_wrap or len(runs) * 2 > len(values):
        return shape
    headings = [values[index] if index in runs else None for index in range(len(values))]
    return _Shape(shape.columns[1:], shape.cells[1:], shape.row_styles, shape.sections, headings)


def _abbreviated(shape: _Shape) -> _Shape:
    """Cells that are one of ABBREVIATIONS, shortened in their own style."""

    def short(cell: RenderableType) -> RenderableType:
        if not isinstance(cell, str | Text) or (text := _text(cell)).plain not in ABBREVIATIONS:
            return cell
        style = text.spans[0].style if text.spans else text.style
        return Text(ABBREVIATIONS[text.plain], style=style)

    return shape.but(shape.columns, [[short(cell) for cell in cells] for cells in shape.cells])


def _drop_order(columns: Sequence[Column], kept: Sequence[str]) -> Iterator[int]:
    """The indexes of the columns to drop, the least important first: those not named in `kept`,
    the rightmost first, then the named ones, the last named first. The first column (what names
    the row) is never dropped."""
    named = {header: rank for rank, header in enumerate(kept)}
    headers = [_name(column) for column in columns]
    yield from (i for i in reversed(range(1, len(columns))) if headers[i] not in named)
    yield from sorted(
        (i for i in range(1, len(columns)) if headers[i] in named), key=lambda i: -named[headers[i]]
    )


def _compact(source: Table, shape: _Shape) -> Table:
    """The shape's columns in a compact frame: a rule under the headers, two spaces between
    columns, no outer border; a folded value as a bold row of its own above its group."""
    shown = [index for index in range(len(shape.columns)) if index not in shape.dropped]
    table = Table(
        *(shape.columns[index].copy() for index in shown),
        title=source.title,
        caption=source.caption,
        header_style=source.header_style,
        title_style=source.title_style,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    for row in range(len(shape.sections)):
        if (heading := shape.headings[row]) is not None:
            table.add_row(Text(heading, style="bold"), *[""] * (len(shown) - 1))
        cells = [shape.cells[index][row] for index in shown]
        table.add_row(*cells, style=shape.row_styles[row], end_section=shape.sections[row])
    return table


def _width(source: Table, shape: _Shape, console: Console) -> int:
    return needed_width(_compact(source, shape), console)


def _rendered(source: Table, shape: _Shape, width: int) -> RenderableType:
    """The compact table, then what did not fit: each dropped free-text column as a line per row
    (headed by the row's name), and the names of the other dropped columns."""
    parts: list[RenderableType] = [_compact(source, shape)]
    names = _row_names(shape)
    dropped = sorted(shape.dropped)
    for index in (index for index in dropped if _free_text(shape.columns[index])):
        listing = Table.grid(padding=(0, 2, 0, 0))
        listing.title, listing.title_justify = _name(shape.columns[index]), "left"
        listing.title_style = "bold"
        listing.add_column(style="bold", no_wrap=True)
        listing.add_column()
        for name, cell in zip(names, shape.cells[index], strict=True):
            if _plain(cell).strip() not in ("", "-"):
                listing.add_row(name, cell)
        parts.append(listing)
    if others := [_name(shape.columns[i]) for i in dropped if not _free_text(shape.columns[i])]:
        parts.append(Text(f"not shown in {width} columns: {', '.join(others)}", style="dim"))
    return Group(*parts) if len(parts) > 1 else parts[0]


def _row_names(shape: _Shape) -> list[str]:
    """What names each row: its folded value, if any, and its first cell."""
    names, heading = [], ""
    for row, first in enumerate(shape.cells[0]):
        heading = shape.headings[row] or heading
        names.append(" ".join(part for part in (heading, _plain(first)) if part))
    return names


def as_blocks(table: Table, width: int) -> Group:
    """The table's title, then per row a bold line of its lead cells and its other cells as
    `header value` pairs, at most `width` characters a line."""
    lead = lead_columns(table.columns)
    cells = [list(column.cells) for column in table.columns]
    lines: list[RenderableType] = []
    if table.title:
        lines.append(Text.from_markup(str(table.title), style="bold italic"))
    for row in range(table.row_count):
        heading = Text("  ").join(_text(cells[index][row]) for index in range(lead))
        heading.stylize("bold")
        lines.append(heading)
        pairs = [
            Text.assemble((str(column.header), "dim"), " ", _text(cells[index][row]))
            for index, column in enumerate(table.columns)
            if index >= lead and _text(cells[index][row]).plain not in ("", "-")
        ]
        # Padded, a pair longer than a line folds under the others, not under the heading.
        lines.extend(
            Padding(line, (0, 0, 0, INDENT), expand=False) for line in _wrapped(pairs, width - INDENT)
        )
    return Group(*lines)


def lead_columns(columns: list[Column]) -> int:
    """How many columns name the row: the leading unwrapped ones (at least one, never all)."""
    lead = 0
    while lead < len(columns) - 1 and columns[lead].no_wrap:
        lead += 1
    return max(lead, 1)


def _text(cell: object) -> Text:
    """A cell as one line of styled text (a cell of two lines, `1.2 → 1.3` over `1.08x`, joined)."""
    if isinstance(cell, Text):
        text = cell
    else:
        text = Text.from_markup(str(cell)) if isinstance(cell, str) else Text(str(cell))
    return Text(" ").join(text.split("\n")) if "\n" in text.plain else text


def _wrapped(pairs: Iterable[Text], width: int) -> Iterator[Text]:
    """Pairs joined on lines, a new line where the next would pass `width`; a pair longer than
    a line gets one of its own."""
    line = Text()
    for pair in pairs:
        if line and line.cell_len + len(PAIR_GAP) + pair.cell_len > width:
            yield line
            line = Text()
        if line:
            line.append(PAIR_GAP)
        line.append_text(pair)
    if line:
        yield line
