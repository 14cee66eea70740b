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
# A page's items and a read's content are cut inside first (an item's tags, a field), not as a
# whole: dropping an item or the end of the content would make the cursor skip it.
WHOLE = frozenset({"docs", "hits", "groups", "blocks", "content"})
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


def shrink(value: Any, room: int) -> Any:
    """A copy of `value` whose compact JSON takes at most `room` chars, if cutting can get it
    there. The biggest string, list or mapping is cut first (strings keep their start, lists
    their first items, mappings their first keys); ids and paging (KEEP) and whole pages
    (WHOLE) only when nothing else is left."""
    if json_len(value) <= room:
        return value
    # a private copy, held in a list so that the value itself can be cut like any other
    holder = [json.loads(json.dumps(value, ensure_ascii=False, default=str))]
    for careful in (True, False):
        for _ in range(_MAX_STEPS):
            over = json_len(holder[0]) - room
            if over <= 0:
                return holder[0]
            found = _biggest(holder, careful)
            if found is None:
                break
            parent, key, item, size = found
            # a container whose biggest part alone holds the excess: cut that part instead
            # (the text of a block rather than the block, a huge title rather than the item)
            while isinstance(item, list | dict):
                inner = _biggest_child(item, careful)
                if inner is None or inner[2] - _min_size(inner[1]) < over:
                    break
                parent, (key, item, size) = item, inner
            parent[key] = _cut(item, max(size - over, 0))
    return holder[0]


def _candidates(value: Any, careful: bool) -> Iterator[tuple[Any, Any, Any]]:
    """(parent, key, value) of each string, list or mapping below `value` that may be cut."""
    children = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in children:
        named = key if isinstance(key, str) else ""
        if careful and named in KEEP:
            continue
        if isinstance(item, str | list | dict) and not (careful and _whole(named, item)):
            yield value, key, item
        if isinstance(item, list | dict):
            yield from _candidates(item, careful)


def _biggest_child(item: Any, careful: bool) -> tuple[Any, Any, int] | None:
    """(key, value, size) of the biggest part of a container that may be cut."""
    best: tuple[Any, Any, int] | None = None
    children = item.items() if isinstance(item, dict) else enumerate(item)
    for key, child in children:
        named = key if isinstance(key, str) else ""
        if not isinstance(child, str | list | dict):
            continue
        if careful and (named in KEEP or _whole(named, child)):
            continue
        size = json_len(child)
        if best is None or size > best[2]:
            best = (key, child, size)
    return best


def _whole(key: str, item: Any) -> bool:
    """Kept whole while anything else can be cut: a page (WHOLE), and a record (a mapping
    with an id or a page in it), whose keys would otherwise go from the end, ids included."""
    if key in WHOLE:
        return True
    return isinstance(item, dict) and any(k in KEEP or k in WHOLE for k in item)


def _biggest(value: Any, careful: bool) -> tuple[Any, Any, Any, int] | None:
    best: tuple[Any, Any, Any, int] | None = None
    for parent, key, item in _candidates(value, careful):
        size = json_len(item)
        if size > (best[3] if best else _min_size(item)):
            best = (parent, key, item, size)
    return best


def _min_size(item: Any) -> int:
    return json_len(CUT) if isinstance(item, str) else 2


def _cut(item: Any, room: int) -> Any:
    if isinstance(item, str):
        return fit_text(item, max(room, json_len(CUT)))
    used = 2
    if isinstance(item, dict):
        out: dict[str, Any] = {}
        for k, v in item.items():
            used += json_len(k) + 1 + json_len(v) + (1 if out else 0)
            if used > room:
                break
            out[k] = v
        return out
    kept: list[Any] = []
    for x in item:
        used += json_len(x) + (1 if kept else 0)
        if used > room:
            break
        kept.append(x)
    return kept


def compact(data: dict[str, Any]) -> str:
    """A result as the client receives it: compact JSON, non-ASCII kept."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def fit_result(data: dict[str, Any], limit: int) -> tuple[dict[str, Any], str]:
    """(data, text) of a tool result exactly as it is sent: None-valued keys left out (results
    stay short), then, when the text is over `limit`, the biggest values cut (never ids).
    The tools and the owner's preview of get_context both go through here, so the preview is
    the text a conversation receives, byte for byte."""
    data = {k: v for k, v in data.items() if v is not None}
    text = compact(data)
    if len(text) > limit:
        # The tools page to fit; this is the last guard, for what no page could split (a huge
        # title, tags or field of a single note): cut the biggest values, never ids.
        data = shrink(data, limit)
        text = compact(data)
    return data, text


# Keys under which a result holds a note's own data, not a note of the vault: a frontmatter
# field called `path` is the owner's value, not a note the result names.
_NOT_NOTES = frozenset({"fields", "frontmatter", "outline", "sections"})


def paths_named(data: Any) -> list[str]:
    """Every note path a result names (`path` keys at any depth, in order, once each): what
    the model was given to read. One rule for every read tool, so the journal's `paths` of a
    listing, a search, recall, read_doc and get_context mean the same thing."""
    out: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "path" and isinstance(v, str) and v:
                    out.setdefault(v)
                elif k not in _NOT_NOTES:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(data)
    return list(out)
