"""`group_by`: counts of the selected notes by tag, type, month, folder or any field, spelled as
first seen and counted case-blind (tag trends are `tags`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from server.notes.entry import Entry
from server.notes.frontmatter import to_json
from server.services.conditions import field_value


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
