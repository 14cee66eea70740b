"""A note's text with line numbers, one line marked and kept in view (Health's `o`: the note at
its broken link's line, or two near-duplicates one under the other)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from app.ui.widgets.lines import LinesView
from app.ui.widgets.wrapped import Wrapped
from server.notes.note import decode


class NoteBody(LinesView):
    """The note's lines, its marked line kept in view whenever the body is laid out again (a
    resize, the dialog's first layouts) until the owner scrolls it: placed once, after the
    first refresh, it could land before the dialog's last layout and stay at line 1 (audit 3
    N7, 80x24), and a resize to a smaller terminal left the line below the fold."""

    def __init__(self, at: int | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.at = at
        self._placed: int | None = None  # the scroll we set; another is the owner's

    def place(self) -> None:
        """The marked line three rows from the top (as far as the text goes)."""
        if not self.at or not self.size.height:
            return
        self._layout()  # the wrapped rows of each line, for the screen row of the marked one
        row = self._starts[min(self.at, len(self._starts) - 1) - 1]
        self.scroll_to(y=max(0, row - 3), animate=False, immediate=True)
        self._placed = round(self.scroll_y)

    def on_resize(self) -> None:
        super().on_resize()
        if self._placed is None or self._placed == round(self.scroll_y):
            self.call_after_refresh(self.place)  # once the new height is the one scrolled in


class NoteModal(ModalScreen[None]):
    """A note's text with line numbers, its finding's line marked and scrolled into view."""

    BINDINGS = [Binding("escape,q,o,enter", "screen.dismiss", "Close")]
    AUTO_FOCUS = "#dialog-body"
    DEFAULT_CSS = "NoteModal { align: center middle; }"  # the dialog shape of dashboard.tcss

    def __init__(self, title: str, lines: list[Content], at: int | None) -> None:
        super().__init__()
        self.title_text = title
        self.body = lines
        self.at = at

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            # wrapped by cells, between CJK characters: `…写作.md:19` never splits as `:1` / `9`
            yield Wrapped(Content.styled(self.title_text, "bold"), id="dialog-title")
            yield NoteBody(self.at, id="dialog-body")
            yield Static(
                Content("↑/↓ PgUp/PgDn scroll · esc closes"), id="dialog-foot", classes="hint"
            )

    def on_mount(self) -> None:
        view = self.query_one("#dialog-body", NoteBody)
        view.update(self.body)
        if self.at:
            self.call_after_refresh(view.place)


def note_lines(root: Path, path: str, at: int | None) -> list[Content]:
    try:
        text, _ = decode((root / path).read_bytes())
    except OSError as exc:
        return [Content.styled(f"cannot read {path}: {exc.strerror or exc}", "$text-error")]
    rows = text.split("\n")
    width = len(str(len(rows)))
    out = []
    for n, line in enumerate(rows, 1):
        number = Content.styled(f"{n:>{width}} ", "$text-muted")
        body = Content(line)
        out.append(number + (body.stylize("reverse") if n == at else body))
    return out
