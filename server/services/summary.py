"""A note as a list item: path, title, type, dates, tags, hash and its frontmatter fields, each
value cut to a length."""

from __future__ import annotations

import json
from typing import Any

from server.notes.entry import Entry
from server.notes.frontmatter import to_json


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
