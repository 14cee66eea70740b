"""Wikilinks and markdown links: find them (outside code), with their exact spans.

Spans are kept so that the owner's move/rename can rewrite a link in place without touching
anything around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

# Both patterns start with a literal '[' so the regex engine can skip ahead to it; whether a
# link is an embed ('!' before it) is read off the preceding character.
WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
MDLINK = re.compile(
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^<>\n]+>|[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)"
    r"(\s+\"[^\"\n]*\")?\s*\)"
)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


@dataclass(frozen=True)
class Link:
    kind: str  # "wiki" | "md"
    target: str  # note or file as written (decoded for md links), without #heading
    heading: str | None
    alias: str | None
    embed: bool
    start: int  # char span of the whole link in the text
    end: int

    @property
    def is_attachment(self) -> bool:
        """An embed or link to a non-note file (image, pdf, ...)."""
        name = self.target.rsplit("/", 1)[-1]
        return "." in name and not name.lower().endswith(".md")


def code_spans(text: str) -> list[tuple[int, int]]:
    """Char ranges of fenced code blocks and inline code: nothing inside them is a link or tag."""
    spans: list[tuple[int, int]] = []
    pos = 0
    fence: str | None = None
    fence_start = 0
    for line in text.splitlines(keepends=True):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence, fence_start = m.group(1), pos
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            spans.append((fence_start, pos + len(line)))
            fence = None
        pos += len(line)
    if fence is not None:
        spans.append((fence_start, len(text)))
    # inline code outside fences
    blocks = list(spans)
    for m in INLINE_CODE.finditer(text):
        if not _inside(m.start(), blocks):
            spans.append((m.start(), m.end()))
    spans.sort()
    return spans


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def mask_code(text: str, spans: list[tuple[int, int]] | None = None) -> str:
    """The text with code replaced by spaces (newlines kept), so offsets stay valid."""
    spans = code_spans(text) if spans is None else spans
    if not spans:
        return text
    out, last = [], 0
    for a, b in spans:
        if a < last:
            continue
        out.append(text[last:a])
        out.append(re.sub(r"[^\n]", " ", text[a:b]))
        last = b
    out.append(text[last:])
    return "".join(out)


def parse_links(text: str, masked: str | None = None) -> list[Link]:
    """Every wikilink and local markdown link outside code, in order of appearance."""
    masked = mask_code(text) if masked is None else masked
    links: list[Link] = []
    for m in WIKILINK.finditer(masked):
        inner = text[m.start(1) : m.end(1)]
        target, _, alias = inner.partition("|")
        target, _, heading = target.partition("#")
        embed = m.start() > 0 and text[m.start() - 1] == "!"
        links.append(
            Link(
                kind="wiki",
                target=target.strip(),
                heading=heading.strip() or None,
                alias=alias or None,
                embed=embed,
                start=m.start() - embed,
                end=m.end(),
            )
        )
    for m in MDLINK.finditer(masked):
        if m.start() > 0 and text[m.start() - 1] == "[":
            continue  # inside a wikilink's brackets
        raw = text[m.start(2) : m.end(2)]
        if raw.startswith("<") and raw.endswith(">"):
            raw = raw[1:-1]
        if EXTERNAL.match(raw) or raw.startswith("#"):
            continue
        target, _, heading = raw.partition("#")
        embed = m.start() > 0 and text[m.start() - 1] == "!"
        links.append(
            Link(
                kind="md",
                target=unquote(target),
                heading=unquote(heading) or None,
                alias=text[m.start(1) : m.end(1)] or None,
                embed=embed,
                start=m.start() - embed,
                end=m.end(),
            )
        )
    links.sort(key=lambda link: link.start)
    return links
