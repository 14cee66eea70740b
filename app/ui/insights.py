"""Tag trends (weekly sparklines), and the table and sparkline helpers the Reads screen shares."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from server.services.tags import tally
from server.vault import Vault

from ..stats import sparkline
from .cells import Cell
from .keys import Table

WEEKS = 12
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


MARKS = {"rising": "↑ rising", "steady": "", "quiet": "· quiet"}
TREND_DAYS = 30  # the window the trend mark compares (list_tags' default)


def tag_trends(
    root: Path, today: date | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Per tag: weekly counts over 12 weeks, count in the last 30 days, mark; and its notes.
    Counts, trend and order are the server's own (`server.services.tags`, as list_tags gives them);
    only the weekly buckets are the dashboard's."""
    today = today or date.today()
    vault = Vault(root)
    try:
        entries = list(vault.entries().values())
        config = vault.config
    finally:
        vault.close()
    weekly: dict[str, list[int]] = defaultdict(lambda: [0] * WEEKS)
    for e in entries:
        age = (today - e.day).days
        if 0 <= age < WEEKS * 7:
            for t in e.doc.tags:
                weekly[t.casefold()][WEEKS - 1 - age // 7] += 1
    tallies = tally(entries, config, TREND_DAYS, today)
    rows: list[dict[str, Any]] = [
        {
            "tag": s.tag,
            "spark": sparkline(weekly[s.key]),
            "recent": s.recent,
            "total": s.count,
            "mark": MARKS[s.trend],
        }
        for s in tallies
    ]
    return rows, {s.tag: sorted(s.paths) for s in tallies}


class TagsScreen(Screen[tuple[str, list[str]] | None]):
    """Enter on a tag closes it with (the tag, its notes): the timeline then shows those."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        # `g` opened it and closes it, as `$`, `S` and `H` do theirs: before the list's `g` (top)
        Binding("g", "app.pop_screen", "Back", show=False, priority=True),
    ]

    def __init__(self, root: Path, today: date | None = None) -> None:
        super().__init__()
        self.root = root
        self.today = today
        self.rows, self.notes = tag_trends(root, today)

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled(f" Tag trends · last {WEEKS} weeks, newest on the right", "bold"),
            id="title",
        )
        with Horizontal():
            yield Table(id="tags", cursor_type="row", zebra_stripes=True)
            with Vertical(id="tag-notes-pane"):
                yield Static(id="tag-notes")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#tags", DataTable)
        fill(
            t,
            ["tag", f"weekly ({WEEKS} w)", "30 d", "all", "trend"],
            [[r["tag"], r["spark"], r["recent"], r["total"], r["mark"]] for r in self.rows],
            keys=[r["tag"] for r in self.rows],
        )
        t.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        tag = str(event.row_key.value)
        paths = self.notes.get(tag, [])
        self.query_one("#tag-notes", Static).update(
            Content.styled(f"#{tag} · {len(paths)} note{'' if len(paths) == 1 else 's'}\n", "bold")
            + Content.styled("enter shows them in the timeline\n", "$text-muted")
            + Content("\n".join(paths))
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        tag = str(event.row_key.value)
        self.dismiss((tag, self.notes.get(tag, [])))

    def reload(self) -> None:
        """The vault changed while this is open: the same table from the notes as they are now."""
        self._reload()

    @work(thread=True, exclusive=True, group="tags")
    def _reload(self) -> None:
        rows, notes = tag_trends(self.root, self.today)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._refill, rows, notes)

    def _refill(self, rows: list[dict[str, Any]], notes: dict[str, list[str]]) -> None:
        if (rows, notes) == (self.rows, self.notes) or not self.is_attached:
            return  # nothing new, or the screen has closed meanwhile
        table = self.query_one("#tags", DataTable)
        at = table.cursor_row
        self.rows, self.notes = rows, notes
        table.clear(columns=True)
        self.on_mount()  # fills the table from self.rows, as when the screen opened
        table.move_cursor(row=min(at, max(0, table.row_count - 1)))
