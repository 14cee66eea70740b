"""Owner feedback drawn as lines: the review, the note view and the feedback screen show it alike."""

from __future__ import annotations

from datetime import datetime

from textual.content import Content

from app.services.feedback import ANSWERED, CLOSED, Feedback
from app.ui.widgets.cells import fit

STATUS_STYLE = {"open": "bold $text-warning", ANSWERED: "bold $text-success", CLOSED: "$text-muted"}


def item_line(item: Feedback, width: int) -> Content:
    """One item in a line: its status, the lines it is about, its text, then its id; cut at
    the end to `width` cells (the text's start is what the owner recognises)."""
    where = lines_words(item)
    head = Content.styled(f"✎ {item.status}", STATUS_STYLE.get(item.status, ""))
    by = f" by {item.answered_by[:8]}" if item.answered_by else ""
    line = head + Content(f"{by} · {where} · {' '.join(item.text.split())} · {item.id}")
    return fit(line, width).rstrip() if width else line


def lines_words(item: Feedback) -> str:
    if not item.lines:
        return "the note"
    return f"line {item.lines}" if "-" not in item.lines else f"lines {item.lines}"


def feedback_lines(items: list[Feedback], width: int, most: int = 3) -> list[Content]:
    """The feedback on one note as the review and the note view show it above the text: the
    newest `most` (at 80x24 the text keeps its room; F lists them all)."""
    if not items:
        return []
    rows = [item_line(i, width) for i in items[:most]]
    if len(items) > most:
        rows.append(Content.styled(f"… {len(items) - most} more feedback (F)", "$text-muted"))
    return rows


def local_time(stamp: str) -> str:
    try:
        return f"{datetime.fromisoformat(stamp).astimezone():%Y-%m-%d %H:%M}"
    except ValueError:
        return stamp
