"""The tag trends screen (`t`): weekly sparklines per tag; enter shows a tag's notes in the timeline."""

from __future__ import annotations

import contextlib
from datetime import date
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.services.tag_trends import WEEKS, tag_trends
from app.ui.widgets.keys import Table
from app.ui.widgets.path_list import PathList
from app.ui.widgets.table_fill import fill
from server.vault import Vault


class TagsScreen(Screen[tuple[str, list[str]] | None]):
    """Enter on a tag closes it with (the tag, its notes): the timeline then shows those."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        # `t` opened it and closes it, as `$`, `S` and `H` do theirs
        Binding("t", "app.pop_screen", "Back", show=False, priority=True),
    ]

    def __init__(self, vault: Vault, today: date | None = None) -> None:
        super().__init__()
        self.vault = vault  # the dashboard's (app.ui.navigation.Desk.vault)
        self.today = today
        self.rows, self.notes = tag_trends(vault, today)

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled(f" Tag trends · last {WEEKS} weeks, newest on the right", "bold"),
            id="title",
        )
        with Horizontal():
            yield Table(id="tags", cursor_type="row", zebra_stripes=True)
            with Vertical(id="tag-notes-pane"):
                yield Static(id="tag-notes")
                yield PathList(id="tag-paths")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#tags", DataTable)
        fill(
            t,
            ["tag", f"weekly ({WEEKS} w)", "30 d", "all", "trend"],
            [[r["tag"], r["spark"], r["recent"], r["total"], r["mark"]] for r in self.rows],
            keys=[r["tag"] for r in self.rows],
        )
        if not self.rows:  # an empty table and pane said nothing of why
            self.query_one("#tag-notes", Static).update(
                Content.styled("No tags yet.\n", "bold")
                + Content.styled(
                    "A note's tags are in its frontmatter (tags: [a, b]); "
                    "they show here as notes get them.",
                    "$text-muted",
                )
            )
        t.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        tag = str(event.row_key.value)
        paths = self.notes.get(tag, [])
        self.query_one("#tag-notes", Static).update(
            Content.styled(f"#{tag} · {len(paths)} note{'' if len(paths) == 1 else 's'}\n", "bold")
            + Content.styled("enter shows them in the timeline", "$text-muted")
        )
        self.query_one("#tag-paths", PathList).show(paths)  # one row each, never two alike

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        tag = str(event.row_key.value)
        self.dismiss((tag, self.notes.get(tag, [])))

    def reload(self) -> None:
        """The vault changed while this is open: the same table from the notes as they are now."""
        self._reload()

    @work(thread=True, exclusive=True, group="tags")
    def _reload(self) -> None:
        rows, notes = tag_trends(self.vault, self.today)
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
