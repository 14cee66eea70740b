"""Superseded notes as the tools see them: where a superseded note points (`successor`), the
chain of replacements (`chain`, which the write refuses to close into a loop), and what
read_doc says first about such a note (`notice`). The rule itself ("is superseded") is
`notes.superseded`; the write that marks a note is `writes.op_supersede`. No MCP here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.core.budget import fit_text
from server.notes.entry import Entry
from server.notes.superseded import (
    BY_FIELD,
    DATE_FIELD,
    by_target,
    is_superseded,
    resolve_target,
)

MAX_CHAIN = 100  # replacements followed before a chain counts as a loop (bounded walk)


def successor(frontmatter: Mapping[str, Any], paths: Mapping[str, Any]) -> str | None:
    """The visible note a superseded note's `superseded_by` names, or None (not superseded,
    no link, or a link to nothing the AI can see)."""
    if not is_superseded(frontmatter):
        return None
    target = by_target(frontmatter)
    return resolve_target(target, paths) if target else None


def chain(start: str, entries: Mapping[str, Entry], planned: Mapping[str, str]) -> list[str]:
    """The notes reached from `start` by following each one's replacement: `planned` (path ->
    its new replacement, from this write) first, else its frontmatter. Stops at a note that is
    not superseded, at a repeat, or after MAX_CHAIN steps."""
    out = [start]
    at = start
    for _ in range(MAX_CHAIN):
        nxt = planned.get(at)
        if nxt is None:
            e = entries.get(at)
            nxt = successor(e.doc.frontmatter, entries) if e is not None else None
        if nxt is None:
            break
        out.append(nxt)
        if nxt in out[:-1]:
            break
        at = nxt
    return out


def notice(entry: Entry, entries: Mapping[str, Entry]) -> str | None:
    """What read_doc says before anything else about a superseded note: by which note (and its
    path) and since when, and to read that one instead."""
    fm = entry.doc.frontmatter
    if not is_superseded(fm):
        return None
    when = fm.get(DATE_FIELD)
    since = f" on {fit_text(str(when), 40)}" if when not in (None, "") else ""
    target = by_target(fm)
    path = successor(fm, entries)
    if path is not None:
        title = entries[path].doc.title if path in entries else path
        return (
            f"superseded{since} by {fit_text(title, 200)!r} ({fit_text(path, 300)}): this note "
            f"is kept for its history only; read {fit_text(path, 300)} for what holds now"
        )
    said = (
        f" ({BY_FIELD}: {fit_text(target, 200)!r}, which names no note you can read)"
        if target
        else ""
    )
    return (
        f"superseded{since}{said}: this note is kept for its history only; "
        "search for what replaced it before relying on it"
    )
