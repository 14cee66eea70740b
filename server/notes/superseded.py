"""What "superseded" means: the one rule every listing, search, recall, get_context, read_doc,
the write checks and health ask. The AI never deletes a note; a note another one replaced says
so in its frontmatter (`status: superseded`, `superseded_by: "[[new note]]"`, `superseded:
<date>`) and is left out of what the AI finds unless it asks for it. The owner deletes it when
ready (health lists it). Pure functions over frontmatter: no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

STATUS_FIELD = "status"
STATUS = "superseded"
BY_FIELD = "superseded_by"
DATE_FIELD = "superseded"

_WIKILINK = re.compile(r"^\s*!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]\s*$")


def is_superseded(frontmatter: Mapping[str, Any]) -> bool:
    """The note says it was replaced: its `status` is `superseded` (any case, spaces ignored)."""
    value = frontmatter.get(STATUS_FIELD)
    return isinstance(value, str) and value.strip().casefold() == STATUS


def is_superseded_value(field: str, value: Any) -> bool:
    """`status: superseded` is allowed whatever values a doc type lists for `status`: marking a
    note replaced must not be refused as a new problem ("a write may not make a note worse")."""
    return field == STATUS_FIELD and isinstance(value, str) and value.strip().casefold() == STATUS


def by_link(target: str) -> str:
    """The `superseded_by` value for the note at `target` (a vault path): a wikilink by path
    without the `.md`, which Obsidian resolves and shows as a link."""
    return f"[[{target.removesuffix('.md')}]]"


def by_target(frontmatter: Mapping[str, Any]) -> str | None:
    """What `superseded_by` names, as written inside the link (`study/new`), or None."""
    value = frontmatter.get(BY_FIELD)
    if isinstance(value, list) and len(value) == 1:  # `superseded_by: [[x]]` unquoted is a list
        value = value[0]
        while isinstance(value, list) and len(value) == 1:
            value = value[0]
        value = f"[[{value}]]" if isinstance(value, str) else None
    if not isinstance(value, str) or not value.strip():
        return None
    m = _WIKILINK.match(value)
    return (m.group(1) if m else value).strip() or None


def resolve_target(target: str, paths: Iterable[str]) -> str | None:
    """The vault path a `superseded_by` target names among `paths` (visible notes): the path
    itself, the path with `.md`, or a note's name when exactly one note has it."""
    known = list(paths)
    have = set(known)
    for cand in (target, f"{target}.md"):
        if cand in have:
            return cand
    name = target.rsplit("/", 1)[-1].casefold()
    hits = [p for p in known if p.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold() == name]
    return hits[0] if len(hits) == 1 else None
