"""The detail pane beside the timeline: a commit's header and diff (or an event's prose).
Focused (enter on the timeline), its keys move in the diff: j/k, half pages, next/previous
hunk and file, n/N through the lines holding the `/` text."""

from __future__ import annotations

import bisect
from pathlib import Path

from textual.binding import Binding
from textual.content import Content
from textual.message import Message

from app.services.feed import Row
from app.services.history import commit_changes_upto
from app.services.view_rows import finder
from app.ui.widgets.details import commit_header
from app.ui.widgets.diffview import render_commit
from app.ui.widgets.lines import LinesView

DIFF_FILES = 300  # files read for one commit's diff; the pane says how many more there were


def commit_lines(
    root: Path, row: Row, *, split: bool, context: int, width: int
) -> tuple[list[Content], dict[str, list[int]]]:
    """The row's commit as the pane shows it: its header, then the diff (read from git: run it
    in a thread), with the lines where each hunk and file starts."""
    assert row.commit is not None
    changes, total = commit_changes_upto(root, row.commit.sha, DIFF_FILES)
    head = [*commit_header(row), Content("")]
    body, marks = render_commit(changes, total, split=split, width=width, context=context)
    return head + body, {k: [i + len(head) for i in v] for k, v in marks.items()}


class DiffPane(LinesView):
    """The detail pane. Focused (enter on the timeline), its keys move in the diff: j/k, half
    pages, next/previous hunk and file, n/N through the matches of the `/` text."""

    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
        Binding("ctrl+d", "half(1)", "Half page down", show=False),
        Binding("ctrl+u", "half(-1)", "Half page up", show=False),
        Binding("right_square_bracket", "jump('hunk', 1)", "Hunk", tooltip="next hunk"),
        Binding(
            "left_square_bracket",
            "jump('hunk', -1)",
            "Prev hunk",
            show=False,
            tooltip="previous hunk",
        ),
        Binding("right_curly_bracket", "jump('file', 1)", "File", tooltip="next file"),
        Binding(
            "left_curly_bracket",
            "jump('file', -1)",
            "Prev file",
            show=False,
            tooltip="previous file",
        ),
        Binding("n", "find(1)", "Find", tooltip="next line with the / text"),
        Binding("N", "find(-1)", "Find back", show=False, tooltip="previous line with the / text"),
        Binding("escape", "screen.back", "Back", tooltip="back to the timeline"),
    ]

    class Rewidth(Message):
        """The lines shown were laid out for another width (a side-by-side diff's columns):
        lay them out again for `width`, the pane's text width now."""

        def __init__(self, width: int) -> None:
            super().__init__()
            self.width = width

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks: dict[str, list[int]] = {"hunk": [], "file": []}
        self.search = ""
        self.found: int | None = None
        self._unmarked = Content("")
        self.laid_for: int | None = None  # the width the lines were laid out for, if any

    def text_width(self) -> int:
        """The width a side-by-side diff is laid out for: the pane's text width (before its
        first layout, 100)."""
        return self.scrollable_content_region.width or 100

    def show(
        self,
        lines: list[Content],
        marks: dict[str, list[int]] | None = None,
        laid_for: int | None = None,
    ) -> None:
        """Show `lines`; `laid_for`: the width they were laid out for (a side-by-side
        diff), None when they wrap to any width."""
        self.marks = marks or {"hunk": [], "file": []}
        self.found = None  # the line n/N last found, shown reversed
        self.laid_for = laid_for
        self.update(lines)
        self._check_width()  # the pane resized while they were read

    def on_resize(self) -> None:
        self._check_width()

    def _check_width(self) -> None:
        """Lines laid out for another width than the pane's ask to be laid out again. Asked
        by the pane on each of its own resizes, not only the screen's: the screen's came
        before the pane had its new width, and the side by side read it then kept the old
        columns for good."""
        if self.laid_for is None or not self.size.width:
            return
        width = self.text_width()
        if width != self.laid_for:
            self.laid_for = None  # asked once; the new lines say their width again
            self.post_message(self.Rewidth(width))

    def _top_line(self) -> int:
        self._layout()
        return max(0, bisect.bisect_right(self._starts, int(self.scroll_y)) - 1)

    def _go(self, line: int) -> None:
        self._layout()
        self.scroll_to(y=self._starts[line], animate=False, immediate=True)

    def action_half(self, direction: int) -> None:
        step = max(1, self.scrollable_content_region.height // 2)
        self.scroll_to(y=self.scroll_y + direction * step, animate=False, immediate=True)

    def _next(self, lines: list[int], direction: int, at: int | None = None) -> int | None:
        """The first of `lines` after (before) line `at`, by default the top line shown."""
        top = self._top_line() if at is None else at
        after = [i for i in lines if (i > top if direction > 0 else i < top)]
        return (min(after) if direction > 0 else max(after)) if after else None

    def action_jump(self, kind: str, direction: int) -> None:
        line = self._next(self.marks.get(kind, []), direction)
        if line is None:
            self.notify(f"no {'next' if direction > 0 else 'previous'} {kind}", timeout=2)
        else:
            self._go(line)

    def action_find(self, direction: int) -> None:
        if not self.search:
            self.notify("nothing to find: / sets the text", severity="warning", timeout=3)
            return
        holds = finder(self.search)
        hits = [i for i, line in enumerate(self.lines) if holds(line.plain)]
        line = self._next(hits, direction, self.found)
        if line is None and hits:  # past the last one: from the other end, as lazygit does
            line = hits[0] if direction > 0 else hits[-1]
            self.notify("search wrapped", timeout=2)
        if line is None:
            self.notify(f"no {self.search!r} in this diff", timeout=3)
            return
        lines = list(self.lines)
        if self.found is not None:
            lines[self.found] = self._unmarked
        self._unmarked = lines[line]
        lines[line] = lines[line].stylize("reverse")
        marks = self.marks
        self.show(lines, marks, self.laid_for)  # from the top: then to the line found
        self.found = line
        self._go(line)
