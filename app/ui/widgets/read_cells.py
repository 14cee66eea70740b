"""The Reads screen's cells: a day's sparkline, a big result's notes, a client, a time; measured in
terminal cells without drawing (the Most read tab has thousands of rows); and the widths a
note and a client column share."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.cells import cell_len
from textual.content import Content

from app.services.stats import BARS
from app.ui.widgets.cells import Distinct, more_files, note_label
from server.services.reads import (
    BigRead,
    local_time,
)

CLIENT_WIDTH = 30  # a client's name, cut past it as every screen cuts clients (`Distinct.clients`)
NOTE_WIDTH = 24  # the least the Not read tab's note column takes


def clock(event: dict[str, Any]) -> str:
    at = local_time(event)
    return f"{at:%H:%M:%S}" if at is not None else ""


def sparkline(values: list[int]) -> Content:
    """One cell a day, the biggest day a full bar; a day without calls is a muted dot, so
    the span of days shows and a lone bar sits on its own day."""
    top = max(values) or 1
    return Content.assemble(
        *(
            BARS[min(len(BARS) - 1, round(v / top * (len(BARS) - 1)))]
            if v
            else ("·", "$text-muted")
            for v in values
        )
    )


def label_width(path: str, more: int = 0) -> int:
    """The cells `note_label` takes to show `path` whole (with `+more`): name, two spaces and
    the folder with its slash. Counted, not drawn: the Most read tab has thousands of notes."""
    suffix = len(more_files(more))
    return cell_len(path) + suffix + (2 if "/" in path else 0)


def big_notes_width(b: BigRead) -> int:
    """The cells `big_notes` takes to show its note whole."""
    hidden = len(f" · {b.hidden} private") if b.hidden else 0
    if not b.paths:
        return max(0, hidden - 3)
    return label_width(b.paths[0], len(b.paths) - 1) + hidden


def big_notes(b: BigRead, width: int, cuts: Distinct | None = None) -> Content:
    """The notes a big result named, private ones counted but never named; with `cuts` (the
    file names of every row's note) two different notes never print alike."""
    hidden = f"{b.hidden} private" if b.hidden else ""
    if not b.paths:
        return Content.styled(hidden, "$text-muted")
    label = note_label(
        b.paths[0], width - len(f" · {hidden}") if hidden else width, len(b.paths) - 1, cuts
    )
    return label + Content.styled(f" · {hidden}", "$text-muted") if hidden else label


def when(at: datetime | None, year: int) -> str:
    """Month, day and time; the date with its year for another year's."""
    if at is None:
        return "never"
    return f"{at:%m-%d %H:%M}" if at.year == year else f"{at:%Y-%m-%d}"


def clients_cell(clients: dict[str, int], width: int = CLIENT_WIDTH) -> str:
    """The client that read it most, and how many others (`claude-code +1`)."""
    return clients_column([clients], width)[0]


def clients_column(rows: Sequence[dict[str, int]], width: int = CLIENT_WIDTH) -> list[str]:
    """A client cell per row (`clients_cell`) in `width` cells, cut by the one rule for
    clients (`Distinct.clients`, as the timeline and the review list cut them): at the end
    (`claude-… +1`), and where two would print alike, where they differ (`…code`,
    `…desktop`); a row without `+N` gives its client those cells too (whole where it fits)."""
    tops = [next(iter(c), "") for c in rows]
    mores = [f" +{len(c) - 1}" if len(c) > 1 else "" for c in rows]
    cut = Distinct.clients(t for t in tops if t)
    return [
        cut(t, max(1, width - len(more))) + more if t else ""
        for t, more in zip(tops, mores, strict=True)
    ]


def share(width: int, others: int, notes: int, clients: Sequence[str]) -> tuple[int, int]:
    """(note width, client width): what `others` cells (the other columns, the table's
    margin and scrollbar) leave of the terminal's `width`, shared by a note column whose
    widest label takes `notes` cells whole and a client column (none when `clients` is
    empty); never more than the client's longest name, the note given every cell the
    client does not take. Both whole where there is room. Else the note first, whole if
    the client then keeps 14 cells (`claude-code +1`; down to 8 where the terminal is
    narrow and the note would keep fewer than 20); where the note is cut either way,
    the client keeps a quarter of the room. The app's width: a screen spans it, and its
    own size is not set before its first layout."""
    room = width - others - 2  # the note's padding
    if not clients:
        return max(NOTE_WIDTH, room), 0
    room -= 2  # the client's padding
    need = max(cell_len(k) for k in clients)
    least = max(8, min(14, room - 20))
    client = room - notes if room - notes >= least else max(least, room // 4)
    client = min(need, client)
    return max(8, room - client), client


def scrollbar(height: int, rows: int) -> int:
    """The cells a list tab's scrollbar takes in a terminal `height` rows high: 2 where its
    rows may not all fit (the title, hint, tabs, caption, headings and footer take 8 or 9
    rows), else none."""
    return 2 if rows > height - 10 else 0
