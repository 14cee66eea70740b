"""The review screen's period: `p` cycles through the usual ones, `d` opens a box to type any
(a date, `3d`, `today` or a commit); esc closes it."""

from __future__ import annotations

from textual.widgets import Input

PERIODS = ("last", "today", "7d")  # what `p` cycles through


def next_period(since: str) -> str:
    at = PERIODS.index(since) if since in PERIODS else -1
    return PERIODS[(at + 1) % len(PERIODS)]


class SinceBox(Input):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            placeholder="since: YYYY-MM-DD, 3d, today or a commit (esc cancels)", id=id
        )

    def on_mount(self) -> None:
        self.display = False  # opened by `d`

    def ask(self, since: str) -> None:
        """Open, holding the period shown when it is not one of `p`'s."""
        self.value = "" if since in PERIODS else since
        self.display = True
        self.focus()
