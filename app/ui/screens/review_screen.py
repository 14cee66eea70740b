"""The review screen: the notes with AI changes the owner has not reviewed (or every AI change
in a period), and for the note selected one net diff from its reviewed state to now, each
changed line under the AI commit (tool, client, time) or the owner's commit that made it.

The work is `app.services.review`'s (summaries, net diffs, marks, hunk undo, note revert), run in
worker threads; this screen only lists, draws and asks. Every refusal is said in words in the
status line, and stays there until the next action or until the owner moves to another note."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from app.services.actions import ActionError
from app.services.feedback import Feedback, add_feedback, list_feedback
from app.services.history import NotAPeriod
from app.services.review import (
    NetDiff,
    NoteSummary,
    Review,
    hunk_text,
    marks_of,
    net_diffs,
    plan_undo,
    revert_note,
    revert_note_changes,
    summaries,
    undo_hunk,
    write_marks,
)
from app.ui.dialogs.comment import CommentModal
from app.ui.dialogs.modals import ConfirmModal
from app.ui.navigation import Desk, desk
from app.ui.widgets.cells import plural
from app.ui.widgets.diffview import render_lines
from app.ui.widgets.editor import edit_note
from app.ui.widgets.feedback_lines import feedback_lines
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.keys import Table
from app.ui.widgets.review_diff import OWNER_ADD as OWNER_ADD  # where tests and themes read it
from app.ui.widgets.review_diff import (
    ReviewDiff,
    Shown,
    hunk_quote,
    hunk_span,
    render_hunk,
    render_net,
)
from app.ui.widgets.review_list import fill_notes

PERIODS = ("last", "today", "7d")  # what `p` cycles through


def period_words(since: str) -> str:
    return {
        "last": "since your last review",
        "today": "today",
        "7d": "the last 7 days",
    }.get(since, f"since {since}")


class ReviewScreen(Screen[None]):
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
        self.shown: Shown | None = None
        self.loaded_at: object = None  # the refs' stamp the list was read at
        self.opened = time.perf_counter()
        self.listed_in: float | None = None  # seconds from opening to the list on screen
        self.diff_in: float | None = None  # seconds from selecting a note to its diff shown
        self._asked: float = 0.0
        self._busy = False  # an action is running: the list waits to follow the vault
        self._good_since = since  # the last period that listed
        self._diffs: dict[tuple[object, ...], NetDiff] = {}  # read ahead, by what they depend on
        self._loading: tuple[object, ...] | None = None  # the diff being read (no second read)
        self._fitted = 0  # the width the list's columns were shared out for
        # the note under the cursor when the status line was last written: it is cleared when
        # the owner moves to another note (a refusal about one note stayed under the next)
        self._said_at: str | None = None
        self.feedback: dict[str, list[Feedback]] = {}  # open and answered, by note

    @property
    def dash(self) -> Desk:
        return desk(self)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static(id="review-title")
        with Horizontal(id="review-body"):
            yield Table(id="review-notes", cursor_type="row", zebra_stripes=True)
            yield ReviewDiff(id="review-diff")
        yield Static(id="review-status")
        yield Input(
            placeholder="since: YYYY-MM-DD, 3d, today or a commit (esc cancels)", id="review-since"
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#review-since", Input).display = False
        self.query_one("#review-status", Static).display = False  # shown when it says something
        self.query_one("#review-diff", ReviewDiff).update(
            [Content.styled("reading the AI's changes…", "italic")]
        )
        self.show_header()
        self._title()
        self.load_feedback()
        ready = self.dash.review_watch.current() if self.since == "last" else None
        if ready is not None:  # the header's count was read from it: no need to read it again
            self._listed(ready, "last", self.dash.review_watch.counted)
        else:
            self.load()

    def show_header(self) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one(StatusHeader).show(self.dash.header_facts())

    def _title(self, text: str = "") -> None:
        r = self.review
        what = period_words(self.since)
        if r is None:
            body = f" Review · {what} · reading…"
        elif self.since == "last":
            body = (
                f" Review · {what} · {plural(r.unreviewed_commits, 'AI commit')} in "
                f"{plural(len(r.notes), 'note')}"
                if r.notes
                else f" Review · {what} · nothing to review"
            )
        else:
            open_ = sum(1 for n in r.notes if not n.reviewed)
            body = f" Review · {what} · {plural(len(r.notes), 'note')} changed by the AI, {open_:,} not reviewed"
        if r is not None and r.warning:  # marks unreadable: everything shows, and why
            text = f" · ! {r.warning}{text}"
        self.query_one("#review-title", Static).update(Content.styled(body, "bold") + Content(text))

    def say(self, text: str, severity: str = "") -> None:
        """The status line: what the last action did, or why it did nothing."""
        style = {"error": "bold $text-error", "warning": "bold $text-warning"}.get(severity, "")
        status = self.query_one("#review-status", Static)
        status.update(Content.styled(text, style))
        status.display = bool(text)  # an empty status line is one more line of the diff
        note = self.current()
        self._said_at = note.path if note is not None and text else None

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

    @work(thread=True, exclusive=True, group="review-feedback")
    def load_feedback(self) -> None:
        by_note: dict[str, list[Feedback]] = {}
        for item in list_feedback(self.root):
            by_note.setdefault(item.path, []).append(item)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._feedback_loaded, by_note)

    def _feedback_loaded(self, by_note: dict[str, list[Feedback]]) -> None:
        if by_note != self.feedback and self.is_attached:
            self.feedback = by_note
            self._draw(scroll=False)

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
        table = self.query_one("#review-notes", DataTable)
        was = self.current()
        keep = was.path if was is not None else None
        at = table.cursor_row
        self.review, self.loaded_at = review, stamp
        self._fill(table)
        paths = [n.path for n in review.notes]
        if keep in paths:
            at = paths.index(keep)
        if paths:
            table.move_cursor(row=min(max(at, 0), len(paths) - 1), animate=False)
        if self._said_at is not None:  # a new listing is not the owner moving: what the last
            now = self.current()  # action said stays (its note may have left the list)
            self._said_at = now.path if now is not None else None
        if self.listed_in is None:
            self.listed_in = time.perf_counter() - self.opened
        self._title()
        # the diff after the list is on screen: its read and its drawing would hold the list back
        self.call_after_refresh(self.show_selected)

    def _fill(self, table: DataTable[Any]) -> None:
        assert self.review is not None
        notes = self.review.notes
        # the list is as wide as the screen, above the diff: every column readable (beside the
        # diff, at 200 columns, the tools and clients were cut to a word). Its own size is not
        # laid out yet on the first fill.
        width = self._fitted = self._list_width()
        fill_notes(table, notes, width, self.since != "last")
        table.border_title = (
            None if notes else ("nothing to review" if self.since == "last" else "no AI changes")
        )

    def _list_width(self) -> int:
        return max(40, (self.app.size.width or 120) - 2)

    def on_resize(self) -> None:
        if self.review is not None:
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        # only when the width changed: the first resize comes right after mounting, at the
        # width the list was just filled for, and one change of size can come as two resizes
        if self.review is None or self._list_width() == self._fitted:
            return
        with contextlib.suppress(NoMatches):
            table = self.query_one("#review-notes", DataTable)
            at = table.cursor_row
            self._fill(table)
            if self.review and self.review.notes:
                table.move_cursor(row=min(at, len(self.review.notes) - 1), animate=False)
            self._draw(scroll=False)  # the diff's header lines are worded for the width

    def current(self) -> NoteSummary | None:
        if self.review is None or not self.review.notes:
            return None
        with contextlib.suppress(NoMatches):
            at = self.query_one("#review-notes", DataTable).cursor_row
            if 0 <= at < len(self.review.notes):
                return self.review.notes[at]
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
        pane = self.query_one("#review-diff", ReviewDiff)
        if self._said_at is not None and (note is None or note.path != self._said_at):
            self.say("")  # the owner moved on: what was said was about the note before
        if note is None:
            self.shown = None
            words = (
                "Nothing to review: every AI change is reviewed, reverted or undone."
                if self.since == "last"
                else f"No AI changes {period_words(self.since)}."
            )
            pane.update([Content(words), Content.styled("p changes the period.", "$text-muted")])
            pane.border_title = None  # the last note's "2 hunks" stayed over "Nothing to review"
            return
        shown = self.shown
        if shown is not None and shown.note == note:
            return  # that diff is on screen already
        key = self._diff_key(note, self.since)
        if key == self._loading:
            return  # being read: asked again by the cursor's highlight or a refill
        self._asked = time.perf_counter()
        cached = self._diffs.get(key)
        if cached is not None:  # read ahead while the owner looked at the one before
            self._diff_loaded(note, self.since, cached)
        else:
            self._loading = key
            self.load_diff(note, self.since, key)

    def _diff_key(self, note: NoteSummary, since: str) -> tuple[object, ...]:
        """What a note's net diff depends on: its commits, the branch and the file on disk."""
        try:
            st = (self.root / note.path).stat()
            disk: object = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            disk = None
        shas = tuple(c.sha for c in note.commits)
        return (note.path, since, note.base, shas, disk, self.dash.review_watch.stamp())

    @work(thread=True, exclusive=True, group="review-diff")
    def load_diff(self, note: NoteSummary, since: str, key: tuple[object, ...]) -> None:
        try:
            [diff] = net_diffs(self.root, [note])
            self._diffs[key] = diff  # before the flag drops: a second ask finds it here
        finally:
            if self._loading == key:
                self._loading = None
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._diff_loaded, note, since, diff)

    @work(thread=True, exclusive=True, group="review-ahead")
    def read_ahead(self, notes: list[NoteSummary], since: str) -> None:
        """The diffs of the notes next to the one shown, so `j`, `k` and `n` show them at once."""
        for note in notes:
            key = self._diff_key(note, since)
            if key not in self._diffs:
                self._diffs[key] = net_diffs(self.root, [note])[0]
        while len(self._diffs) > 8:  # oldest first out (dicts keep their order)
            self._diffs.pop(next(iter(self._diffs)))

    def _diff_loaded(self, note: NoteSummary, since: str, diff: NetDiff) -> None:
        if since != self.since or self.current() != note or not self.is_attached:
            return  # the owner moved on meanwhile
        first_ai = next((i for i, h in enumerate(diff.hunks) if h.ai), 0)
        self.shown = Shown(note, diff, first_ai)
        self._draw(scroll=False)
        self.diff_in = time.perf_counter() - self._asked
        notes = self.review.notes if self.review else []
        at = notes.index(note) if note in notes else -1
        near = [notes[i] for i in (at + 1, at - 1) if 0 <= i < len(notes) and at >= 0]
        if near:  # once this diff is on screen: reading ahead would hold its drawing back
            self.call_after_refresh(self.read_ahead, near, since)

    def _draw(self, scroll: bool = True) -> None:
        s = self.shown
        if s is None:
            return
        # the pane's text width: the screen's less its border, padding and scrollbar
        width = max(20, (self.app.size.width or 120) - 6)
        fb = feedback_lines(self.feedback.get(s.note.path, []), width)
        lines, starts = render_net(s.note, s.diff, self.since, s.hunk, width, fb)
        s.starts = tuple(starts)
        pane = self.query_one("#review-diff", ReviewDiff)
        pane.update(lines)
        pane.border_title = f"{len(s.diff.hunks)} hunk{'' if len(s.diff.hunks) == 1 else 's'}"
        if scroll and starts:
            pane._layout()
            pane.scroll_to(y=pane._starts[starts[s.hunk]], animate=False, immediate=True)

    def action_hunk(self, delta: int) -> None:
        s = self.shown
        if s is None or not s.diff.hunks:
            self.say("no hunks in this diff", "warning")
            return
        s.hunk = (s.hunk + delta) % len(s.diff.hunks)
        self._draw()

    # -- keys -------------------------------------------------------------------------------------

    def action_back(self) -> None:
        box = self.query_one("#review-since", Input)
        if box.display:
            box.display = False
            self.query_one("#review-notes", DataTable).focus()
        elif isinstance(self.focused, ReviewDiff):
            self.query_one("#review-notes", DataTable).focus()
        else:
            self.app.pop_screen()

    def action_focus_list(self) -> None:
        self.query_one("#review-notes", DataTable).focus()

    def action_focus_diff(self) -> None:
        self.query_one("#review-diff", ReviewDiff).focus()

    def action_move(self, delta: int) -> None:
        table = self.query_one("#review-notes", DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + delta)))

    def action_next(self) -> None:
        r = self.review
        if r is None or not r.notes:
            self.say("nothing to review")
            return
        table = self.query_one("#review-notes", DataTable)
        n = len(r.notes)
        for step in range(1, n + 1):
            at = (table.cursor_row + step) % n
            if not r.notes[at].reviewed:
                table.move_cursor(row=at)
                return
        self.say("every note listed is reviewed")

    def action_period(self) -> None:
        at = PERIODS.index(self.since) if self.since in PERIODS else -1
        self.set_since(PERIODS[(at + 1) % len(PERIODS)])

    def set_since(self, since: str) -> None:
        self.since = since
        self.review, self.shown = None, None
        self.say(f"showing {period_words(since)}")
        self._title()
        self.load()

    def action_ask_since(self) -> None:
        box = self.query_one("#review-since", Input)
        box.value = "" if self.since in PERIODS else self.since
        box.display = True
        box.focus()

    @on(Input.Submitted, "#review-since")
    def _since_typed(self, event: Input.Submitted) -> None:
        event.input.display = False
        self.query_one("#review-notes", DataTable).focus()
        text = event.value.strip()
        if text:
            self.set_since(text)

    def action_edit(self) -> None:
        note = self.current()
        if note is None:
            self.say("no note selected", "warning")
        elif edit_note(self, self.root, note.path):
            self.shown = None
            self.show_selected()

    def action_open_note(self) -> None:
        note = self.current()
        if note is None:
            self.say("no note selected", "warning")
            return
        self.dash.open_note(note.path)

    def on_screen_resume(self) -> None:
        self.load_feedback()  # the note view may have added some
        self.show_header()
        if self.review is not None and self.loaded_at != self.dash.review_watch.stamp():
            self.load()  # something changed while the note view was open
        elif self.review is not None:
            self.shown = None  # the owner may have edited the note from the note view
            self.show_selected()

    # -- the owner's actions (each in a worker: git never freezes the screen) ---------------------

    async def _run(self, what: str, fn: Any, *args: Any) -> Any:
        """Run a service in a thread; an ActionError is said in the status line, in words."""
        self._busy = True
        try:
            return await asyncio.to_thread(fn, *args)
        except ActionError as exc:
            # said once, in the status line: a toast on top of it hid the reason (audit 3 N14)
            self.say(f"{what} refused: {exc}", "error")
            return None
        finally:
            self._busy = False

    def _after(self, message: str) -> None:
        self.say(message)  # the status line only: a toast covered it at 80 columns
        self.shown = None
        self.load()
        self.dash.poll()  # the header's count and the timeline follow at once

    @work(exclusive=True, group="review-act")
    async def action_mark(self) -> None:
        note = self.current()
        if note is None:
            self.say("nothing to mark: no note selected", "warning")
            return
        if note.reviewed:
            self.say(f"{note.path} is reviewed already")
            return
        # exactly the commits on screen: an AI write that lands meanwhile stays unreviewed
        marks = marks_of(note)  # under the name each commit gave it (the owner may have moved it)
        files = {c.sha: c.files for c in note.commits}
        if await self._run("mark", write_marks, self.root, marks, files) is not None:
            self._after(f"{note.path}: {plural(len(note.commits), 'AI commit')} marked reviewed")

    @work(exclusive=True, group="review-act")
    async def action_mark_all(self) -> None:
        r = self.review
        todo = [n for n in (r.notes if r else []) if not n.reviewed]
        if not todo:
            self.say("nothing to mark: every note listed is reviewed")
            return
        commits = {c.sha for n in todo for c in n.commits}
        body = [Content(f"{n.path}  ({plural(len(n.commits), 'AI commit')})") for n in todo]
        title = f"Mark {plural(len(commits), 'AI commit')} in {plural(len(todo), 'note')} reviewed?"
        if not await self.app.push_screen_wait(ConfirmModal(title, body, yes="Mark reviewed")):
            return
        marks: dict[str, list[str]] = {}
        files: dict[str, tuple[str, ...]] = {}
        for n in todo:
            for sha, names in marks_of(n).items():
                marks.setdefault(sha, []).extend(names)
            files.update((c.sha, c.files) for c in n.commits)
        if await self._run("mark all", write_marks, self.root, marks, files) is not None:
            self._after(f"{plural(len(todo), 'note')} marked reviewed")

    @work(exclusive=True, group="review-act")
    async def action_undo_hunk(self) -> None:
        s = self.shown
        if s is None or not s.diff.hunks:
            self.say("no hunk to undo: select a note with changes", "warning")
            return
        h = s.diff.hunks[s.hunk]
        if not h.ai:
            self.say(
                f"hunk {s.hunk + 1} has only your lines: nothing of the AI's to undo", "warning"
            )
            return
        try:  # the refusal before the confirm: it promised "your lines stay", then refused
            plan_undo(s.diff, s.hunk)
        except ActionError as e:
            self.say(f"undo refused: {e}", "error")
            return
        title = f"Undo the AI's lines in hunk {s.hunk + 1}?"
        body = [
            Content.styled(s.note.path, "bold"),  # not in the title: a long path left `?` alone
            Content("One commit as you (Vaultwatch-Action: undo). Your lines stay as they are."),
            Content(""),
            *render_hunk(h, s.hunk, len(s.diff.hunks), False),
        ]
        if not await self.app.push_screen_wait(ConfirmModal(title, body, yes="Undo hunk")):
            return
        sha = await self._run(
            "undo", undo_hunk, self.root, s.note.path, s.hunk, self.since, hunk_text(h)
        )
        if sha:
            self._after(f"undid hunk {s.hunk + 1} of {s.note.path}: commit {sha[:8]}")

    @work(exclusive=True, group="review-act")
    async def action_revert_note(self) -> None:
        note = self.current()
        if note is None:
            self.say("no note selected", "warning")
            return
        if note.reviewed:
            self.say(f"{note.path} has no unreviewed AI changes to revert", "warning")
            return
        # planned first, nothing written: what it takes back is shown, and a revert that
        # cannot apply is refused here, not after y
        changes = await self._run("revert", revert_note_changes, self.root, note.path)
        if changes is None:
            return
        # the path once, in the diff's file line (in the title too, a long one wrapped and left
        # the `?` on a line of its own); what it changes first: at 80x24 the body shows ~8 lines
        title = "Revert every unreviewed AI change to this note?"
        body = [
            Content("One commit as you; only this note; your own commits stay."),
            Content(""),
            Content("The revert will change:"),
            *render_lines(changes, context=1),
            Content(f"It takes back {plural(len(note.commits), 'AI commit')}:"),
            *[Content(f"{c.short}  {c.subject}  ({c.client or '?'})") for c in note.commits],
        ]
        if not await self.app.push_screen_wait(ConfirmModal(title, body, yes="Revert")):
            return
        sha = await self._run("revert", revert_note, self.root, note.path)
        if sha:
            self._after(f"reverted the AI's changes to {note.path}: commit {sha[:8]}")

    @work(exclusive=True, group="review-act")
    async def action_comment(self) -> None:
        """Feedback for the AI on the selected hunk (its lines, the AI commit that wrote them),
        or on the note when its diff has no hunk."""
        note = self.current()
        if note is None:
            self.say("nothing to comment on: no note selected", "warning")
            return
        s = self.shown
        hunk = s.diff.hunks[s.hunk] if s is not None and s.note == note and s.diff.hunks else None
        lines: tuple[int | None, int | None] = (None, None)
        commit: str | None = None
        if hunk is None:
            about, quote = note.path, []
        else:
            lines, commit = hunk_span(hunk)
            assert s is not None
            about = f"hunk {s.hunk + 1} of {note.path}"
            quote = render_hunk(hunk, s.hunk, len(s.diff.hunks), False)[1:]
        text = await self.app.push_screen_wait(CommentModal(about, quote))
        if not text:
            return
        item = await self._run(
            "comment",
            lambda: add_feedback(
                self.root,
                note.path,
                text,
                line=lines[0],
                end=lines[1],
                commit=commit,
                quote=hunk_quote(hunk) if hunk is not None else None,
            ),
        )
        if item is not None:
            self.say(f"feedback {item.id} saved: the AI sees it in get_context")
            self.load_feedback()
            self.dash.poll()
