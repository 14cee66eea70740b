"""Contrast of what a widget draws, for the readability tests: WCAG 2 ratios of the colours a
rendered segment carries (the app's own rule, app.ui.settings.contrast, which themes are
checked against too). A helper module, not a test module: test modules import from here."""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment

from app.ui.settings import contrast as hex_contrast


def contrast(a: Color, b: Color) -> float:
    """The WCAG 2 contrast ratio of two Rich colours."""
    return hex_contrast(a.get_truecolor().hex, b.get_truecolor().hex)


def segment_contrast(seg: Segment) -> float:
    """The contrast of a drawn segment's text against its own background."""
    assert seg.style is not None and seg.style.color and seg.style.bgcolor, seg
    return contrast(seg.style.color, seg.style.bgcolor)
