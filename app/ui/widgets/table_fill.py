"""Filling a DataTable with columns measured in terminal cells: every insight screen's tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.content import Content
from textual.widgets import DataTable

from app.ui.widgets.cells import Cell

Value = Content | int | str


def fill(
    table: DataTable[Any],
    headings: Sequence[str],
    rows: Sequence[Sequence[Value]],
    keys: Sequence[str] | None = None,
    most: int = 60,
) -> None:
    """Columns as wide as their widest cell, measured in terminal cells (a Chinese character
    takes two). DataTable measures a Content cell as one cell wide, so without explicit widths
    every column was cut to its heading (`sys` for system-design). `most` caps one column."""
    cells = [
        [
            c if isinstance(c, Content) else Content(f"{c:,}" if isinstance(c, int) else c)
            for c in row
        ]
        for row in rows
    ]
    for i, heading in enumerate(headings):
        width = max([Content(heading).cell_length, *(r[i].cell_length for r in cells)])
        table.add_column(Text(heading), width=min(most, width))
    for n, row in enumerate(cells):
        table.add_row(*map(Cell.of, row), key=keys[n] if keys else None)
