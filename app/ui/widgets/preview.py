"""An owner action's preview (a move, a delete, a revert) drawn as lines: its words, then its diff."""

from __future__ import annotations

from textual.content import Content

from app.services import owner_flows as flows
from app.ui.widgets.diffview import render_lines

TONES = {"": "", "bold": "bold", "warning": "bold $text-warning"}


def preview_body(p: flows.Preview, context: int = 1) -> list[Content]:
    lines = [Content.styled(x.text, TONES[x.tone]) if x.tone else Content(x.text) for x in p.lines]
    return lines + render_lines(p.changes, context=context) if p.changes else lines
