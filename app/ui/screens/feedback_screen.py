"""The owner's feedback to the AI on screen: the small dialog `c` opens (in review and in the
note view) to comment on a hunk or a note, and the screen `F` opens: every open and answered
item, and for the one selected its text, the lines it is about and the answering commit's diff.
The work is `app.services.feedback`'s, run in threads; these only ask and draw."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.services.actions import ActionError
from app.services.feedback import (
    ANSWERED,
    Feedback,
    answer_diff,
    close_feedback,
    list_feedback,
    reopen_feedback,
)
from app.ui.navigation import Desk, desk
from app.ui.widgets.cells import cut_middle
from app.ui.widgets.diffview import ADD, DEL, HUNK
from app.ui.widgets.feedback_lines import STATUS_STYLE, lines_words, local_time
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.keys import Table
from app.ui.widgets.lines import LinesView
from app.ui.widgets.table_fill import fill


def diff_lines(text: str, from_hunk: bool = False) -> list[Content]:
    """Diff lines coloured as the timeline's detail colours them; `from_hunk`: a whole unified
    diff shown from its first hunk (git's header lines say nothing the title does not)."""
    out: list[Content] = []
    for line in text.splitlines():
        if from_hunk and not out and not line.startswith("@@"):
            continue
        if line.startswith("+") and not line.startswith("+++"):
            out.append(Content.styled(line, ADD))
        elif line.startswith("-") and not line.startswith("---"):
            out.append(Content.styled(line, DEL))
        elif line.startswith("@@"):
            out.append(Content.styled(line, HUNK))
        else:
            out.append(Content(line))
    return out


class FeedbackScreen(Screen[None]):
    """Every open and answered item (closed ones too with `a`), newest first; the selected
    one's text, lines and answering diff beside (below, when narrow)."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    AUTO_FOCUS = "#feedback-list"
    DEFAULT_CSS = """
    FeedbackScreen #feedback-title { height: 1; background: $panel; }
    FeedbackScreen #feedback-body { height: 1fr; }
    FeedbackScreen #feedback-list { width: 2fr; height: 1fr; border: round $panel; }
    FeedbackScreen #feedback-detail { width: 3fr; border: round $panel; padding: 0 1; }
    FeedbackScreen #feedback-list:focus, FeedbackScreen #feedback-detail:focus {
        border: round $primary;
    }
    FeedbackScreen.-narrow #feedback-body { layout: vertical; }
    FeedbackScreen.-narrow #feedback-list { width: 1fr; height: 2fr; }
    FeedbackScreen.-narrow #feedback-detail { width: 1fr; height: 3fr; }
    FeedbackScreen #feedback-status { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,q,F", "app.pop_screen", "Back", tooltip="back to the timeline"),
        Binding("x", "close_item", "Close", tooltip="close the selected feedback (settled)"),
        Binding(
            "r", "reopen_item", "Reopen", tooltip="reopen it: the answer is not enough, ask again"
        ),
        Binding("a", "toggle_all", "All", tooltip="show closed feedback too, or hide it"),
        Binding("o", "open_note", "Open", tooltip="open the note it is about"),
        Binding("tab", "app.focus_next", "Pane", show=False, tooltip="the list / the detail"),
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
    ]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.items: list[Feedback] = []
        self.include_closed = False
        self._diffs: dict[str, str] = {}

    @property
    def dash(self) -> Desk:
        return desk(self)

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static(Content.styled(" Feedback · reading…", "bold"), id="feedback-title")
        with Horizontal(id="feedback-body"):
            yield Table(id="feedback-list", cursor_type="row", zebra_stripes=True)
            yield FeedbackDetail(id="feedback-detail")
        yield Static(id="feedback-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#feedback-detail", FeedbackDetail).border_title = "the selected feedback"
        self.show_header()
        self.load()

    def show_header(self) -> None:
        with contextlib.suppress(NoMatches, AssertionError):
            self.query_one(StatusHeader).show(self.dash.header_facts())

    @work(thread=True, exclusive=True, group="feedback-list")
    def load(self) -> None:
        items = list_feedback(self.root, include_closed=self.include_closed)
        diffs = {i.id: answer_diff(self.root, i) for i in items if i.answered_by}
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._loaded, items, diffs)

    def _loaded(self, items: list[Feedback], diffs: dict[str, str]) -> None:
        if not self.is_attached:
            return
        self.items, self._diffs = items, diffs
        open_ = sum(i.status == "open" for i in items)
        answered = sum(i.status == ANSWERED for i in items)
        shown = "" if not self.include_closed else " · closed shown (a hides)"
        self.query_one("#feedback-title", Static).update(
            Content.styled(f" Feedback · {open_:,} open · {answered:,} answered{shown}", "bold")
        )
        table = self.query_one("#feedback-list", DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        # the note by its file name (the detail has its path): at 120 columns the list's pane
        # showed no note at all behind a whole path; a long text is cut (the detail has it all)
        fill(
            table,
            ["status", "text", "note"],  # the text first: it is what the owner recognises
            [
                [
                    i.status,
                    " ".join(i.text.split()),
                    cut_middle(i.path.rsplit("/", 1)[-1], 24) + (f":{i.lines}" if i.lines else ""),
                ]
                for i in items
            ],
            most=36,
        )
        if items:
            table.move_cursor(row=max(0, min(row, len(items) - 1)))
        self.show_selected()

    def action_move(self, delta: int) -> None:
        table = self.query_one("#feedback-list", DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + delta)))

    def current(self) -> Feedback | None:
        table = self.query_one("#feedback-list", DataTable)
        if not self.items or not 0 <= table.cursor_row < len(self.items):
            return None
        return self.items[table.cursor_row]

    @on(DataTable.RowHighlighted, "#feedback-list")
    def _highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.show_selected()

    def show_selected(self) -> None:
        pane = self.query_one("#feedback-detail", FeedbackDetail)
        item = self.current()
        if item is None:
            pane.update(
                [
                    Content("No feedback" + ("." if self.include_closed else " open or answered.")),
                    Content.styled(
                        "c in review (v) or in a note's view comments on a hunk or a note.",
                        "$text-muted",
                    ),
                ]
            )
            return
        out = [
            Content.styled(item.path, "bold")
            + Content(f"  {lines_words(item)}" if item.lines else ""),
            Content.styled(item.status, STATUS_STYLE.get(item.status, ""))
            + Content(f" · {item.id} · {local_time(item.created)} · {item.by.split(' <')[0]}"),
            Content(""),
            *[Content(line) for line in item.text.splitlines()],
        ]
        if item.quote:
            out += [Content(""), Content.styled("about these lines:", "$text-muted")]
            out += (
                diff_lines(item.quote)
                if item.commit
                else [Content(q) for q in item.quote.splitlines()]
            )
        if item.commit:
            out.append(Content.styled(f"in commit {item.commit[:8]}", "$text-muted"))
        if item.answered_by:
            subject, _, body = self._diffs.get(item.id, "").partition("\n")
            subject = subject.partition(" ")[2]
            out += [
                Content(""),
                Content.styled(f"answered by {item.answered_by[:8]}", "bold $text-success")
                + Content(f" {subject}"),
                *diff_lines(body, from_hunk=True),
                Content(""),
                Content.styled("x closes it (settled) · r reopens it (ask again)", "$text-muted"),
            ]
        pane.update(out)

    def say(self, text: str, severity: str = "") -> None:
        style = {"error": "bold $text-error"}.get(severity, "")
        self.query_one("#feedback-status", Static).update(Content.styled(text, style))

    async def _set(self, fn: Any, verb: str) -> None:
        item = self.current()
        if item is None:
            self.say("no feedback selected")
            return
        try:
            done = await asyncio.to_thread(fn, self.root, item.id)
        except ActionError as exc:
            self.say(f"{verb} refused: {exc}", "error")
            return
        self.say(f"{done.id} is {done.status}")
        self.load()
        self.dash.poll()

    @work(exclusive=True, group="feedback-act")
    async def action_close_item(self) -> None:
        await self._set(close_feedback, "close")

    @work(exclusive=True, group="feedback-act")
    async def action_reopen_item(self) -> None:
        await self._set(reopen_feedback, "reopen")

    def action_toggle_all(self) -> None:
        self.include_closed = not self.include_closed
        self.load()

    def action_open_note(self) -> None:
        item = self.current()
        if item is None:
            self.say("no feedback selected")
            return
        self.dash.open_note(item.path)

    def on_screen_resume(self) -> None:
        self.show_header()
        self.load()


class FeedbackDetail(LinesView):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
    ]
