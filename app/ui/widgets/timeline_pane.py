"""The main screen's timeline side: the rows the filters let through, the cursor put on the
newest AI write at launch and on the commit an owner action made once its row shows, and the
filters in force kept in sight in the timeline's title."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from app.services.feed import Row
from app.services.view_rows import Filters
from app.ui.widgets.cells import plural
from app.ui.widgets.timeline import Timeline


class TimelinePane(Timeline):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._placed = False  # the cursor was put on the newest AI write at launch
        self._placing: str | None = None  # the row it was put on while there was none yet
        self._select_next: str | None = None  # the row of a commit an owner action just made

    def fill(self, rows: Sequence[Row], filters: Filters, *, to_top: bool = False) -> None:
        """Show these rows; the cursor stays on the row it was on, or with `to_top` (the
        filters changed) goes to the newest match."""
        self.set_rows(rows)
        if to_top:
            self.move_to(0)
            self.scroll_to(y=0, animate=False, immediate=True)
        elif not self._placed and rows:
            self._place(rows)
        self._select_made()
        self._show_filters(filters, rows)

    def _place(self, rows: Sequence[Row]) -> None:
        """At launch the cursor goes to the newest AI write (not "server started"). With none
        yet (a demo, a new vault) it is on the newest row, follows the newest row, and goes to
        the first AI write that lands above it, as it would have at launch (an older one read
        in the background, below it, does not take it). Until the owner moves it."""
        if self._placing is not None and (
            self.current is None or self.current.key != self._placing
        ):
            self._placed = True  # the owner moved the cursor: it stays where they put it
            return
        newest = next((i for i, r in enumerate(rows) if r.kind == "ai"), None)
        if newest is not None and (self._placing is None or newest < self.cursor):
            self._placed = True
            at = newest
        else:
            at = 0
        self._placing = rows[at].key
        self.move_to(at)

    def _show_filters(self, f: Filters, rows: Sequence[Row]) -> None:
        """The filters in force stay in sight (the timeline's title) while they are on."""
        if not f.active:
            self.border_title = None
            return
        count = plural(len(rows), "row") if rows else "no matches"
        self.border_title = Content.styled(
            f" {f.describe()} · {count} (esc clears) ", "bold $text-warning"
        )

    def select_when_shown(self, key: str) -> None:
        """Put the cursor on this row (the commit an owner action just made) as soon as it is
        shown: the owner's next key, r to undo it, acts on what they made."""
        self._select_next = key
        self._select_made()  # the poll may have shown its row already

    def _select_made(self) -> None:
        if self._select_next is not None and (at := self.index_of(self._select_next)) is not None:
            self._select_next = None
            self.move_to(at)
