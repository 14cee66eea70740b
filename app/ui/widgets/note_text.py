"""The note view's text pane: the note as it is now, a row per line with its number, `AI` where the
AI wrote it (by `git blame`) and `✎` where the owner has not committed it yet; a wrapped line
hangs under its text, not under its number."""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content

from app.services.note_view import NoteView
from app.ui.widgets.lines import LinesView

UNSAVED = "0" * 40  # git blame's commit for a line not committed yet
AI_MARK = "bold $text-primary"
AI_LINE = "on $primary 12%"


class NoteText(LinesView):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
    ]

    def show(self, view: NoteView) -> None:
        """The note; a line wider than the pane wraps under its text, not under its number."""
        self.hang_at = gutter(view)
        self.update(note_lines(view))


def gutter(view: NoteView) -> int:
    """The characters before each line's text: its number, a space, the mark and its space."""
    return len(str(len(view.blame))) + 4


def note_lines(view: NoteView) -> list[Content]:
    """The note, one row per line: its number, `AI` where the AI wrote it (`✎` where the owner
    has not saved it to git yet), then the text."""
    ai = {c.sha for c in view.history if c.is_ai}
    width = gutter(view) - 4
    out = []
    for n, (sha, text) in enumerate(view.blame, 1):
        number = Content.styled(f"{n:>{width}} ", "$text-muted")
        if sha in ai:
            line = number + Content.styled("AI ", AI_MARK) + Content(text).stylize(AI_LINE)
        elif sha == UNSAVED:
            line = number + Content.styled("✎  ", "$text-secondary") + Content(text)
        else:
            line = number + Content("   ") + Content(text)
        out.append(line)
    if not out:
        out.append(Content.styled("(the note is empty or gone)", "italic"))
    return out
