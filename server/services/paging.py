"""Paging shared by list_docs, search and recall: a page is as many items as fit the result
budget, and its cursor names the next offset and the query it belongs to."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from server.core.budget import json_len, shrink
from server.notes.filters import QueryError


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
