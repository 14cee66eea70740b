"""The review screen's list of notes: one row per note with AI changes, as wide as the screen
above the diff (every column readable: beside the diff, at 200 columns, the tools and clients
were cut to a word), its columns shared out again only when the width changed."""

from __future__ import annotations

from app.services.review import NoteSummary
from app.ui.widgets.keys import Table
from app.ui.widgets.review_list import fill_notes


class ReviewNotes(Table):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.fitted = 0  # the width the columns were shared out for

    def room(self) -> int:
        """The app's width: its own size is not laid out yet on the first fill."""
        return max(40, (self.app.size.width or 120) - 2)

    def fill(self, notes: list[NoteSummary], since: str) -> None:
        width = self.fitted = self.room()
        fill_notes(self, notes, width, since != "last")
        self.border_title = (
            None if notes else ("nothing to review" if since == "last" else "no AI changes")
        )

    def refit(self, notes: list[NoteSummary], since: str) -> bool:
        """The columns shared out again, only when the width changed (the first resize comes
        right after mounting, at the width the list was just filled for, and one change of
        size can come as two resizes); True when they were."""
        if self.room() == self.fitted:
            return False
        at = self.cursor_row
        self.fill(notes, since)
        self.put(at, len(notes))
        return True

    def show(self, notes: list[NoteSummary], since: str, keep: str | None) -> None:
        """Fill with these notes, the cursor on the note `keep` when it is listed, else on the
        row it was on."""
        at = self.cursor_row
        self.fill(notes, since)
        paths = [n.path for n in notes]
        self.put(paths.index(keep) if keep in paths else at, len(paths))

    def at(self, notes: list[NoteSummary]) -> NoteSummary | None:
        """The note under the cursor."""
        return notes[self.cursor_row] if 0 <= self.cursor_row < len(notes) else None

    def put(self, row: int, count: int) -> None:
        """The cursor on `row`, kept inside the `count` rows."""
        if count:
            self.move_cursor(row=min(max(row, 0), count - 1), animate=False)

    def move(self, delta: int) -> None:
        if self.row_count:
            self.move_cursor(row=max(0, min(self.row_count - 1, self.cursor_row + delta)))

    def next_unreviewed(self, notes: list[NoteSummary]) -> bool:
        """The cursor on the next note not reviewed, round the end; False when none is."""
        n = len(notes)
        for step in range(1, n + 1):
            at = (self.cursor_row + step) % n
            if not notes[at].reviewed:
                self.move_cursor(row=at)
                return True
        return False
