"""The review screen: the notes with AI changes the owner has not reviewed (or every AI change
in a period), and for the note selected one net diff from its reviewed state to now, each
changed line under the AI commit (tool, client, time) or the owner's commit that made it.

The work is `app.services.review`'s, run in worker threads; this screen only lists, draws and
asks. The panes are widgets (`ReviewNotes`, `NetDiffPane`, `ReviewTitle`, `ReviewStatus`); the
owner's actions are `ReviewActions`'. Every refusal is said in words in the status line, and
stays there until the next action or until the owner moves to another note."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, Input

from app.services.actions import ActionError
from app.services.feedback import Feedback
from app.services.history import NotAPeriod
from app.services.review import NoteSummary, Review, summaries
from app.ui.dialogs.review_actions import ReviewActions
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.net_diff_pane import NetDiffPane
from app.ui.widgets.review_diff import OWNER_ADD as OWNER_ADD  # where tests and themes read it
from app.ui.widgets.review_diff import ReviewDiff
from app.ui.widgets.review_notes import ReviewNotes
from app.ui.widgets.review_status import ReviewStatus
from app.ui.widgets.review_title import ReviewTitle, period_words
from app.ui.widgets.since_box import SinceBox, next_period


class ReviewScreen(ReviewActions):
    AUTO_FOCUS = "#review-notes"
    DEFAULT_CSS = """
    ReviewScreen #review-title { height: auto; background: $panel; }
    ReviewScreen #review-body { height: 1fr; layout: vertical; }
    ReviewScreen #review-notes {
        height: auto; max-height: 40%; min-height: 5; border: round $panel;
    }
    ReviewScreen #review-diff { height: 1fr; border: round $panel; padding: 0 1; }
    ReviewScreen #review-notes:focus, ReviewScreen #review-diff:focus {
        border: round $primary;
    }
    ReviewScreen #review-status { height: auto; max-height: 4; padding: 0 1; }
    ReviewScreen #review-since { dock: bottom; margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="back to the timeline (from the diff: the list)"),
        Binding("q,v", "app.pop_screen", "Back", show=False, tooltip="back to the timeline"),
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("enter", "focus_diff", "Diff", show=False, tooltip="focus the diff (esc returns)"),
        Binding("space", "mark", "Mark", tooltip="mark this note reviewed"),
        Binding("n", "next", "Next", tooltip="next unreviewed note"),
        Binding(
            "A",
            "mark_all",
            "All",
            show=False,  # the footer fits 80 columns without it; help and the palette list it
            tooltip="mark every note listed reviewed",
        ),
        Binding(
            "right_square_bracket", "hunk(1)", "Hunk", show=False, tooltip="select the next hunk"
        ),
        Binding(
            "left_square_bracket", "hunk(-1)", "Prev hunk", show=False, tooltip="previous hunk"
        ),
        Binding("u", "undo_hunk", "Undo", tooltip="undo the selected hunk's AI lines (yours stay)"),
        Binding(
            "R",
            "revert_note",
            "Revert",
            tooltip="revert every unreviewed AI change to this note (your commits stay)",
        ),
        Binding(
            "o", "open_note", "Open", tooltip="open the note: who wrote each line, its history"
        ),
        Binding("e", "edit", "Edit", show=False, tooltip="edit the note in $EDITOR"),
        Binding(
            "c",
            "comment",
            "Comment",
            show=False,  # the footer fits 80 columns without it; help and the palette list it
            tooltip="comment on the selected hunk for the AI (feedback it sees in get_context)",
        ),
        Binding("p", "period", "Period", tooltip="since: last review → today → 7 days"),
        Binding(
            "d", "ask_since", "Since…", show=False, tooltip="since a date (YYYY-MM-DD) or a commit"
        ),
    ]

    def __init__(self, root: Path, since: str = "last") -> None:
        super().__init__()
        self.root = root
        self.since = since
        self.review: Review | None = None
        self.loaded_at: object = None  # the refs' stamp the list was read at
        self.opened = time.perf_counter()
        self.listed_in: float | None = None  # seconds from opening to the list on screen
        self._good_since = since  # the last period that listed

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield ReviewTitle(id="review-title")
        with Horizontal(id="review-body"):
            yield ReviewNotes(id="review-notes")
            yield NetDiffPane(self.root, self, id="review-diff")
        yield ReviewStatus(id="review-status")
        yield SinceBox(id="review-since")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.pane.reading()
        self.show_header()
        self._title()
        self.pane.load_feedback()
        ready = self.dash.review_watch.current() if self.since == "last" else None
        if ready is not None:  # the header's count was read from it: no need to read it again
            self._listed(ready, "last", self.dash.review_watch.counted)
        else:
            self.load()

    @property
    def notes(self) -> ReviewNotes:
        return self.query_one("#review-notes", ReviewNotes)

    @property
    def pane(self) -> NetDiffPane:
        return self.query_one("#review-diff", NetDiffPane)

    def show_header(self) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one(StatusHeader).show(self.dash.header_facts())

    def _title(self, text: str = "") -> None:
        self.query_one(ReviewTitle).show(self.review, self.since, text)

    @property
    def feedback(self) -> dict[str, list[Feedback]]:
        return self.pane.feedback

    # -- the list ---------------------------------------------------------------------------------

    def follow(self) -> None:
        """The branch or the marks moved (a new AI commit, another dashboard's marks)."""
        watch = self.dash.review_watch
        if self.loaded_at == watch.counted or self._busy:
            return
        ready = watch.current() if self.since == "last" else None
        if ready is not None:  # the header's recount has just read it
            self._listed(ready, "last", watch.counted)
        else:
            self.load()

    def relist(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="review-list")
    def load(self) -> None:
        stamp = self.dash.review_watch.stamp()
        since = self.since
        try:
            review = summaries(self.root, since)
        except ActionError as exc:
            # in the words of the box it was typed in: the shell's `--since` is no option here
            why = f"{exc.since!r} {exc.why}" if isinstance(exc, NotAPeriod) else str(exc)
            with contextlib.suppress(RuntimeError):
                self.app.call_from_thread(self._not_a_period, since, why)
            return
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._listed, review, since, stamp)

    def _not_a_period(self, since: str, why: str) -> None:
        """A period typed in that is none: said, and the last one shown stays."""
        if since == self.since and since != self._good_since:
            self.say(f"{why}; still showing {period_words(self._good_since)}", "error")
            self.since = self._good_since
            self._title()
            self.load()

    def _listed(self, review: Review, since: str, stamp: object) -> None:
        if since != self.since or not self.is_attached:
            return
        self._good_since = since
        was = self.current()
        self.review, self.loaded_at = review, stamp
        self.notes.show(review.notes, since, was.path if was is not None else None)
        if self.status.said_at is not None:  # a new listing is not the owner moving: what the
            now = self.current()  # last action said stays (its note may have left the list)
            self.status.said_at = now.path if now is not None else None
        if self.listed_in is None:
            self.listed_in = time.perf_counter() - self.opened
        self._title()
        # the diff after the list is on screen: its read and its drawing would hold the list back
        self.call_after_refresh(self.show_selected)

    def on_resize(self) -> None:
        if self.review is not None:
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        with contextlib.suppress(NoMatches):
            if self.review is not None and self.notes.refit(self.review.notes, self.since):
                self.pane.draw(scroll=False)  # the diff's header lines are worded for the width

    def current(self) -> NoteSummary | None:
        if self.review is None or not self.review.notes:
            return None
        with contextlib.suppress(NoMatches):
            return self.notes.at(self.review.notes)
        return None

    @on(DataTable.RowHighlighted, "#review-notes")
    def _highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.call_after_refresh(self.show_selected)  # the cursor's move is drawn first

    @on(DataTable.RowSelected, "#review-notes")
    def _selected(self, _: DataTable.RowSelected) -> None:
        self.action_focus_diff()

    # -- the diff ---------------------------------------------------------------------------------

    def show_selected(self) -> None:
        note = self.current()
        said = self.status.said_at
        if said is not None and (note is None or note.path != said):
            self.say("")  # the owner moved on: what was said was about the note before
        if note is None:
            self.pane.nothing(self.since)
        else:
            self.pane.show_note(note, self.since, self.review.notes if self.review else [])

    def stamp(self) -> object:
        return self.dash.review_watch.stamp()

    def action_hunk(self, delta: int) -> None:
        if not self.pane.step_hunk(delta):
            self.say("no hunks in this diff", "warning")

    # -- keys -------------------------------------------------------------------------------------

    def action_back(self) -> None:
        box = self.query_one("#review-since", Input)
        if box.display:
            box.display = False
            self.notes.focus()
        elif isinstance(self.focused, ReviewDiff):
            self.notes.focus()
        else:
            self.app.pop_screen()

    def action_focus_list(self) -> None:
        self.notes.focus()

    def action_focus_diff(self) -> None:
        self.pane.focus()

    def action_move(self, delta: int) -> None:
        self.notes.move(delta)

    def action_next(self) -> None:
        r = self.review
        if r is None or not r.notes:
            self.say("nothing to review")
        elif not self.notes.next_unreviewed(r.notes):
            self.say("every note listed is reviewed")

    def action_period(self) -> None:
        self.set_since(next_period(self.since))

    def set_since(self, since: str) -> None:
        self.since = since
        self.review, self.shown = None, None
        self.say(f"showing {period_words(since)}")
        self._title()
        self.load()

    def action_ask_since(self) -> None:
        self.query_one(SinceBox).ask(self.since)

    @on(Input.Submitted, "#review-since")
    def _since_typed(self, event: Input.Submitted) -> None:
        event.input.display = False
        self.notes.focus()
        text = event.value.strip()
        if text:
            self.set_since(text)

    def on_screen_resume(self) -> None:
        self.pane.load_feedback()  # the note view may have added some
        self.show_header()
        if self.review is not None and self.loaded_at != self.dash.review_watch.stamp():
            self.load()  # something changed while the note view was open
        elif self.review is not None:
            self.shown = None  # the owner may have edited the note from the note view
            self.show_selected()
