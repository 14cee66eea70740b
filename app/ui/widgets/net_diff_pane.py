"""The review screen's diff pane: the selected note's net diff from its reviewed state to now,
each changed line under the commit that made it, the feedback given on it, and the hunk
selected (`[`/`]`), which `u` undoes and `c` comments on. It reads the diff in a thread (each
read once, the notes beside it read ahead: `app.services.review_ahead`) and shows it only while
its note is still the one the screen has selected. The feedback given on the note shows under
its header."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Protocol

from textual import work
from textual.content import Content

from app.services.feedback import Feedback, list_feedback
from app.services.net_diff import NetDiff
from app.services.review import NoteSummary
from app.services.review_ahead import Key, NetDiffs
from app.ui.widgets.feedback_lines import feedback_lines
from app.ui.widgets.review_diff import ReviewDiff, Shown, render_net
from app.ui.widgets.review_title import period_words


class DiffHost(Protocol):
    """What the pane asks of its screen."""

    since: str

    def current(self) -> NoteSummary | None: ...

    def stamp(self) -> object: ...  # the branch and the marks: a diff read before is stale


class NetDiffPane(ReviewDiff):
    def __init__(self, root: Path, host: DiffHost, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host = host
        self.shown: Shown | None = None  # the diff on screen
        self.root = root
        self.diffs = NetDiffs(root)
        self.feedback: dict[str, list[Feedback]] = {}  # open and answered, by note
        self._asked = 0.0
        self._drawn_for = 0  # the text width the shown diff's header lines were worded for
        self.diff_in: float | None = None  # seconds from selecting a note to its diff shown

    @work(thread=True, exclusive=True, group="review-feedback")
    def load_feedback(self) -> None:
        """The feedback given on every note, read again; the diff drawn again when it changed."""
        by_note: dict[str, list[Feedback]] = {}
        for item in list_feedback(self.root):
            by_note.setdefault(item.path, []).append(item)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._feedback_loaded, by_note)

    def _feedback_loaded(self, by_note: dict[str, list[Feedback]]) -> None:
        if by_note != self.feedback and self.is_attached:
            self.feedback = by_note
            self.draw(scroll=False)

    def reading(self) -> None:
        self.update([Content.styled("reading the AI's changes…", "italic")])

    def nothing(self, since: str) -> None:
        """No note listed: why, and what to do."""
        self.shown = None
        words = (
            "Nothing to review: every AI change is reviewed, reverted or undone."
            if since == "last"
            else f"No AI changes {period_words(since)}."
        )
        self.update([Content(words), Content.styled("p changes the period.", "$text-muted")])
        self.border_title = None  # the last note's "2 hunks" stayed over "Nothing to review"

    def show_note(self, note: NoteSummary, since: str, notes: list[NoteSummary]) -> None:
        """Show this note's diff (`notes`: the list it is in, whose neighbours are read ahead)."""
        shown = self.shown
        if shown is not None and shown.note == note:
            return  # that diff is on screen already
        key = self.diffs.key(note, since, self.host.stamp())
        if key == self.diffs.loading:
            return  # being read: asked again by the cursor's highlight or a refill
        self._asked = time.perf_counter()
        cached = self.diffs.get(key)
        if cached is not None:  # read ahead while the owner looked at the one before
            self._loaded(note, since, notes, cached)
        else:
            self.diffs.loading = key
            self.load_diff(note, since, notes, key)

    @work(thread=True, exclusive=True, group="review-diff")
    def load_diff(self, note: NoteSummary, since: str, notes: list[NoteSummary], key: Key) -> None:
        diff = self.diffs.read(note, key)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._loaded, note, since, notes, diff)

    @work(thread=True, exclusive=True, group="review-ahead")
    def read_ahead(self, notes: list[NoteSummary], since: str) -> None:
        """The diffs of the notes next to the one shown, so `j`, `k` and `n` show them at once."""
        self.diffs.read_ahead(notes, since, self.host.stamp())

    def _loaded(
        self, note: NoteSummary, since: str, notes: list[NoteSummary], diff: NetDiff
    ) -> None:
        if since != self.host.since or self.host.current() != note or not self.is_attached:
            return  # the owner moved on meanwhile
        first_ai = next((i for i, h in enumerate(diff.hunks) if h.ai), 0)
        self.shown = Shown(note, diff, first_ai)
        self.draw(scroll=False)
        self.diff_in = time.perf_counter() - self._asked
        at = notes.index(note) if note in notes else -1
        near = [notes[i] for i in (at + 1, at - 1) if 0 <= i < len(notes) and at >= 0]
        if near:  # once this diff is on screen: reading ahead would hold its drawing back
            self.call_after_refresh(self.read_ahead, near, since)

    def _room(self) -> int:
        """The pane's text width; before its first layout, the screen's less its border,
        padding and scrollbar (what the pane gets, spanning the screen)."""
        own = self.scrollable_content_region.width if self.size.width else 0
        return max(20, own or (self.app.size.width or 120) - 6)

    def on_resize(self) -> None:
        """Every new width words the header lines again, from the pane's own Resize: the
        screen's came before the pane was laid out at the new size, and a diff drawn then
        kept the old width's wording."""
        if self.shown is not None and self._room() != self._drawn_for:
            self.draw(scroll=False)

    def draw(self, scroll: bool = True) -> None:
        """The diff shown, drawn again (another hunk, new feedback, another width); with
        `scroll` the selected hunk is scrolled to."""
        s = self.shown
        if s is None:
            return
        width = self._drawn_for = self._room()
        fb = feedback_lines(self.feedback.get(s.note.path, []), width)
        lines, starts = render_net(s.note, s.diff, self.host.since, s.hunk, width, fb)
        s.starts = tuple(starts)
        self.update(lines)
        self.border_title = f"{len(s.diff.hunks)} hunk{'' if len(s.diff.hunks) == 1 else 's'}"
        if scroll and starts:
            self._layout()
            self.scroll_to(y=self._starts[starts[s.hunk]], animate=False, immediate=True)

    def step_hunk(self, delta: int) -> bool:
        """Select the next (previous) hunk, round the end, and show it; False when there is
        none."""
        s = self.shown
        if s is None or not s.diff.hunks:
            return False
        s.hunk = (s.hunk + delta) % len(s.diff.hunks)
        self.draw()
        return True
