"""The Reads screen's cells: a day's sparkline, a big result's notes, a client, a time; measured in
terminal cells without drawing (the Most read tab has thousands of rows)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.cells import cell_len
from textual.content import Content

from app.services.stats import BARS
from app.ui.widgets.cells import cut_middle, more_files, note_label
from server.services.reads import (
    BigRead,
    local_time,
)

CLIENT_WIDTH = 30  # a client's name, cut in the middle past it


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


def big_notes(b: BigRead, width: int) -> Content:
    """The notes a big result named, private ones counted but never named."""
    hidden = f"{b.hidden} private" if b.hidden else ""
    if not b.paths:
        return Content.styled(hidden, "$text-muted")
    label = note_label(
        b.paths[0], width - len(f" · {hidden}") if hidden else width, len(b.paths) - 1
    )
    return label + Content.styled(f" · {hidden}", "$text-muted") if hidden else label


def when(at: datetime | None, year: int) -> str:
    """Month, day and time; the date with its year for another year's."""
    if at is None:
        return "never"
    return f"{at:%m-%d %H:%M}" if at.year == year else f"{at:%Y-%m-%d}"


def clients_cell(clients: dict[str, int], width: int = CLIENT_WIDTH) -> str:
    """The client that read it most, and how many others."""
    names = list(clients)
    if not names:
        return ""
    more = f" +{len(names) - 1}" if len(names) > 1 else ""
    return cut_middle(names[0], width - len(more)) + more
