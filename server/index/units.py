"""What of a note gets embedded: its units. Unit 0 is the whole note (title, tags, frontmatter
text and the opening of the body, cut), then one unit per section; comments are left out, and
each unit keeps the excerpt a hit shows."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from server.notes.note import Doc

WHOLE_CHARS = 400  # of a note's text in its whole-note unit (USE averages: more only blurs)
SECTION_CHARS = 160
MAX_SECTIONS = 32  # every section of a long note (was 2: a note of many topics was a blur)
EXCERPT_CHARS = 240
UNITS_VERSION = 5  # bump when units_of() changes what is embedded: old vectors are not reused


@dataclass(frozen=True)
class Unit:
    heading: str | None  # None: the whole note
    text: str  # what is embedded
    excerpt: str  # what a hit shows


_CLEAN_SPAN = 4  # raw characters cleaned per character kept


def _clean(text: str) -> str:
    text = re.sub(
        r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]",
        lambda m: m.group(2) or m.group(1),
        text,
    )
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[ \t]+", " ", text).strip()


_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)|%%.*?(?:%%|\Z)", re.S)


def _uncommented(text: str, start: int) -> tuple[str, list[tuple[int, int]]]:
    """The body from `start` with HTML and Obsidian comments blanked to spaces (offsets kept),
    and where they were. Obsidian shows neither; a licence header in a comment would otherwise
    be the opening 400 characters of every note of a documentation folder, so every note looked
    alike, and its `# ...` lines were taken for headings."""
    spans = [m.span() for m in _COMMENT.finditer(text, start)]
    if not spans:
        return text[start:], spans
    parts, at = [], start
    for a, b in spans:
        a = max(a, at)
        if b <= a:
            continue
        parts.append(text[at:a])
        parts.append(re.sub(r"[^\n]", " ", text[a:b]))
        at = b
    parts.append(text[at:])
    return "".join(parts), spans


def _paths(headings: list[Any]) -> list[str]:
    """Each heading's chain of parents ("Setup/Linux"), from these headings only: one inside a
    comment is no parent."""
    chain: list[tuple[int, str]] = []
    out = []
    for h in headings:
        while chain and chain[-1][0] >= h.level:
            chain.pop()
        chain.append((h.level, h.text))
        out.append("/".join(t for _, t in chain))
    return out


def units_of(doc: Doc, text: str) -> list[Unit]:
    body, comments = _uncommented(text, doc.body_start)
    text = text[: doc.body_start] + body
    fm_words = " ".join(
        str(v) for k, v in doc.frontmatter.items() if k not in ("tags",) and isinstance(v, str)
    )
    tags = " ".join(doc.tags)
    # cleaning only shortens, so a prefix a few times the kept length yields the same unit;
    # cleaning whole long notes was 5% of embedding time (`uv run python -m bench --only semantic`)
    lead = _clean(body[: _CLEAN_SPAN * WHOLE_CHARS])
    whole = _clean(f"{doc.title}\n{tags}\n{fm_words}\n{lead}")[:WHOLE_CHARS]
    out = [Unit(None, whole, lead[:EXCERPT_CHARS])]
    if len(whole) < WHOLE_CHARS:
        return out  # the whole note fits in one unit: sections would only repeat it
    headings = [h for h in doc.headings if not any(a <= h.start < b for a, b in comments)]
    for h, path in zip(headings[: MAX_SECTIONS * 2], _paths(headings), strict=False):
        section = _clean(
            text[h.body_start : min(h.end, h.body_start + _CLEAN_SPAN * EXCERPT_CHARS)]
        )
        if len(section) < 20:  # a heading with (almost) nothing under it
            continue
        out.append(
            Unit(
                path,
                _clean(f"{doc.title}: {h.text}\n{section}")[:SECTION_CHARS],
                section[:EXCERPT_CHARS],
            )
        )
        if len(out) > MAX_SECTIONS:
            break
    return out
