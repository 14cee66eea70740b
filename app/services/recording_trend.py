"""The practice recordings' trend per ISO week: median speaking rate, long pauses per minute and
time to the first sentence, from the `recording_*` fields `vaultwatch transcribe --into` (or the
AI, with update_frontmatter) keeps in session notes. Read by `vaultwatch stats` and the stats
screen; empty, and not shown, when no note has them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import yaml

from app.services.vault_files import vault_files
from server.notes.dates import as_date
from server.notes.frontmatter import split_frontmatter
from server.services.speech_metrics import median_or_none

# Read only this much of each note: frontmatter sits at the top, and 10,000 notes stay cheap.
HEAD_BYTES = 8192
MARK = b"recording_wpm"


@dataclass(frozen=True)
class RecordingWeek:
    week: str  # 2026-W49
    monday: date
    recordings: int
    unit: str
    wpm: float | None
    long_pauses_per_min: float | None
    first_sentence_s: float | None

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__, "monday": self.monday.isoformat()}


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def recordings(root: Path) -> list[tuple[date, dict[str, Any]]]:
    """(day, fields) of every note that carries a recording's figures."""
    out = []
    for rel in vault_files(root):
        if not rel.endswith(".md"):
            continue
        try:
            with open(root / rel, "rb") as f:
                head = f.read(HEAD_BYTES)
        except OSError:
            continue
        if MARK not in head:
            continue
        fm, _, _ = split_frontmatter(head.decode("utf-8", "replace"))
        try:
            data = yaml.safe_load(fm or "") or {}
        except yaml.YAMLError:
            continue
        day = as_date(data.get("recording_date")) if isinstance(data, dict) else None
        if day is not None:
            out.append((day, data))
    return out


def weekly(root: Path, since: date | None = None) -> list[RecordingWeek]:
    """One row per ISO week with recordings, oldest first, from `since` on."""
    by_week: dict[date, list[dict[str, Any]]] = {}
    for day, data in recordings(root):
        if since is None or day >= since:
            monday = day - timedelta(days=day.isoweekday() - 1)
            by_week.setdefault(monday, []).append(data)
    rows = []
    for monday in sorted(by_week):
        notes = by_week[monday]
        units = {str(n.get("recording_unit") or "words/min") for n in notes}
        year, week, _ = monday.isocalendar()
        rows.append(
            RecordingWeek(
                week=f"{year}-W{week:02d}",
                monday=monday,
                recordings=len(notes),
                unit=units.pop() if len(units) == 1 else "mixed",
                wpm=_median(n.get("recording_wpm") for n in notes),
                long_pauses_per_min=_median(n.get("recording_long_pauses_per_min") for n in notes),
                first_sentence_s=_median(n.get("recording_first_sentence_s") for n in notes),
            )
        )
    return rows


def _median(values: Any) -> float | None:
    return median_or_none(_number(v) for v in values)


def trend_table(rows: list[RecordingWeek]) -> tuple[list[str], list[list[str | int]]]:
    """The rows as the shell and the screen print them: medians per week."""
    headings = ["week", "recordings", "rate (median)", "long pauses/min", "first sentence"]

    def cell(v: float | None, suffix: str = "") -> str:
        return "-" if v is None else f"{v:g}{suffix}"

    return headings, [
        [
            r.week,
            r.recordings,
            cell(r.wpm, f" {r.unit}"),
            cell(r.long_pauses_per_min),
            cell(r.first_sentence_s, " s"),
        ]
        for r in rows
    ]
