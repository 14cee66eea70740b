"""The dashboard's one gate for text the AI could have written: every line any widget draws
passes this filter, so a control character in a note, a title, a heading or a commit subject
is drawn as a visible symbol (␛) and never reaches the owner's terminal as a command
(adversarial pass 3, N1: ESC[2K hid an AI line on the review screen, OSC 52 set the clipboard).
Textual's own escape sequences are never in a segment's text (styles and control segments carry
them), so only text is touched, one character for one."""

from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from server.core.safetext import visible_cells


class ShowControls(LineFilter):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        out = segments
        for i, seg in enumerate(segments):
            if seg.control is None and not seg.text.isprintable():
                if out is segments:
                    out = list(segments)
                out[i] = Segment(visible_cells(seg.text), seg.style, seg.control)
        return out
