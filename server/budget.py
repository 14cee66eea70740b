"""The result budget: sizes as the client receives them, and the one way a value is cut to fit.

`limits.result_chars` bounds the text of a tool result, which is compact JSON: a newline costs
two chars there, a control character six, a tag list or a frontmatter field as much as its
JSON. So every budget is measured with `json_len`, never on the raw text. Tools page their
results themselves (so that paging stays exact); `shrink` is what cuts a single item that is
bigger than a whole page, and the last guard on every result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

CUT = "…"
# Ids and paging instructions are cut only if nothing else is left to cut: without them the
# model cannot act on the result or get the rest.
KEEP = frozenset({"path", "hash", "commit", "next", "next_cursor", "range", "chars", "total"})
_MAX_STEPS = 400


def json_len(value: Any) -> int:
    """Chars of `value` as compact JSON (how results are sent: ensure_ascii off, no spaces)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def escaped_len(text: str) -> int:
    """Chars `text` takes inside a JSON string (without the quotes)."""
    return json_len(text) - 2


def fit_text(text: str, room: int, marker: str = CUT) -> str:
    """`text`, or its longest prefix plus `marker`, whose JSON string (quotes included) takes
    at most `room` chars."""
    if json_len(text) <= room:
        return text
    return text[: prefix_fitting(text, 0, len(text), room - json_len(marker))] + marker


def prefix_fitting(text: str, start: int, end: int, room: int) -> int:
    """The largest `stop` in [start, end] with text[start:stop] taking at most `room` chars
    as a JSON string (quotes included)."""
    room -= 2
    if room <= 0:
        return start
    hi = min(end, start + room)  # a char takes at least one
    if escaped_len(text[start:hi]) <= room:
        return hi
    lo = start
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if escaped_len(text[start:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cap_message(message: str, limit: int) -> str:
    """An error message cut to `limit` chars in the middle: its start says what happened and
    its end what to do next, while the middle is where echoed arguments and long lists go."""
    if len(message) <= limit:
        return message
    gap = f" … ({len(message) - limit + 40:,} chars cut) … "
    head = (limit - len(gap)) * 2 // 3
    tail = limit - len(gap) - head
    return message[:head] + gap + message[len(message) - tail :]


def shrink(value: Any, room: int, keep: frozenset[str] = KEEP) -> Any:
    """A copy of `value` whose compact JSON takes at most `room` chars, if cutting can get it
    there: the biggest string or list of plain values first (strings keep their start, lists
    their first items), then lists of records, then what is under a `keep` key."""
    if json_len(value) <= room:
        return value
    value = json.loads(json.dumps(value, ensure_ascii=False, default=str))  # a private copy
    for stage in ("leaf", "records", "any"):
        for _ in range(_MAX_STEPS):
            over = json_len(value) - room
            if over <= 0:
                return value
            found = _biggest(value, stage, keep)
            if found is None:
                break
            parent, key, item, size = found
            parent[key] = _cut(item, max(size - over, 0))
    return value


def _candidates(
    value: Any, stage: str, keep: frozenset[str], kept: bool = False
) -> Iterator[tuple[Any, Any, Any]]:
    """(parent, key, value) of each string or list that `stage` may cut."""
    children = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in children:
        protected = kept or (isinstance(key, str) and key in keep)
        if isinstance(item, str | list):
            records = isinstance(item, list) and any(isinstance(x, dict | list) for x in item)
            allowed = stage == "any" or (
                not protected and (records if stage == "records" else not records)
            )
            if allowed:
                yield value, key, item
        if isinstance(item, dict | list):
            yield from _candidates(item, stage, keep, protected)


def _biggest(value: Any, stage: str, keep: frozenset[str]) -> tuple[Any, Any, Any, int] | None:
    best: tuple[Any, Any, Any, int] | None = None
    for parent, key, item in _candidates(value, stage, keep):
        size = json_len(item)
        if size > (best[3] if best else _min_size(item)):
            best = (parent, key, item, size)
    return best


def _min_size(item: Any) -> int:
    return json_len(CUT) if isinstance(item, str) else 2


def _cut(item: Any, room: int) -> Any:
    if isinstance(item, str):
        return fit_text(item, max(room, json_len(CUT)))
    kept: list[Any] = []
    used = 2
    for x in item:
        used += json_len(x) + (1 if kept else 0)
        if used > room:
            break
        kept.append(x)
    return kept
