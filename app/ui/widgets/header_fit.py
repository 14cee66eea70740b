"""Fit a one-line status header into the terminal's width: what the owner must not miss (server
down, recall still indexing, a config error) stays whole, and the rest gives way in a fixed
order, to a shorter form first, then to nothing."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content


@dataclass
class Segment:
    forms: list[Content]  # widest first; a segment with one form is never shortened
    shed: int = 0  # segments with a lower number give way first; equal ones left to right


def fit(segments: list[Segment], width: int) -> Content:
    chosen = [0] * len(segments)

    def length() -> int:
        return sum(s.forms[i].cell_length for s, i in zip(segments, chosen, strict=True))

    order = sorted(range(len(segments)), key=lambda k: segments[k].shed)
    for k in order:
        while length() > width and chosen[k] < len(segments[k].forms) - 1:
            chosen[k] += 1
    # what gave way late may fit again in the room a shed segment left: widen it back
    for k in reversed(order):
        while chosen[k] > 0:
            chosen[k] -= 1
            if length() > width:
                chosen[k] += 1
                break
    return Content("").join(s.forms[i] for s, i in zip(segments, chosen, strict=True))
