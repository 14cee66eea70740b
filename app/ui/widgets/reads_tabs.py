"""The Reads screen's tabs that need the vault: the notes read most, the notes not read in N
days, and the get_context preview with its changes since the owner last marked it reviewed.

A tab's widgets are made when it is first shown (`make`): laying out and filling every tab's
tables at once (thousands of rows of notes) kept the screen from opening for seconds on a big
vault. A tab once made is drawn again like the shown one."""

from __future__ import annotations

import contextlib
from typing import Any

from textual.content import Content
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import DataTable, Static, TabPane

from app.services.context_preview import Preview
from app.ui.widgets.cells import Distinct, note_label, others_width, plural
from app.ui.widgets.keys import Table
from app.ui.widgets.lines import LinesView
from app.ui.widgets.read_cells import (
    clients_cell,
    clients_column,
    label_width,
    scrollbar,
    share,
    when,
)
from app.ui.widgets.table_fill import refill
from server.services.reads import Reads


def waiting(failure: str, what: str) -> Content:
    """What a tab says before its figures are in: what it waits for, or why they never came."""
    return Content(f" could not read the vault: {failure}" if failure else what)


class LazyTab(TabPane):
    """A tab whose widgets are made when it is first shown."""

    def widgets(self, failure: str) -> list[Widget]:
        raise NotImplementedError

    async def make(self, failure: str) -> None:
        await self.mount_all(self.widgets(failure))

    def failed(self, said: Content) -> None:
        """The vault could not be read: said where the figures would be."""
        raise NotImplementedError


class NotesTab(LazyTab):
    """A list of notes under a caption (Most read, Not read), its table id the tab's name."""

    def __init__(self, title: str, list_id: str) -> None:
        super().__init__(title, id=f"tab-{list_id}")
        self.list_id = list_id

    def widgets(self, failure: str) -> list[Widget]:
        return [
            Static(
                waiting(failure, " reading the vault…"),
                classes="caption",
                id=f"{self.list_id}-caption",
            ),
            Table(id=self.list_id, cursor_type="row", zebra_stripes=True),
        ]

    def failed(self, said: Content) -> None:
        with contextlib.suppress(NoMatches):  # not made yet: it says it when made
            self.query_one(f"#{self.list_id}-caption", Static).update(said)

    def caption(self, text: str) -> None:
        self.query_one(f"#{self.list_id}-caption", Static).update(Content(text))

    def table(self) -> DataTable[Any]:
        return self.query_one(f"#{self.list_id}", DataTable)


class MostReadTab(NotesTab):
    def draw(self, r: Reads, year: int) -> int:
        """The notes read most; the width their column was drawn in."""
        self.caption(
            f" {plural(len(r.most), 'note')} read, most first · a read's tokens are shared "
            "by the notes it named"
            if r.most
            else " No note of the vault has been read yet (the journal has no read of one)."
        )
        headings = ["reads", "≈ tokens", "last read"]
        rows: list[list[Any]] = [[n.reads, round(n.tokens), when(n.last, year)] for n in r.most]
        size = self.app.size
        note, client = share(
            size.width,
            others_width(headings, rows) + 2 + scrollbar(size.height, len(rows)),  # the margin 2
            max((label_width(n.path) for n in r.most), default=0),
            [clients_cell(n.clients) for n in r.most],
        )
        names = Distinct.notes(n.path for n in r.most)  # two notes never alike
        whos = clients_column([n.clients for n in r.most], client)  # nor two clients
        refill(
            self.table(),
            ["note", *headings, "clients"],
            [
                [note_label(n.path, note, cuts=names), *row, who]
                for n, row, who in zip(r.most, rows, whos, strict=True)
            ],
            most=max(note, 40),
        )
        self.table().display = bool(r.most)
        return note


class UnreadTab(NotesTab):
    def draw(self, r: Reads, year: int) -> int:
        """The notes not read in the days asked; the width their column was drawn in."""
        never = sum(1 for u in r.unread if u.last is None)
        self.caption(
            f" {plural(len(r.unread), 'note')} of {r.notes:,} not read in {r.days} days "
            f"({never:,} never) · + − change the days"
            if r.unread
            else f" Every one of the {plural(r.notes, 'note')} was read in the last "
            f"{r.days} days · + − change the days"
        )
        self.table().display = bool(r.unread)
        headings = ["last read", "modified"]
        rows: list[list[Any]] = [[when(u.last, year), f"{u.modified:%Y-%m-%d}"] for u in r.unread]
        size = self.app.size
        others = others_width(headings, rows) + 2 + scrollbar(size.height, len(rows))
        note, _ = share(size.width, others, 0, [])
        names = Distinct.notes(u.path for u in r.unread)  # two notes never alike
        refill(
            self.table(),
            ["note", *headings],
            [
                [note_label(u.path, note, cuts=names), *row]
                for u, row in zip(r.unread, rows, strict=True)
            ],
            most=max(note, 40),
        )
        return note


class ContextTab(LazyTab):
    """What get_context gives a new conversation now, and what changed since it was marked
    reviewed; wrapped by cells, between Chinese characters too, and only where it is in sight."""

    def widgets(self, failure: str) -> list[Widget]:
        return [LinesView(id="context-body")]  # its text is set once it is mounted

    async def make(self, failure: str) -> None:
        await super().make(failure)
        self.body().update(waiting(failure, "building the context…"))

    def body(self) -> LinesView:
        return self.query_one("#context-body", LinesView)

    def failed(self, said: Content) -> None:
        with contextlib.suppress(NoMatches):  # not made yet: it says it when made
            self.body().update(said)

    def draw(self, p: Preview) -> None:
        seen = (
            f"last marked reviewed {p.reviewed_at:%Y-%m-%d %H:%M}"
            if p.reviewed_at
            else "never marked reviewed"
        )
        state = (
            "changed since" if p.changed and p.reviewed_at else "unchanged" if not p.changed else ""
        )
        parts = [
            Content.styled(
                f"What a new conversation receives now: {plural(p.chars, 'char')} ≈ "
                f"{plural(p.tokens, 'token')}",
                "bold",
            ),
            Content(f"{seen}{' · ' + state if state else ''} · m marks it reviewed"),
            Content(""),
        ]
        diff = p.diff() if p.reviewed is not None else []
        if diff:
            parts.append(Content.styled("Changes since it was reviewed", "bold"))
            for line in diff:
                style = (
                    "$text-success"
                    if line.startswith("+")
                    else "$text-error"
                    if line.startswith("-")
                    else "$text-muted"
                    if line.startswith("@@")
                    else ""
                )
                parts.append(Content.styled(line, style) if style else Content(line))
            parts += [Content(""), Content.styled("The whole context", "bold")]
        parts += [Content(line) for line in p.lines]
        self.body().update(parts)
