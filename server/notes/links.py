"""Wikilinks and markdown links: find them (outside code), with their exact spans.

Spans are kept so that the owner's move/rename can rewrite a link in place without touching
anything around it.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple
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
# the start of a CommonMark HTML block of type 1, which runs to the line with its closing tag
RAW_HTML = re.compile(r" {0,3}<(pre|script|style|textarea)(?=[\s>]|$)", re.I)
BACKTICKS = re.compile(r"`+")
BLANK_LINE = re.compile(r"\n[ \t]*(?=\r?\n)")
# Inside a table Obsidian writes the alias bar escaped, [[Note\|alias]], so the row keeps its
# cells: the backslash belongs to the separator, never to the target or heading.
ALIAS_BAR = re.compile(r"\\?\|")


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
        return "." in name and not _md_named(name)


class OpenFence(NamedTuple):
    """A code fence that is never closed: CommonMark reads the rest of the note as code."""

    fence: str  # as written: ``` or ~~~~
    start: int  # char offset of its line
    line: int  # 1-based line number in the text


def code_spans(text: str) -> list[tuple[int, int]]:
    """Char ranges of fenced code blocks and inline code: nothing inside them is a link or tag."""
    return code_layout(text)[0]


def code_layout(text: str) -> tuple[list[tuple[int, int]], OpenFence | None]:
    """code_spans, and the fence left open at the end of the text (None when every fence
    closes). As CommonMark has fences: a backtick fence's info string holds no backtick (else
    the line is inline code); a closing fence is the opening's character, at least as many,
    with nothing but blanks after it (```python inside a block is code, not its end). A
    <pre> (<script>, <style>, <textarea>) block holds no fences up to its closing tag:
    Obsidian's help writes <pre><code>```mermaid … ```</code></pre>."""
    spans: list[tuple[int, int]] = []
    pos = 0
    fence: str | None = None
    fence_start = 0
    raw_end: str | None = None  # the closing tag of the raw HTML block we are in
    for line in text.splitlines(keepends=True):
        if raw_end is not None:
            if raw_end in line.lower():
                raw_end = None
            pos += len(line)
            continue
        m = FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
                fence, fence_start = m.group(1), pos
            elif m is None and "<" in line and (html := RAW_HTML.match(line)) is not None:
                end_tag = f"</{html.group(1).lower()}>"
                raw_end = None if end_tag in line[html.end() :].lower() else end_tag
        elif (
            m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and not line[m.end() :].strip()
        ):
            spans.append((fence_start, pos + len(line)))
            fence = None
        pos += len(line)
    open_fence = None
    if fence is not None:
        spans.append((fence_start, len(text)))
        open_fence = OpenFence(fence, fence_start, text.count("\n", 0, fence_start) + 1)
    if "`" in text:
        spans += _inline_code(text, spans)
    spans.sort()
    return spans, open_fence


def _inline_code(text: str, blocks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Code spans as CommonMark has them: a run of backticks closes only on a later run of the
    same length, within its paragraph (never across a blank line); a run with no closer is
    plain text and the next run is tried as an opener. Runs inside fenced blocks are skipped."""
    runs: list[tuple[int, int]] = []
    k = 0
    for m in BACKTICKS.finditer(text):
        while k < len(blocks) and blocks[k][1] <= m.start():
            k += 1
        if k < len(blocks) and blocks[k][0] <= m.start():
            continue  # inside a fence
        runs.append((m.start(), m.end()))
    blanks = [m.start() for m in BLANK_LINE.finditer(text)]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        b = bisect.bisect_left(blanks, end)
        para_end = blanks[b] if b < len(blanks) else len(text)
        width = end - start
        j = i + 1
        while j < len(runs) and runs[j][0] < para_end and runs[j][1] - runs[j][0] != width:
            j += 1
        if j < len(runs) and runs[j][0] < para_end:
            out.append((start, runs[j][1]))
            i = j + 1
        else:
            i += 1
    return out


def _split_alias(inner: str) -> tuple[str, str]:
    """'Note#Heading|alias' or 'Note#Heading\\|alias' -> ('Note#Heading', 'alias')."""
    m = ALIAS_BAR.search(inner)
    return (inner, "") if m is None else (inner[: m.start()], inner[m.end() :])


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
        target, alias = _split_alias(inner)
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


# ------------------------------------------------------------------------------------------------
# Resolving a link to a file, and rewriting links when files move (the owner's move/rename)


# Obsidian's link rule, not the vault's note rule (`paths.is_note`): a link without an
# extension names a `.md` file, and a link to a `.md` file may leave the extension out.
LINK_EXT = ".md"


def _md_named(name: str) -> bool:
    """The name ends in the extension a link may leave out."""
    return name.lower().endswith(LINK_EXT)


class LinkIndex:
    """Every file of the vault, to resolve links the way Obsidian does: a wikilink by note name
    (or by path when it has a '/'), case-insensitively; a markdown link relative to its note.
    When a name fits several notes, the one in the linking note's own folder wins, then the
    shortest path (then the first by name), and the link counts as ambiguous."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = set(files)
        self._exact = {f.casefold(): f for f in sorted(self.files)}
        self._by_name: dict[str, list[str]] = {}
        for f in sorted(self.files):
            name = f.rsplit("/", 1)[-1]
            self._by_name.setdefault(_name_key(name), []).append(f)

    def candidates(self, link: Link, source: str) -> list[str]:
        """Every file the link could mean (more than one: ambiguous)."""
        target = link.target
        if not target:
            return [source]  # [[#Heading]]: the note itself
        if link.kind == "md":
            base = "" if target.startswith("/") else posixpath.dirname(source)
            path = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
            for p in (path, path + LINK_EXT):
                hit = self._exact.get(p.casefold())
                if hit:
                    return [hit]
            return []
        if target.startswith(("./", "../")):
            path = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
            target = path
        if "/" in target:
            want = target.casefold().lstrip("/")
            want_md = want if _has_ext(want) else want + LINK_EXT
            hit = self._exact.get(want_md) or self._exact.get(want)
            if hit:
                return [hit]
            return [f for f in self.files if f.casefold().endswith("/" + want_md)]
        return list(
            self._by_name.get(_name_key(target if _has_ext(target) else target + LINK_EXT), [])
        )

    def resolve(self, link: Link, source: str) -> str | None:
        found = self.candidates(link, source)
        if len(found) <= 1:
            return found[0] if found else None
        folder = posixpath.dirname(source)
        same = [f for f in found if posixpath.dirname(f) == folder]
        return (same or sorted(found, key=lambda f: (f.count("/"), len(f), f)))[0]

    def backlinks(self, target: str, texts: dict[str, str]) -> list[tuple[str, Link]]:
        """(note, link) for every link in `texts` that resolves to `target`."""
        return [
            (src, link)
            for src, text in sorted(texts.items())
            if "[" in text
            for link in parse_links(text)
            if self.resolve(link, src) == target
        ]


def _name_key(name: str) -> str:
    return name.casefold()


def _has_ext(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return "." in base and not base.startswith(".")


def _wiki_text(link: Link, target: str, full: bool, original: str) -> str:
    """The link's new text pointing at `target`: the bare name, or the whole path when the
    name alone would be ambiguous; `.md` kept only if the owner wrote it; heading, alias and
    embed kept as they were."""
    wrote_md = _md_named(link.target)
    shown = target[: -len(LINK_EXT)] if _md_named(target) and not wrote_md else target
    if not full:
        shown = shown.rsplit("/", 1)[-1]
    inner = original[original.index("[[") + 2 : original.rindex("]]")]
    rest = inner[len(_split_alias(inner)[0].partition("#")[0]) :]  # "#Heading\\|alias" as written
    return ("!" if link.embed else "") + "[[" + shown + rest + "]]"


def _md_text(link: Link, target: str, source: str, original: str) -> str:
    rel = posixpath.relpath(target, posixpath.dirname(source) or ".")
    if link.target.startswith("/"):
        rel = "/" + target
    m = MDLINK.search(original)
    assert m is not None
    raw = m.group(2)
    angle = raw.startswith("<") and raw.endswith(">")
    body = raw[1:-1] if angle else raw
    fragment = body[body.index("#") :] if "#" in body else ""
    path = rel if angle else rel.replace("%", "%25").replace(" ", "%20")
    if not _md_named(link.target) and _md_named(target) and not _has_ext(link.target):
        path = path[: -len(LINK_EXT)]  # [x](Note) stays extension-less
    new_raw = f"<{path}{fragment}>" if angle else path + fragment
    return original[: m.start(2)] + new_raw + original[m.end(2) :]


def rewrite_links(
    text: str,
    source_before: str,
    source_after: str,
    moves: dict[str, str],
    before: LinkIndex,
    after: LinkIndex,
) -> str:
    """The note's text with every link that would break or change meaning after `moves`
    rewritten to point where its file went: links to moved files, relative links of a note
    that itself moved, and bare names that the move made ambiguous. Everything else, links in
    code included, is left byte for byte."""
    if "[" not in text:
        return text
    out: list[str] = []
    last = 0
    for link in parse_links(text):
        if not link.target:
            continue
        was = before.resolve(link, source_before)
        if was is None:
            continue  # already broken: not ours to guess
        goal = moves.get(was, was)
        original = text[link.start : link.end]
        new = original
        if link.kind == "md":
            if after.resolve(link, source_after) != goal:
                new = _md_text(link, goal, source_after, original)
        else:
            bare = "/" not in link.target
            # a name that fitted one note and now fits two: spelled out, whatever it resolves to
            ambiguous = (
                bare
                and len(after.candidates(link, source_after)) > 1
                and len(before.candidates(link, source_before)) == 1
            )
            # a path the owner spelled out follows the file exactly, not by a suffix match
            if after.resolve(link, source_after) != goal or ambiguous or (not bare and goal != was):
                short = Link("wiki", goal.rsplit("/", 1)[-1], None, None, link.embed, 0, 0)
                unique = bare and after.candidates(short, source_after) == [goal]
                new = _wiki_text(link, goal, full=not unique, original=original)
        if new != original:
            out.append(text[last : link.start])
            out.append(new)
            last = link.end
    out.append(text[last:])
    return "".join(out)
