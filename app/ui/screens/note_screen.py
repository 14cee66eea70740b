"""The note view: a note as it is now with the AI's lines marked (`git blame` by author), every
commit that touched it (the AI's and the owner's), and the share of its lines the AI wrote.
`e` opens it in `$EDITOR` (the dashboard steps aside meanwhile), `o` in Obsidian."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.services.actions import ActionError
from app.services.feedback import Feedback, add_feedback, list_feedback
from app.services.history import Commit
from app.services.note_view import NoteView, note_view
from app.ui.dialogs.comment import CommentModal
from app.ui.widgets.cells import cut_middle, plural
from app.ui.widgets.editor import edit_note, open_in_obsidian
from app.ui.widgets.feedback_lines import feedback_lines
from app.ui.widgets.keys import Table
from app.ui.widgets.note_text import NoteText
from app.ui.widgets.table_fill import fill


def who(c: Commit) -> str:
    """Who made a commit, in a few words: the AI and its client, or you (and your action).
    The AI's tool is the subject's first word, in the column beside."""
    if c.is_ai:
        return f"AI · {c.client or '?'}"
    return f"you: {c.action}" if c.action else "you"


def what(c: Commit, path: str) -> str:
    """A commit's subject without this note's path (the screen's title already says it), so
    at 80 columns the heading it wrote to shows, not the path's start."""
    return c.subject.replace(f": {path}", "", 1)


class NoteScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    AUTO_FOCUS = "#note-text"
    DEFAULT_CSS = """
    NoteScreen #note-title { height: auto; background: $panel; }
    NoteScreen #note-body { height: 1fr; }
    NoteScreen #note-text { width: 3fr; border: round $panel; padding: 0 1; }
    NoteScreen #note-history { width: 2fr; border: round $panel; }
    NoteScreen #note-text:focus, NoteScreen #note-history:focus { border: round $primary; }
    NoteScreen.-narrow #note-body { layout: vertical; }
    NoteScreen.-narrow #note-text { width: 1fr; height: 3fr; }
    NoteScreen.-narrow #note-history { width: 1fr; height: 2fr; }
    NoteScreen #note-status { height: auto; padding: 0 1; }
    NoteScreen #note-feedback { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("e", "edit", "Edit", tooltip="open the note in $EDITOR"),
        Binding("o", "obsidian", "Obsidian", tooltip="open the note in Obsidian"),
        Binding("c", "comment", "Comment", tooltip="comment on this note for the AI (feedback)"),
        Binding("tab", "app.focus_next", "Pane", show=False, tooltip="the text / the history"),
    ]

    def __init__(self, root: Path, path: str) -> None:
        super().__init__()
        self.root = root
        self.path = path
        self.view: NoteView | None = None
        self.feedback: list[Feedback] = []  # open and answered, on this note

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(f" {self.path}", "bold"), id="note-title")
        yield Static(id="note-feedback")
        with Horizontal(id="note-body"):
            yield NoteText(id="note-text")
            yield Table(id="note-history", cursor_type="row", zebra_stripes=True)
        yield Static(id="note-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#note-feedback", Static).display = False  # until there is some
        self.query_one("#note-text", NoteText).border_title = "the note now · AI lines marked"
        self.query_one("#note-history", DataTable).border_title = "history"
        self.load()

    @work(thread=True, exclusive=True, group="note")
    def load(self) -> None:
        view = note_view(self.root, self.path)
        feedback = [i for i in list_feedback(self.root) if i.path == self.path]
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._loaded, view, feedback)

    def _loaded(self, view: NoteView, feedback: list[Feedback] | None = None) -> None:
        if not self.is_attached:
            return
        self.view = view
        self.feedback = feedback or []
        self._show_feedback()
        share = f"{view.ai_share:.0%}" if view.lines else "–"
        ai = sum(1 for c in view.history if c.is_ai)
        # the path on a line of its own, cut in the middle (wrapped, it broke inside a name)
        self.query_one("#note-title", Static).update(
            Content.styled(f" {cut_middle(self.path, self.app.size.width - 2)}", "bold")
            + Content(
                f"\n the AI wrote {view.ai_lines:,} of {view.lines:,} lines ({share})"
                f"  ·  {plural(len(view.history), 'commit')}, {ai:,} by the AI"
            )
        )
        self.query_one("#note-text", NoteText).show(view)
        table = self.query_one("#note-history", DataTable)
        table.clear(columns=True)
        fill(
            table,
            ["when", "who", "commit", "what"],  # the subject last: it is the one that gets cut
            [
                [f"{c.time.astimezone():%Y-%m-%d %H:%M}", who(c), c.short, what(c, self.path)]
                for c in view.history
            ],
            most=120,
        )

    def action_edit(self) -> None:
        if edit_note(self, self.root, self.path):
            self.load()  # the note as the editor left it

    def _show_feedback(self) -> None:
        """The owner's open and answered feedback on this note, a line each, above the text."""
        box = self.query_one("#note-feedback", Static)
        rows = feedback_lines(self.feedback, max(20, self.app.size.width - 2))
        box.update(Content("\n").join(rows))
        box.display = bool(rows)

    @work(exclusive=True, group="note-act")
    async def action_comment(self) -> None:
        text = await self.app.push_screen_wait(CommentModal(self.path, []))
        if not text:
            return
        try:
            item = await asyncio.to_thread(add_feedback, self.root, self.path, text)
        except ActionError as exc:
            self.query_one("#note-status", Static).update(
                Content.styled(f"comment refused: {exc}", "bold $text-error")
            )
            return
        self.query_one("#note-status", Static).update(
            Content(f"feedback {item.id} saved: the AI sees it in get_context")
        )
        self.load()

    def action_obsidian(self) -> None:
        said = open_in_obsidian(self, self.root, self.path)
        self.query_one("#note-status", Static).update(Content(said))
