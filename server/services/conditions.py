"""Which notes a list_docs call keeps: the `where` conditions (operators, dates, lists) and the
type, folder, tag and date filters on top of the one note filter (`notes.filters`).

Pure functions over already-parsed notes (`entry.Entry`, classified by `entry.classify`): no
I/O, no MCP.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from server.notes.config import Config
from server.notes.dates import DATE_FORMS, DateError, as_date, looks_like_date, parse_when
from server.notes.entry import Entry
from server.notes.filters import NoteFilter, QueryError

OPS = ("eq", "ne", "in", "exists", "lt", "le", "gt", "ge", "contains")
OP_ALIASES = {
    "lte": "le",
    "gte": "ge",
    "==": "eq",
    "!=": "ne",
    "<": "lt",
    "<=": "le",
    ">": "gt",
    ">=": "ge",
    "not": "ne",
}


def field_value(e: Entry, name: str) -> Any:
    fm = e.doc.frontmatter
    if name in fm:
        return fm[name]
    if name == "path":
        return e.doc.path
    if name == "title":
        return e.doc.title
    if name == "type":
        return e.type
    if name == "folder":
        return e.doc.folder
    if name == "modified":
        return e.modified.date()
    if name == "date":
        return e.date
    if name == "tags":
        return list(e.doc.tags)
    return None


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    da = as_date(a)
    if da is not None and looks_like_date(b):
        return da == parse_when(b)
    if a is None or b is None:
        return a is None and b is None
    return str(a).casefold() == str(b).casefold()


def _compare(a: Any, b: Any) -> int | None:
    """-1/0/1 comparing a note's value with a condition's, or None when they do not compare."""
    if a is None:
        return None
    if isinstance(a, int | float) and not isinstance(a, bool) and isinstance(b, int | float):
        return (a > b) - (a < b)
    da = as_date(a)
    if da is not None and looks_like_date(b):
        db = parse_when(b)
        return (da > db) - (da < db)
    if isinstance(a, str) and isinstance(b, str):
        x, y = a.casefold(), b.casefold()
        return (x > y) - (x < y)
    return None


def _match_one(value: Any, op: str, arg: Any) -> bool:
    many = value if isinstance(value, list) else None
    if op == "exists":
        present = value is not None and value != "" and value != []
        return present == bool(arg)
    if op == "eq":
        return any(_equal(v, arg) for v in many) if many is not None else _equal(value, arg)
    if op == "ne":
        return not _match_one(value, "eq", arg)
    if op == "in":
        if not isinstance(arg, list):
            raise QueryError('\'in\' takes a list, e.g. {"status": {"in": ["open", "waiting"]}}')
        return any(_match_one(value, "eq", a) for a in arg)
    if op == "contains":
        needle = str(arg).casefold()
        if many is not None:
            return any(needle in str(v).casefold() for v in many)
        return value is not None and needle in str(value).casefold()
    if many is not None:
        return any(_match_one(v, op, arg) for v in many)
    c = _compare(value, arg)
    if c is None:
        return False
    return {"lt": c < 0, "le": c <= 0, "gt": c > 0, "ge": c >= 0}[op]


def compile_where(where: dict[str, Any] | None) -> list[tuple[str, str, Any]]:
    """{"status": "open", "score": {"ge": 3}} -> [(field, op, arg), ...], checked up front."""
    conds: list[tuple[str, str, Any]] = []
    for fld, spec in (where or {}).items():
        if isinstance(spec, dict) and spec:
            for op, arg in spec.items():
                op = OP_ALIASES.get(op, op)
                if op not in OPS:
                    raise QueryError(
                        f"unknown operator {op!r} for field {fld!r}; use one of {', '.join(OPS)}"
                    )
                if op in ("lt", "le", "gt", "ge") and isinstance(arg, str) and looks_like_date(arg):
                    try:
                        parse_when(arg)
                    except DateError as exc:
                        raise QueryError(str(exc)) from exc
                conds.append((fld, op, arg))
        elif isinstance(spec, list):
            conds.append((fld, "in", spec))
        else:
            conds.append((fld, "eq", spec))
    return conds


@dataclass
class Filters:
    type: str | None = None
    folder: str | None = None
    tags_all: list[str] | None = None
    tags_any: list[str] | None = None
    tags_none: list[str] | None = None
    tag_prefix: str | None = None
    where: dict[str, Any] | None = None
    date_from: str | None = None
    date_to: str | None = None
    date_field: str | None = None
    include_superseded: bool = False

    def check(self, config: Config) -> None:
        self.note_filter(config)

    def note_filter(self, config: Config) -> NoteFilter:
        """The type, folder and tag part, as search_text and recall apply it too."""
        return NoteFilter.of(
            config,
            types=[self.type],
            folders=[self.folder],
            tags_all=self.tags_all or (),
            tags_any=self.tags_any or (),
            tags_none=self.tags_none or (),
            tag_prefix=self.tag_prefix,
            include_superseded=self.include_superseded,
        )


def select(entries: list[Entry], f: Filters, config: Config) -> list[Entry]:
    keep = f.note_filter(config)
    conds = compile_where(f.where)
    lo = _when(f.date_from) if f.date_from else None
    hi = _when(f.date_to) if f.date_to else None
    out = []
    kept = dated = 0
    for e in entries:
        if not keep.matches(e):
            continue
        kept += 1
        if lo or hi:
            d = _entry_date(e, f.date_field)
            if d is None:
                continue
            dated += 1
            if (lo and d < lo) or (hi and d > hi):
                continue
        if conds and not all(_match_one(field_value(e, fl), op, arg) for fl, op, arg in conds):
            continue
        out.append(e)
    if (lo or hi) and kept and not dated:
        raise QueryError(_no_dates(kept, f.date_field))
    return out


def _no_dates(kept: int, field: str | None) -> str:
    """A date range over notes none of which has that date: "0 notes" would read as "nothing
    changed then" (a vault of notes without a `date:` field returned nothing for
    date_from='yesterday'); say why, and what to filter by instead."""
    which = (
        "a date (their type's date field, or a 'date:' frontmatter field)"
        if field is None
        else f"a date in field {field[:100]!r}"
    )
    return (
        f"none of the {kept:,} notes the other filters keep has {which}, so date_from/date_to "
        "can keep none. To filter by when notes last changed, call list_docs again with "
        "date_field='modified'; or name a frontmatter field that holds dates with date_field "
        f"(list_docs(fields=[...]) shows them). date_from/date_to take {DATE_FORMS}."
    )


def _when(text: str) -> date:
    try:
        return parse_when(text)
    except DateError as exc:
        raise QueryError(str(exc)) from exc


def _entry_date(e: Entry, field: str | None) -> date | None:
    if field is None:
        return e.date
    if field == "modified":
        return e.modified.date()
    return as_date(e.doc.frontmatter.get(field))
