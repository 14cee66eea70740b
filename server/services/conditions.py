"""list_docs filters, sorting, paging and group_by (tag counts and trends: `tags`).

Pure functions over already-parsed notes (`entry.Entry`, classified by `entry.classify`): no
I/O, no MCP.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import date
from typing import Any

from server.core.budget import json_len, shrink
from server.notes.config import Config
from server.notes.dates import DateError, as_date, looks_like_date, parse_when
from server.notes.entry import Entry
from server.notes.filters import NoteFilter, QueryError
from server.notes.frontmatter import to_json

# ------------------------------------------------------------------------------------------------
# Conditions

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
        )


def select(entries: list[Entry], f: Filters, config: Config) -> list[Entry]:
    keep = f.note_filter(config)
    conds = compile_where(f.where)
    lo = _when(f.date_from) if f.date_from else None
    hi = _when(f.date_to) if f.date_to else None
    out = []
    for e in entries:
        if not keep.matches(e):
            continue
        if lo or hi:
            d = _entry_date(e, f.date_field)
            if d is None or (lo and d < lo) or (hi and d > hi):
                continue
        if conds and not all(_match_one(field_value(e, fl), op, arg) for fl, op, arg in conds):
            continue
        out.append(e)
    return out


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


# ------------------------------------------------------------------------------------------------
# Sorting, paging, shaping


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


def make_cursor(offset: int, fingerprint: str) -> str:
    return base64.urlsafe_b64encode(f"{offset}:{fingerprint}".encode()).decode().rstrip("=")


def read_cursor(cursor: str | None, fingerprint: str) -> int:
    if not cursor:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        off, fp = raw.split(":", 1)
        offset = int(off)
    except (ValueError, UnicodeDecodeError) as exc:
        raise QueryError(
            "cursor is not one this server gave; omit it to start from the top"
        ) from exc
    if fp != fingerprint:
        raise QueryError(
            "cursor belongs to a different query; repeat the same arguments with it, or omit it"
        )
    return offset


def fingerprint(*parts: Any) -> str:
    raw = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha1(raw.encode()).hexdigest()[:8]


def summarize(e: Entry, fields: list[str] | None, value_chars: int = 300) -> dict[str, Any]:
    doc = e.doc
    item: dict[str, Any] = {
        "path": doc.path,
        "title": doc.title,
        "type": e.type,
        "date": e.date.isoformat() if e.date else None,
        "modified": e.modified.isoformat(timespec="seconds"),
        "tags": list(doc.tags),
        "hash": doc.hash,
    }
    fm = doc.frontmatter
    keys = [k for k in fm if k not in ("tags", "tag", "title")] if fields is None else fields
    out: dict[str, Any] = {}
    for k in keys:
        if k in fm:
            v = to_json(fm[k])
            text = json.dumps(v, ensure_ascii=False)
            out[k] = v if len(text) <= value_chars else text[:value_chars] + "…"
    item["fields"] = out
    if doc.problems:
        item["problems"] = list(doc.problems)
    return item


def page(
    items: list[dict[str, Any]], offset: int, budget: int, fp: str, total: int
) -> tuple[list[dict[str, Any]], str | None]:
    """Keep items while the JSON stays under `budget` chars; cursor to the rest if any. An
    item bigger than a whole page (thousands of tags, a huge field) is cut to fit, alone."""
    kept: list[dict[str, Any]] = []
    used = 0
    for item in items:
        size = json_len(item) + 1
        if kept and used + size > budget:
            break
        if size > budget:
            item = shrink(item, budget - 1)
            size = json_len(item) + 1
        kept.append(item)
        used += size
    nxt = offset + len(kept)
    return kept, (make_cursor(nxt, fp) if nxt < total else None)


def group(entries: list[Entry], by: str) -> list[dict[str, Any]]:
    counts: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    for e in entries:
        if by == "tag":
            keys = list(e.doc.tags) or ["(no tags)"]
        elif by == "type":
            keys = [e.type or "(no type)"]
        elif by == "month":
            keys = [e.day.strftime("%Y-%m")]
        elif by == "folder":
            keys = [e.doc.folder or "(root)"]
        else:
            v = field_value(e, by)
            vals = v if isinstance(v, list) else [v]
            keys = [str(to_json(x)) for x in vals if x is not None and x != ""] or ["(none)"]
        for k in keys:
            folded = k.casefold()
            spelled.setdefault(folded, k)
            counts[folded] += 1
    pairs = [(spelled[k], n) for k, n in counts.items()]
    if by == "month":
        pairs.sort(key=lambda r: r[0], reverse=True)
    else:
        pairs.sort(key=lambda r: (-r[1], r[0]))
    return [{"key": k, "count": n} for k, n in pairs]
