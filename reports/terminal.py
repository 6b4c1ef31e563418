"""Tables that fit the terminal: a table wider than the screen becomes one block per row.

A row's leading text columns (what ran: scenario, writer, status) head its block; every other
cell follows as `header value` pairs, wrapped at the screen's edge. Nothing is truncated, so
`pyiceberg-fast-append` and `pyiceberg-fast-append-naive` stay two names."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

INDENT = 4  # a block's pairs, under its heading
PAIR_GAP = "  "
UNBOUNDED = 10**6  # a width to measure a table's unwrapped width against (rich clamps to the one given)


def rich_table(
    title: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Collection[int],
    *,
    markup: bool = False,
) -> Table:
    """A table whose `numeric` columns (by index) are right-aligned; the text columns before them
    name the row and are never wrapped, so a narrow terminal squeezes the numbers instead (and
    `as_blocks` heads a row's block with them). Cells are plain text unless `markup`."""
    table = Table(title=title, header_style="bold")
    first_numeric = min(numeric, default=len(headers))
    for index, header in enumerate(headers):
        table.add_column(
            header, justify="right" if index in numeric else "left", no_wrap=index < first_numeric
        )
    for row in rows:
        table.add_row(*(row if markup else (escape(cell) for cell in row)))
    return table


def fitted(renderable: RenderableType, console: Console) -> RenderableType:
    """`renderable` as is when it fits the console's width; a wider table as blocks."""
    if not isinstance(renderable, Table) or needed_width(renderable, console) <= console.width:
        return renderable
    return as_blocks(renderable, console.width)


def needed_width(table: Table, console: Console) -> int:
    """The table's width with names and figures whole and its free-text columns (left-aligned
    and wrappable: a verdict, a reason, a description) at their longest word: narrower, rich
    would cut names or break figures, or crop the table's right edge."""
    options = console.options.update_width(UNBOUNDED)
    natural = console.measure(table, options=options).maximum
    give = 0
    for column in table.columns:
        if column.justify == "left" and not column.no_wrap:
            spans = [console.measure(cell, options=options) for cell in [column.header, *column.cells]]
            widest = max(span.maximum for span in spans)
            give += widest - max(max(span.minimum for span in spans), column.min_width or 0)
    return natural - give


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


def _indented(line: Text) -> Padding:
    return Padding(line, (0, 0, 0, INDENT), expand=False)


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
