"""A scrolling view of many styled lines that renders only what is on screen.

A Static holding a 7,500-line diff wraps and styles every line before it can draw one (most
of a second); this view wraps a line only when it first scrolls into sight, so any diff shows
at once. Lines wider than the view are wrapped by cells (`wrap`): at spaces, between Chinese
characters (a line of Chinese has no spaces), and inside a word only when it is longer than a
row (a URL). Rows hang under their text: a diff line's continuation rows repeat its +/- gutter
(they read as context lines when they started at the left edge), a line with `hang_at` set (the
note view's numbers) hangs after it, any other line's under its own text."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

from app.services.cell_wrap import breaks
from app.ui.widgets.keys import PANE_KEYS

GUTTERS = ("+ ", "- ")  # the unified diff's marks (app/ui/widgets/diffview.py)
HANG = 2


class LinesView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LinesView { overflow-y: scroll; overflow-x: hidden; }
    """
    BINDINGS = PANE_KEYS  # j/k, g/G, Home/End, ctrl+d/u in every pane (diff, note, preview)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Content] = []
        self._starts: list[int] = [0]  # first screen row of each line, then the total
        self._width = 0
        self._wrapped: LRUCache[tuple[int, int], list[Strip]] = LRUCache(2_048)
        # characters at the start of every line that are not its text (the note view's line
        # number and mark): a wrapped line's rows hang under the text after them
        self.hang_at = 0

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
            rows = hang(self._lines[i], self._width, self.hang_at)
            strips = [self._strip(row) for row in rows]
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


def hang(line: Content, width: int, gutter: int = 0) -> list[Content]:
    """`line` as screen rows of at most `width` cells, continuation rows hanging under the text:
        after its first `gutter` characters (a line number, a mark), which are blank on them; a diff
        line's +/- gutter repeats; any other line's rows hang under its text (indented two cells at
    least, half the width at most)."""
    if line.cell_length <= width:
        return [line]
    if width <= HANG + 1:
        return line.fold(max(2, width))
    head = line[:gutter] if gutter else line[:HANG]
    if gutter or head.plain in GUTTERS:
        room = width - head.cell_length
        if room >= 2:
            # blank under the gutter, in the line's colours: a repeated `+`/`-` read as two
            # changed lines, and a row from the left edge read as a context line
            pad = (
                Content(" " * len(head.plain), list(head.spans))
                if not gutter
                else Content(" " * head.cell_length)
            )
            rows = wrap(line[len(head.plain) :], room)
            return [head + rows[0], *(pad + row for row in rows[1:])]
    # an indented line (YAML, a nested list item) hangs under its own text, in half the width
    indent = min(max(HANG, len(line.plain) - len(line.plain.lstrip(" "))), width // 2)
    first, *_ = breaks(line.plain, width) or [len(line.plain)]
    rest = line[first:]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
    rows = wrap(rest, width - indent) if rest.plain else []
    return [line[:first].rstrip(), *(Content(" " * indent) + row for row in rows)]


def wrap(line: Content, width: int) -> list[Content]:
    """`line` in rows of at most `width` cells (see `breaks`), its styles kept, the spaces at
    each row's end dropped; never a character lost or a wide one split at the edge."""
    width = max(2, width)
    return [row.rstrip() for row in line.divide(breaks(line.plain, width))] or [line]
