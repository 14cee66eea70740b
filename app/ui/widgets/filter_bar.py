"""The `/` box under the timeline: hidden until `/`, it filters as you type (the screen decides
what the text lets through) and, once typing pauses, looks up in git the commits whose change
holds the text (`Found`), which one `git log` does for the whole history."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from textual import work
from textual.message import Message
from textual.widgets import Input

from app.services.view_rows import commits_mentioning

PAUSE = 0.25  # seconds of no typing before git is asked


class FilterBar(Input):
    class Found(Message):
        """The commits whose change holds `text` (looked up after typing paused)."""

        def __init__(self, bar: FilterBar, text: str, hits: frozenset[str]) -> None:
            super().__init__()
            self.bar = bar
            self.text = text
            self.hits = hits

        @property
        def control(self) -> FilterBar:
            return self.bar

    def __init__(self, root: Path, *, id: str | None = None) -> None:
        super().__init__(
            placeholder="/ filter as you type: path, summary or changed text (esc clears)",
            id=id,
            compact=True,  # one line: bordered, it took 3 rows and left the timeline 4 at 80x24
        )
        self.root = root

    def on_mount(self) -> None:
        self.display = False

    def open(self, text: str) -> None:
        self.value = text
        self.display = True
        # Now, not on a later turn of the loop as focus() does: the `/` that opens the box is
        # a priority key, handled as it arrives, and the keys typed after it are already
        # queued; they went to the timeline (its a/h/e toggled filters) until the focus moved.
        self.screen.set_focus(self)

    def close(self, *, clear: bool = False) -> None:
        if clear:
            self.value = ""
        self.display = False

    @work(thread=True, exclusive=True, group="find")
    def look_up(self, text: str) -> None:
        """Commits whose change has the text: one git process, after typing pauses."""
        time.sleep(PAUSE)
        if not text or text != self.value.strip():
            return
        hits = commits_mentioning(self.root, text)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._found, text, hits)

    def _found(self, text: str, hits: frozenset[str]) -> None:
        self.post_message(self.Found(self, text, hits))
