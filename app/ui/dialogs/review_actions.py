"""The owner's actions on the review screen's keys: mark a note reviewed (or every note
listed), undo the selected hunk's AI lines, revert every unreviewed AI change to a note,
comment on a hunk for the AI, and open the note (`e` in $EDITOR, `o` in the note view). Each
that changes the vault asks through a dialog, runs an `app.services.review` service in a thread
(git never freezes the screen) and says in the status line what it did, or why it did nothing.
A screen gets them by deriving from `ReviewActions` and giving the note under its cursor, a way
to show its diff and to read the list again."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from textual import work
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen

from app.services.actions import ActionError
from app.services.feedback import add_feedback
from app.services.review import NoteSummary, Review
from app.services.review_marks import write_marks
from app.services.review_undo import (
    hunk_text,
    marks_of,
    plan_undo,
    revert_note,
    revert_note_changes,
    undo_hunk,
)
from app.ui.dialogs.comment import CommentModal
from app.ui.dialogs.modals import ConfirmModal
from app.ui.navigation import Desk, desk
from app.ui.widgets.cells import plural
from app.ui.widgets.diffview import render_lines
from app.ui.widgets.editor import edit_note
from app.ui.widgets.net_diff_pane import NetDiffPane
from app.ui.widgets.review_diff import Shown, hunk_quote, hunk_span, render_hunk
from app.ui.widgets.review_status import ReviewStatus


class ReviewActions(Screen[None]):
    """The actions, for a screen with a `NetDiffPane` (the diff they act on) and a
    `ReviewStatus` (where they say what they did), that lists notes (`current`)."""

    root: Path
    since: str
    review: Review | None
    _busy = False  # an action is running: the list waits to follow the vault

    @property
    def dash(self) -> Desk:
        return desk(self)

    # -- the diff shown and the status line --------------------------------------------------------

    @property
    def shown(self) -> Shown | None:
        """The diff on screen."""
        with contextlib.suppress(NoMatches):  # before compose, or while closing
            return self.query_one(NetDiffPane).shown
        return None

    @shown.setter
    def shown(self, value: Shown | None) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one(NetDiffPane).shown = value

    @property
    def status(self) -> ReviewStatus:
        return self.query_one(ReviewStatus)

    def say(self, text: str, severity: str = "") -> None:
        """The status line: what the last action did, or why it did nothing."""
        note = self.current()
        self.status.say(text, severity, note.path if note is not None else None)

    def refeed(self) -> None:
        """Read the feedback again (a comment was added)."""
        self.query_one(NetDiffPane).load_feedback()

    # -- what the screen gives ---------------------------------------------------------------------

    def current(self) -> NoteSummary | None:
        """The note under the list's cursor."""
        raise NotImplementedError

    def show_selected(self) -> None:
        """Show the selected note's diff (read again when `shown` was cleared)."""
        raise NotImplementedError

    def relist(self) -> None:
        """Read the list again (an action changed the vault)."""
        raise NotImplementedError

    # -- the owner's actions (each in a worker: git never freezes the screen) ----------------------

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
        self.relist()
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
            self.refeed()
            self.dash.poll()
