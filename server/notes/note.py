"""A note parsed: frontmatter, body, headings, tags, links, title, content hash; and one note read
fresh from disk.

A note that cannot be parsed (broken YAML, invalid UTF-8) is still a note: it lists, with its
problem reported, and never makes a call fail.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from server.notes.frontmatter import frontmatter_tags, parse_frontmatter, split_frontmatter
from server.notes.links import Link, code_layout, mask_code, parse_links

HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*(?:[ \t]#+)?[ \t]*$", re.M)
# Obsidian-style inline tag: letters (any script), digits, _ - /; it must follow whitespace or
# start the text, which is checked by hand so the regex can jump straight to each '#'.
INLINE_TAG = re.compile(r"#([\w\-/]+)")
# an HTML start tag with its attributes (quoted values may hold '>' or newlines)
HTML_TAG = re.compile(r"""<[A-Za-z][\w-]*(?:\s(?:[^<>"']|"[^"]*"|'[^']*')*)?/?>""")


BOM = b"\xef\xbb\xbf"  # UTF-8's byte order mark: some editors (Windows') start a file with it


def content_hash(data: bytes) -> str:
    """sha256 of the file's bytes, first 16 hex digits: the hash every read returns.

    A leading BOM is left out. It is the note's encoding, not its text: reads strip it (the
    model never sees it) and the write path puts it back (Store.commit), so the text a write
    plans and the file it leaves must have one hash, or the hash a write returns would not be
    the one the next write is checked against."""
    return hashlib.sha256(memoryview(data)[3:] if data.startswith(BOM) else data).hexdigest()[:16]


class Heading(NamedTuple):  # a NamedTuple: cheap to build, and a big note has thousands
    level: int
    text: str
    path: str  # "Week 42/Log": the chain of parent headings
    start: int  # char offset of the heading line
    body_start: int  # char offset just after the heading line
    end: int  # char offset where the section ends (next heading of same or higher level)
    start_byte: int
    end_byte: int


@dataclass
class Doc:
    path: str  # NFC, posix, relative to the vault root
    disk: str  # relative path as spelled on disk
    size: int
    mtime_ns: int
    hash: str
    frontmatter: dict[str, Any]
    body_start: int  # char offset where the body starts (after the frontmatter)
    chars: int
    headings: tuple[Heading, ...]
    tags: tuple[str, ...]  # frontmatter tags then inline tags, as written, deduplicated
    links: tuple[Link, ...]
    title: str
    problems: tuple[str, ...] = ()
    h1: str | None = None
    full: bool = True  # False in the index: headings and links were not parsed

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""

    @property
    def stem(self) -> str:
        name = self.path.rsplit("/", 1)[-1]
        return name.rsplit(".", 1)[0]

    @property
    def mtime(self) -> datetime:
        return datetime.fromtimestamp(self.mtime_ns / 1e9).astimezone()


def decode(data: bytes) -> tuple[str, str | None]:
    """Bytes -> text; invalid UTF-8 is replaced, not fatal, and reported. A BOM is dropped:
    it is no part of the text (Store.commit keeps it in the file on every write)."""
    if data.startswith(BOM):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode(
            "utf-8", "replace"
        ), f"not valid UTF-8 (byte {exc.start}); shown with replacement characters"


LONE_CR = re.compile(r"\r(?!\n)")


def lf_lines(text: str) -> str:
    """`text` with each lone CR (old Mac OS line endings) made a LF. A lone CR ends a line, as
    CommonMark and Obsidian read it; the parsers here split lines on LF. One character for one,
    so every offset into the result is the same offset into `text`: a Doc parsed from it
    points into the note as it is (a CRLF is left alone: its LF already ends the line)."""
    return LONE_CR.sub("\n", text) if "\r" in text else text


CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7}) ", re.M)
UNCLOSED_FENCE = "a code fence"  # how the problem of a fence never closed begins


def inline_tags(masked_body: str) -> list[str]:
    out = []
    # inside an HTML tag's markup (`<span style="color: #ff0000">`) a '#' is a colour or an
    # anchor, never a tag: Obsidian does not read tags there
    html = [m.span() for m in HTML_TAG.finditer(masked_body)] if "<" in masked_body else []
    for m in INLINE_TAG.finditer(masked_body):
        if m.start() > 0 and not masked_body[m.start() - 1].isspace():
            continue
        if html:
            k = bisect.bisect_left(html, (m.start(),)) - 1
            if k >= 0 and html[k][1] > m.start():
                continue
        tag = m.group(1).rstrip("/")
        if tag and not tag.replace("/", "").replace("-", "").replace("_", "").isdigit():
            out.append(unicodedata.normalize("NFC", tag))
    return out


def _heading_starts(masked: str, start: int) -> list[int]:
    """Offsets of lines that begin with '#', found with str.find (much faster than a ^ regex)."""
    out = []
    if start == 0 and masked.startswith("#"):
        out.append(0)
    elif start > 0 and masked[start - 1] == "\n" and masked.startswith("#", start):
        out.append(start)
    pos = masked.find("\n#", start)
    while pos >= 0:
        out.append(pos + 1)
        pos = masked.find("\n#", pos + 1)
    return out


def _heading_text(text: str, pos: int) -> str:
    """A heading's text from the note itself. The masked text only says where headings are:
    its code is blanked, and a heading made of inline code (### `daily:path`) would be empty."""
    m = HEADING.match(text, pos)
    return m.group(2).strip() if m is not None else ""


def parse_headings(text: str, masked: str, body_start: int) -> tuple[Heading, ...]:
    found: list[tuple[int, str, int, int]] = []
    for pos in _heading_starts(masked, body_start):
        m = HEADING.match(masked, pos)
        if m is None:
            continue
        nl = text.find("\n", m.end())
        body = len(text) if nl < 0 else nl + 1
        found.append((len(m.group(1)), _heading_text(text, pos), m.start(), body))
    if not found:
        return ()
    # Byte offsets, computed incrementally so a 1 MB note with many headings stays linear.
    offsets = sorted({f[2] for f in found} | {len(text)})
    byte_at: dict[int, int] = {}
    pos_c, pos_b = 0, 0
    for off in offsets:
        pos_b += len(text[pos_c:off].encode("utf-8"))
        pos_c = off
        byte_at[off] = pos_b
    # Each section ends where the next heading of the same or a higher level starts: one pass
    # from the end with a stack of "next start per level" keeps this linear.
    ends = [len(text)] * len(found)
    next_at = [len(text)] * 7  # next_at[l]: start of the nearest later heading of level <= l
    for i in range(len(found) - 1, -1, -1):
        level, _, start, _ = found[i]
        ends[i] = next_at[level]
        for lvl in range(level, 7):
            next_at[lvl] = start
    out: list[Heading] = []
    stack: list[tuple[int, str]] = []
    for i, (level, title, start, body) in enumerate(found):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        out.append(
            Heading(
                level=level,
                text=title,
                path="/".join(t for _, t in stack),
                start=start,
                body_start=body,
                end=ends[i],
                start_byte=byte_at[start],
                end_byte=byte_at[ends[i]],
            )
        )
    return tuple(out)


def _dedupe_tags(tags: list[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for t in tags:
        seen.setdefault(t.casefold(), t)
    return tuple(seen.values())


def _first_h1(text: str, masked: str, body_start: int) -> str | None:
    for pos in _heading_starts(masked, body_start):
        m = HEADING.match(masked, pos)
        if m is not None and len(m.group(1)) == 1:
            return _heading_text(text, pos)
    return None


def parse_doc(
    path: str, data: bytes, *, disk: str | None = None, mtime_ns: int = 0, full: bool = True
) -> Doc:
    """Parse a note. `full=False` (the index) skips headings and links, which only a read of
    that one note needs; the title still comes from the first H1."""
    text, decode_problem = decode(data)
    text = lf_lines(text)  # a CR-only note has lines (and headings, frontmatter) too
    problems = [decode_problem] if decode_problem else []
    if "\x00" in text:
        problems.append("contains NUL bytes: looks like a binary file, not a note")
    if ("<<<<<<<" in text or ">>>>>>>" in text) and CONFLICT_MARKER.search(text):
        problems.append("contains git conflict markers (<<<<<<<): a merge was left unfinished")
    fm_text, _, body_start = split_frontmatter(text)
    fm, fm_problem = parse_frontmatter(fm_text)
    if fm_problem:
        problems.append(fm_problem)
    spans, open_fence = code_layout(text) if ("`" in text or "~~~" in text) else ([], None)
    if open_fence is not None:
        problems.append(
            f"{UNCLOSED_FENCE} ({open_fence.fence} on line {open_fence.line}) is never closed: "
            "the rest of the note, headings included, reads as code"
        )
    masked = mask_code(text, spans)
    body_masked = masked[body_start:]
    tags = _dedupe_tags(frontmatter_tags(fm) + inline_tags(body_masked))
    if full:
        headings = parse_headings(text, masked, body_start)
        links = tuple(parse_links(text, masked)) if "[" in text else ()
        h1 = next((h.text for h in headings if h.level == 1), None)
    else:
        headings, links, h1 = (), (), _first_h1(text, masked, body_start)
    fm_title = fm.get("title")
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    title = (
        str(fm_title).strip()
        if isinstance(fm_title, str | int | float) and str(fm_title).strip()
        else h1 or stem
    )
    return Doc(
        path=path,
        disk=disk or path,
        size=len(data),
        mtime_ns=mtime_ns,
        hash=content_hash(data),
        frontmatter=fm,
        body_start=body_start,
        chars=len(text),
        headings=headings,
        tags=tags,
        links=links,
        title=title,
        problems=tuple(problems),
        h1=h1,
        full=full,
    )


@dataclass
class ReadResult:
    doc: Doc
    text: str
    data: bytes = field(repr=False, default=b"")


def read_note(root: Path, rel: str, disk_rel: str | None = None) -> ReadResult:
    """Read one note fresh from disk (never from cache): reads must return the current hash."""
    p = root / (disk_rel or rel)
    data = p.read_bytes()
    st = p.stat()
    doc = parse_doc(rel, data, disk=disk_rel or rel, mtime_ns=st.st_mtime_ns)
    text, _ = decode(data)
    return ReadResult(doc=doc, text=text, data=data)
