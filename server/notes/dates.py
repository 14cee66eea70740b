"""Dates as notes write them, and the relative dates (`-30d`, `today`) the model asks with."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from typing import Any

from server.core.errors import VaultwatchError

RELATIVE = re.compile(r"^([+-]?)(\d+)([dwmy])$")
NAMED = {"today": 0, "yesterday": -1, "tomorrow": 1}
# What parse_when takes, said once: in its error, and where a date filter finds nothing to compare.
DATE_FORMS = (
    "YYYY-MM-DD, 'today', 'yesterday', 'tomorrow', or a relative date like -30d (30 days ago), "
    "-2w, -3m, -1y, or +7d (7 days ahead)"
)


class DateError(VaultwatchError, ValueError):
    """Text that is not a date or a relative date; the message says what is."""

    code = "bad_date"


def as_date(value: Any) -> date | None:
    """A frontmatter value -> date, or None if it is not one."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        s = value.strip()
        if len(s) >= 10 and s[4] == "-" and s[7] == "-":
            try:
                return date.fromisoformat(s[:10])
            except ValueError:
                return None
    return None


def note_date(date_fields: Iterable[str], fields: Mapping[str, Any]) -> date:
    """The date a new note's file name is made from: the first of its type's date fields that
    holds a date, else its `date`, else today. The write tools' `note_path` and the owner's
    new-note form (which fills a `week` field from it) ask the same."""
    for name in (*date_fields, "date"):
        found = as_date(fields.get(name))
        if found is not None:
            return found
    return date.today()


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    for day in (d.day, 30, 29, 28):
        try:
            return date(year, month, day)
        except ValueError:
            continue
    raise AssertionError("unreachable")


def parse_when(text: Any, today: date | None = None) -> date:
    """`2026-10-02`, `today`, `-30d`, `+2w`, `-3m`, `-1y` -> a date. DateError says what works."""
    today = today or date.today()
    d = as_date(text)
    if d is not None:
        return d
    if isinstance(text, str):
        s = text.strip().lower()
        if s in NAMED:
            return today + timedelta(days=NAMED[s])
        m = RELATIVE.match(s)
        if m:
            sign = -1 if m.group(1) == "-" else 1
            n, unit = int(m.group(2)) * sign, m.group(3)
            if unit == "d":
                return today + timedelta(days=n)
            if unit == "w":
                return today + timedelta(weeks=n)
            if unit == "m":
                return _add_months(today, n)
            return _add_months(today, 12 * n)
    shown = repr(text if not isinstance(text, str) or len(text) <= 100 else text[:100] + "…")
    raise DateError(f"{shown} is not a date: use {DATE_FORMS}")


def looks_like_date(value: Any) -> bool:
    if as_date(value) is not None:
        return True
    return isinstance(value, str) and (
        value.strip().lower() in NAMED or RELATIVE.match(value.strip().lower()) is not None
    )
