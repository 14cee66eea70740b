"""The tag trend rule, one home for both halves: list_tags and get_context's `tags` block (the
server) and the dashboard's Tags screen count the same windows, call the same tags rising or
quiet, and list them in the same order. Pure functions over parsed notes: no I/O, no MCP.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Literal

from server.notes.config import Config
from server.notes.entry import Entry

Trend = Literal["rising", "steady", "quiet"]


def trend(recent: int, previous: int) -> Trend:
    """Quiet: no use in the window. Rising: at least two uses in the window, and half as many
    again as in the window before it, plus one (so 0 -> 2 rises, 2 -> 4 does too, 4 -> 6 not)."""
    if recent == 0:
        return "quiet"
    if recent >= 2 and recent >= 1.5 * previous + 1:
        return "rising"
    return "steady"


@dataclass
class TagTally:
    """One tag across the vault (matched without case)."""

    key: str  # casefolded: what tags are matched by
    tag: str  # as the vocabulary spells it, else as first seen
    in_vocabulary: bool
    last_used: date
    count: int = 0  # notes that carry it
    recent: int = 0  # of those, dated in the last `days` (today included)
    previous: int = 0  # dated in the `days` before those
    paths: list[str] = field(default_factory=list)

    @property
    def trend(self) -> Trend:
        return trend(self.recent, self.previous)


def tally(entries: Iterable[Entry], config: Config, days: int, today: date) -> list[TagTally]:
    """Every tag used, counted in the window of `days` ending today and the window before;
    most used in the window first, then most used, then by name."""
    start = today - timedelta(days=days)
    prev_start = start - timedelta(days=days)
    found: dict[str, TagTally] = {}
    for e in entries:
        d = e.day
        for t in e.doc.tags:
            k = t.casefold()
            s = found.get(k)
            if s is None:
                spelled = config.vocabulary.get(k, t)
                s = found[k] = TagTally(k, spelled, k in config.vocabulary, d)
            s.count += 1
            s.paths.append(e.doc.path)
            if start < d <= today:
                s.recent += 1
            elif prev_start < d <= start:
                s.previous += 1
            if d > s.last_used:
                s.last_used = d
    return sorted(found.values(), key=lambda s: (-s.recent, -s.count, s.tag.casefold()))


def tag_stats(
    entries: list[Entry], config: Config, days: int, today: date | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Per tag: total, count in the last `days`, last used, trend; plus unused vocabulary tags
    (list_tags and get_context)."""
    tallies = tally(entries, config, days, today or date.today())
    rows = [
        {
            "tag": s.tag,
            "count": s.count,
            "last_used": s.last_used.isoformat(),
            "in_window": s.recent,
            "trend": s.trend,
            "in_vocabulary": s.in_vocabulary,
        }
        for s in tallies
    ]
    used = {s.key for s in tallies}
    unused = sorted(v for k, v in config.vocabulary.items() if k not in used)
    return rows, unused
