"""Tag trends for the dashboard: weekly counts over 12 weeks beside the server's own trend rule."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import Any

from app.services.stats import sparkline
from server.services.tags import tally
from server.vault import Vault

WEEKS = 12


MARKS = {"rising": "↑ rising", "steady": "", "quiet": "· quiet"}


TREND_DAYS = 30  # the window the trend mark compares (list_tags' default)


def tag_trends(
    vault: Vault, today: date | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Per tag: weekly counts over 12 weeks, count in the last 30 days, mark; and its notes.
    Counts, trend and order are the server's own (`server.services.tags`, as list_tags gives them);
    only the weekly buckets are the dashboard's."""
    today = today or date.today()
    entries = list(vault.entries().values())
    config = vault.config
    weekly: dict[str, list[int]] = defaultdict(lambda: [0] * WEEKS)
    for e in entries:
        age = (today - e.day).days
        if 0 <= age < WEEKS * 7:
            for t in e.doc.tags:
                weekly[t.casefold()][WEEKS - 1 - age // 7] += 1
    tallies = tally(entries, config, TREND_DAYS, today)
    rows: list[dict[str, Any]] = [
        {
            "tag": s.tag,
            "spark": sparkline(weekly[s.key]),
            "recent": s.recent,
            "total": s.count,
            "mark": MARKS[s.trend],
        }
        for s in tallies
    ]
    return rows, {s.tag: sorted(s.paths) for s in tallies}
