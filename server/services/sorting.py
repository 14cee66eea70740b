"""The order of a list of notes (`sort`: a date, modified, path or any frontmatter field, either
way); notes without the field come last, by path."""

from __future__ import annotations

from collections import Counter
from typing import Any

from server.notes.dates import as_date
from server.notes.entry import Entry
from server.notes.filters import QueryError
from server.services.conditions import field_value

# keys every note has a value for (or that field_value knows without frontmatter)
BUILT_IN = ("date", "modified", "path", "title", "type", "folder", "tags")


def sort_entries(entries: list[Entry], sort: str | None) -> list[Entry]:
    spec = (sort or "-date").strip()
    desc = spec.startswith("-")
    key = spec.lstrip("+-") or "date"
    if key not in BUILT_IN and entries and all(field_value(e, key) is None for e in entries):
        # sort='size' listed the notes by path as if it had been applied: say it was not
        raise QueryError(_no_such_key(entries, key))

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


def _no_such_key(entries: list[Entry], key: str) -> str:
    common = Counter(k for e in entries for k in e.doc.frontmatter if isinstance(k, str))
    fields = [repr(k[:60]) for k, _ in common.most_common(12)]
    have = f" Fields these notes have: {', '.join(fields)}." if fields else ""
    return (
        f"none of the {len(entries):,} notes listed has a field {key[:100]!r} to sort by. "
        f"sort takes {', '.join(BUILT_IN)} or a frontmatter field, '-' first for descending "
        f"(e.g. '-modified').{have} Call list_docs again with one of these."
    )
