"""Text cut to a number of terminal cells (a Chinese character takes two), the one rule every
screen uses for paths, names and clients that do not fit their column."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from textual.content import Content

ELLIPSIS = "…"


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells: whole when it fits, else its start and its end, half
    the room each, around an ellipsis (a folder's top and the file name with its extension
    stay: two notes in one deep folder still read apart); never cut to nothing."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[: max(width, 0)]
    room = width - 1
    head, used = "", 0
    for ch in text:
        w = cell_len(ch)
        if used + w > room // 2:
            break
        head, used = head + ch, used + w
    tail = ""
    for ch in reversed(text[len(head) :]):
        w = cell_len(ch)
        if used + w > room:
            break
        tail, used = ch + tail, used + w
    return head + ELLIPSIS + tail


def note_label(path: str, width: int, more: int = 0) -> Content:
    """A note in at most `width` cells: its file name first (and `+2` for two more notes),
    then its folder, muted. The folder is shortened first, and dropped when fewer than four
    cells are left for it; then the name's middle."""
    folder, _, name = path.rpartition("/")
    width = max(8, width)
    if more:
        name = f"{cut_middle(name, width - len(str(more)) - 2)} +{more}"
    name = cut_middle(name, width)
    room = width - cell_len(name) - 2
    if not folder or room < 4:
        return Content(name)
    return Content(name) + Content.styled(f"  {cut_middle(folder + '/', room)}", "$text-muted")


class TableCell:
    """A Content cell for a DataTable, measured by its length in cells. DataTable measures
    every cell of every new row (even under a column of fixed width) through `rich_cast`,
    which has Content render itself to segments: 10,000 cells of the Reads screen took most
    of a second to add. Drawn, it renders exactly what the Content renders."""

    __slots__ = ("content",)

    def __init__(self, content: Content) -> None:
        self.content = content

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        n = self.content.cell_length
        return Measurement(n, n)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.content.__rich__()

    def __str__(self) -> str:
        return self.content.plain
