"""The order of a list of notes (`sort`: a date, modified, path or any frontmatter field, either
way); notes without the field come last, by path."""

from __future__ import annotations

from typing import Any

from server.notes.dates import as_date
from server.notes.entry import Entry
from server.services.conditions import field_value


def sort_entries(entries: list[Entry], sort: str | None) -> list[Entry]:
    spec = (sort or "-date").strip()
    desc = spec.startswith("-")
    key = spec.lstrip("+-") or "date"

    def value(e: Entry) -> Any:
        if key == "date":
            return e.day
        if key == "modified":
            return e.modified_ns
        if key == "path":
            return e.doc.path
        v = field_value(e, key)
        d = as_date(v)
        if d is not None:
            return d
        if isinstance(v, int | float) and not isinstance(v, bool):
            return v
        return None if v is None else str(v).casefold()

    present: list[Entry] = []
    missing: list[Entry] = []
    for e in entries:
        (missing if value(e) is None else present).append(e)
    try:
        present.sort(key=lambda e: e.doc.path)
        present.sort(key=value, reverse=desc)
    except TypeError:  # mixed kinds in one field: compare as text
        present.sort(key=lambda e: str(value(e)), reverse=desc)
    missing.sort(key=lambda e: e.doc.path)
    return present + missing
