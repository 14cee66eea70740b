"""A scrolling view of many styled lines that renders only what is on screen.

A Static holding a 7,500-line diff wraps and styles every line before it can draw one (most
of a second); this view wraps a line only when it first scrolls into sight, so any diff shows
at once. Lines wider than the view are word-wrapped, as prose notes need, and hang under their
text: a diff line's continuation rows repeat its +/- gutter (they read as context lines when
they started at the left edge), any other line's are indented two cells."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

GUTTERS = ("+ ", "- ")  # the unified diff's marks (app/diffview.py)
HANG = 2


class LinesView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LinesView { overflow-y: scroll; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Content] = []
        self._starts: list[int] = [0]  # first screen row of each line, then the total
        self._width = 0
        self._wrapped: LRUCache[tuple[int, int], list[Strip]] = LRUCache(2_048)

    @property
    def lines(self) -> Sequence[Content]:
        return self._lines

    @property
    def plain(self) -> str:
        """The text shown (tests and the bench read it)."""
        return "\n".join(line.plain for line in self._lines)

    def update(self, content: Content | Sequence[Content]) -> None:
        """Show new text from the top; a Content with newlines is split into its lines."""
        lines = content.split("\n", allow_blank=True) if isinstance(content, Content) else content
        self._lines = list(lines)
        self._wrapped.clear()
        self._width = 0
        self._layout()
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def _text_width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def _layout(self) -> None:
        """Screen rows per line: one for a line that fits (the usual case, no wrapping needed),
        the wrapped height otherwise."""
        width = self._text_width()
        if width == self._width:
            return
        self._width = width
        self._wrapped.clear()
        starts = [0]
        row = 0
        for i, line in enumerate(self._lines):
            row += 1 if line.cell_length <= width else len(self._wrap(i))
            starts.append(row)
        self._starts = starts
        self.virtual_size = Size(width, row)

    def _wrap(self, i: int) -> list[Strip]:
        key = (i, self._width)
        strips = self._wrapped.get(key)
        if strips is None:
            strips = [self._strip(row) for row in hang(self._lines[i], self._width)]
            self._wrapped[key] = strips = strips or [Strip.blank(0)]
        return strips

    def _strip(self, row: Content) -> Strip:
        strips = Visual.to_strips(self, row, self._width, 1, self.visual_style)
        return strips[0] if strips else Strip.blank(0)

    def on_resize(self) -> None:
        self._layout()

    def render_line(self, y: int) -> Strip:
        self._layout()
        row = self.scroll_offset.y + y
        width = self.size.width
        style = self.rich_style
        if row >= self._starts[-1]:
            return Strip.blank(width, style)
        i = bisect.bisect_right(self._starts, row) - 1
        strips = self._wrap(i)
        sub = min(row - self._starts[i], len(strips) - 1)
        return strips[sub].extend_cell_length(width, style).crop(0, width)


def hang(line: Content, width: int) -> list[Content]:
    """`line` as screen rows of at most `width` cells, continuation rows hanging under the text."""
    if line.cell_length <= width:
        return [line]
    if width <= HANG + 1:
        return line.fold(max(2, width))
    head = line[:HANG]
    if head.plain in GUTTERS:
        return [head + row for row in line[HANG:].wrap(width - HANG)]
    first = line.wrap(width)[0]
    rest = line[len(first.plain) :]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
    return [first, *(Content(" " * HANG) + row for row in rest.wrap(width - HANG))]
