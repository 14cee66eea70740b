"""Filling a DataTable, the one way every screen's tables are filled: columns as wide as their
widest cell in terminal cells (a Chinese character takes two; `most` caps one), counts
right-aligned under right-aligned headings (a column is of counts when its first row holds an
int), text as given (a tool's indent under its measure kept), Content as it is (a note's label,
a sparkline), and the last row in bold when it is a total.

Each cell is a `cells.Cell` padded to its column: DataTable measures a Content cell as one
cell wide (every column was cut to its heading, `sys` for system-design), and a rich Text cell
is wrapped, split and justified again at every draw, most of a screen's drawing time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.style import Style as RichStyle
from rich.text import Text
from textual.content import Content
from textual.widgets import DataTable

from app.ui.widgets.cells import Cell

Value = Content | int | str
BOLD = RichStyle(bold=True)


def fill(
    table: DataTable[Any],
    headings: Sequence[str],
    rows: Sequence[Sequence[Value]],
    keys: Sequence[str] | None = None,
    most: int = 60,
    bold_last: bool = False,
) -> None:
    counts = [bool(rows) and isinstance(rows[0][i], int) for i in range(len(headings))]
    cells = [[_cell(v) for v in row] for row in rows]
    widths = []
    for i, heading in enumerate(headings):
        width = min(most, max([cell_len(heading), *(r[i].width for r in cells)]))
        table.add_column(Text(heading, justify="right" if counts[i] else "left"), width=width)
        widths.append(width)
    last = len(cells) - 1
    for n, row in enumerate(cells):
        style = BOLD if bold_last and n == last else None
        table.add_row(
            *(_padded(c, widths[i], counts[i], style) for i, c in enumerate(row)),
            key=keys[n] if keys else None,
        )


def _cell(value: Value) -> Cell:
    if isinstance(value, int):
        return Cell(f"{value:,}")
    if isinstance(value, Content):
        return Cell.of(value)
    return Cell(str(value))


def _padded(cell: Cell, width: int, right: bool, style: RichStyle | None) -> Cell:
    """A count padded on the left to its column (right-aligned), a styled cell (a bold total)
    to the column's width; other text and Content as they are."""
    if cell.content is not None or not (right or style):
        return cell
    pad = " " * max(0, width - cell.width)
    return Cell((pad + cell.plain if right else cell.plain + pad, style))


def refill(table: DataTable[Any], headings: Sequence[str], rows: Any, most: int = 60) -> None:
    """Fill the table again (columns too), the cursor kept on its row, or the last one."""
    at = table.cursor_row
    table.clear(columns=True)
    fill(table, headings, rows, most=most)
    if table.row_count:
        table.move_cursor(row=min(at, table.row_count - 1))
