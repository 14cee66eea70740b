"""The small dialog `c` opens in review and in the note view: one line of feedback for the AI."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

QUOTE_LINES = 8  # of the lines a comment is about, the dialog shows this many


class CommentModal(ModalScreen[str | None]):
    """One line of feedback for the AI about `about` (a hunk, a note). Enter saves, esc
    cancels; an empty comment is no comment."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]
    AUTO_FOCUS = "#comment-text"
    DEFAULT_CSS = """
    CommentModal { align: center middle; }
    CommentModal #comment-quote { height: auto; max-height: 10; color: $text-muted; }
    """

    def __init__(self, about: str, quote: list[Content]) -> None:
        super().__init__()
        self.about = about
        self.quote = quote[:QUOTE_LINES] + (
            [Content.styled(f"… {len(quote) - QUOTE_LINES} more lines", "italic")]
            if len(quote) > QUOTE_LINES
            else []
        )

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(
                Content.styled(f"Feedback for the AI on {self.about}", "bold"), id="dialog-title"
            )
            yield Static(Content("\n").join(self.quote), id="comment-quote")
            yield Input(placeholder="what should the AI know or change?", id="comment-text")
            yield Static(
                Content("enter saves (the AI sees it in get_context) · esc cancels"),
                id="dialog-foot",
                classes="hint",
            )

    @on(Input.Submitted, "#comment-text")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(text or None)
