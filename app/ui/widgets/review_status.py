"""The review screen's status line: what the last action did, or why it did nothing, in words.
Hidden while it says nothing (an empty line is one more line of the diff); it remembers the
note it was said under, so the screen clears it when the owner moves to another note."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

STYLES = {"error": "bold $text-error", "warning": "bold $text-warning"}


class ReviewStatus(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # the note under the cursor when it was last written (a refusal about one note
        # stayed under the next)
        self.said_at: str | None = None

    def on_mount(self) -> None:
        self.display = False  # shown when it says something

    def say(self, text: str, severity: str = "", about: str | None = None) -> None:
        self.update(Content.styled(text, STYLES.get(severity, "")))
        self.display = bool(text)
        self.said_at = about if text else None
