"""Each note as health reads it, parsed once per content hash (its text, links, whether one
read_doc returns it whole), and its links resolved as the owner's move rewrites them: broken
links (a missing note, #heading or #^block), each note's incoming links."""

from __future__ import annotations

import os
import posixpath
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.core.budget import escaped_len
from server.notes.entry import Entry
from server.notes.links import Link, LinkIndex, code_spans, heading_key, mask_code, parse_links
from server.notes.note import Doc, content_hash, decode, parse_doc
from server.notes.reading import FOOTER_ROOM, fits_one_read
from server.notes.walk import walk_files
from server.services.health_findings import Finding
from server.services.health_store import Rows

if TYPE_CHECKING:
    from server.vault import Vault

SIX_CHAR_ESCAPES = re.compile(r"[\x00-\x07\x0b\x0e-\x1f]")  # escaped as \u00XX in JSON
# a block id ends its line after a space, or right after an embed or link (Obsidian's own help
# writes `![[image.png]]^version-history-image`)
BLOCK_ID = re.compile(r"(?:^|\s|(?<=\]\])|(?<=\)))\^([A-Za-z0-9-]+)[ \t]*$", re.M)


def all_files(root: Path) -> Iterator[str]:
    """Every file of the vault outside dot-folders (private ones included: a link into a
    private folder must resolve there, to be left out, not be called broken), as the one walk
    (notes/walk.py) names them; a symlink is a file when it points inside the vault."""
    return (f.rel for f in walk_files(root))


@dataclass
class _Parsed:
    """What health needs of one note, kept per process by content hash (the index's, kept
    current by stat), so the screen's re-checks read only the notes that changed, and across
    processes in health.sqlite (health_store) without the text, read when first asked."""

    hash: str
    links: tuple[Link, ...]
    fits: bool  # read_doc returns it whole in one call
    limit: int  # the budget `fits` was judged under
    chars: int  # the text's length
    lines: tuple[int, ...]  # the line each link is on (1-based)
    written: tuple[str, ...]  # each link as written
    source: str  # the note's file (absolute), to read its text when asked
    anchors: tuple[set[str], set[str]] | None = None  # headings and ^blocks, when asked
    cjk: bool | None = None  # written in a CJK script (cross_language), when asked
    _text: str | None = None

    @property
    def text(self) -> str:
        """The note's text: read when first asked of a note judged from health.sqlite (as
        the file is now: "" when it is gone)."""
        if self._text is None:
            try:
                with open(self.source, "rb") as fh:
                    self._text = decode(fh.read())[0]
            except OSError:
                self._text = ""
        return self._text

    def row(self) -> dict[str, Any]:
        """What health.sqlite keeps of it (health_store)."""
        return {
            "limit": self.limit,
            "fits": self.fits,
            "chars": self.chars,
            "links": [
                [k.kind, k.target, k.heading, k.alias, k.embed, k.start, k.end, line, written]
                for k, line, written in zip(self.links, self.lines, self.written, strict=True)
            ],
        }

    @classmethod
    def of_row(cls, hash_: str, row: dict[str, Any], source: str) -> _Parsed | None:
        """The note as a row of health.sqlite says; None when the row is not one (the file
        is not trusted: anything else is judged again)."""
        try:
            links, lines, written = [], [], []
            for kind, target, heading, alias, embed, start, end, line, text in row["links"]:
                if not (isinstance(start, int) and isinstance(end, int) and isinstance(line, int)):
                    return None
                if kind not in ("wiki", "md") or not (
                    isinstance(target, str) and isinstance(text, str)
                ):
                    return None
                if not all(v is None or isinstance(v, str) for v in (heading, alias)):
                    return None
                links.append(Link(str(kind), target, heading, alias, bool(embed), start, end))
                lines.append(line)
                written.append(text)
            fits, limit, chars = row["fits"], row["limit"], row["chars"]
            if not (isinstance(fits, bool) and isinstance(limit, int) and isinstance(chars, int)):
                return None
        except (KeyError, TypeError, ValueError):
            return None
        return cls(hash_, tuple(links), fits, limit, chars, tuple(lines), tuple(written), source)


_CACHE: dict[tuple[str, str], _Parsed] = {}
_CACHE_LOCK = threading.Lock()


def _fits(doc: Doc, text: str, type_name: str | None, limit: int) -> bool:
    # Every note of a few KB fits whatever its outline (at most a third) and the note's
    # own fields (at most a quarter) take, and measuring that costs one JSON encode of the
    # text; only longer notes get read_doc's exact rule, which needs their headings.
    room = limit - (2 + limit // 3 + limit // 4 + FOOTER_ROOM + 20)
    # JSON escapes a character in at most 2 unless it is a control character other than
    # \t \n \r \b \f (those take 6): a scan for those is cheaper than encoding the text
    if 2 * len(text) <= room and SIX_CHAR_ESCAPES.search(text) is None:
        return True
    if escaped_len(text) <= room:
        return True
    full = parse_doc(doc.path, text.encode("utf-8"), disk=doc.disk, mtime_ns=doc.mtime_ns)
    return fits_one_read(full, text, type_name, limit)


def _lines(text: str, links: tuple[Link, ...]) -> tuple[int, ...]:
    """The line each link starts on, counting each stretch of the text once."""
    out = [0] * len(links)
    at, line = 0, 1
    for i in sorted(range(len(links)), key=lambda i: links[i].start):
        start = links[i].start
        line += text.count("\n", at, start)
        at = start
        out[i] = line
    return tuple(out)


def _parse(vault: Vault, e: Entry, limit: int, rows: Rows | None = None) -> _Parsed | None:
    key = (str(vault.root), e.doc.path)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit.hash == e.doc.hash and hit.limit == limit:
        return hit
    source = os.path.join(key[0], e.doc.disk)  # a Path per note: 10,000 cost 0.1 s
    row = rows.get(e.doc.path, e.doc.hash) if rows is not None else None
    out = _Parsed.of_row(e.doc.hash, row, source) if row is not None else None
    if out is None or out.limit != limit:
        try:
            with open(source, "rb") as fh:
                data = fh.read()
        except OSError:
            return None  # gone since the index saw it
        text, _ = decode(data)
        links: tuple[Link, ...] = ()
        if "[[" in text or "](" in text:  # every link has one of these; most notes have neither
            spans = code_spans(text) if ("`" in text or "~~~" in text) else []  # as parse_doc
            links = tuple(parse_links(text, mask_code(text, spans)))
        out = _Parsed(
            content_hash(data),
            links,
            _fits(e.doc, text, e.type, limit),
            limit,
            len(text),
            _lines(text, links),
            tuple(text[k.start : k.end] for k in links),
            source,
            _text=text,
        )
        if rows is not None:
            rows.fresh.add(e.doc.path)
    with _CACHE_LOCK:
        _CACHE[key] = out
    return out


def _parse_all(
    vault: Vault, entries: dict[str, Entry], limit: int, rows: Rows | None = None
) -> dict[str, _Parsed]:
    out: dict[str, _Parsed] = {}
    for path, e in entries.items():
        p = _parse(vault, e, limit, rows)
        if p is not None:
            out[path] = p
    return out


def _anchors(path: str, p: _Parsed) -> tuple[set[str], set[str]]:
    """The note's headings (as links compare them) and block ids, parsed when first asked."""
    if p.anchors is None:
        full = parse_doc(path, p.text.encode("utf-8"))
        p.anchors = (
            {heading_key(h.text) for h in full.headings},
            set(BLOCK_ID.findall(p.text)) if "^" in p.text else set(),
        )
    return p.anchors


def _target_path(link: Link, source: str) -> str:
    """Where a link that resolves to nothing would point, to tell whether that is private."""
    if link.kind == "md" and not link.target.startswith("/"):
        return posixpath.normpath(posixpath.join(posixpath.dirname(source), link.target))
    return link.target.lstrip("/")


# vault root -> the last check's files, indexed, and the folders' mtimes when they were listed
_INDEXES: dict[str, tuple[LinkIndex, dict[str, int] | None]] = {}
# a folder changed this recently may change again within the file system clock's tick
# without its mtime moving: its listing is not trusted to stand for the next check
SETTLED_NS = 2_000_000_000


def _listed(root: Path) -> tuple[set[str], dict[str, int] | None]:
    """Every file (`all_files`), and each folder's mtime taken before it was listed: None
    when one was changed moments ago, or a symlink was met (its target's folder may change
    without any of these)."""
    stamps: dict[str, int] | None = {}
    links = False

    def folder(_rel: str, _disk: str, absolute: str) -> None:
        nonlocal stamps
        if stamps is None:
            return
        try:
            stamps[absolute] = os.stat(absolute).st_mtime_ns
        except OSError:
            stamps = None

    def link() -> None:
        nonlocal links
        links = True

    started = time.time_ns()
    files = {f.rel for f in walk_files(root, on_folder=folder, on_link=link)}
    if links or stamps is None or any(m >= started - SETTLED_NS for m in stamps.values()):
        return files, None
    return files, stamps


def _unchanged(stamps: dict[str, int]) -> bool:
    """No file came, went or was renamed in any folder listed (each folder's mtime moves
    when an entry is added, removed or renamed in it, and a new folder's parent's does)."""
    try:
        return all(os.stat(d).st_mtime_ns == m for d, m in stamps.items())
    except OSError:
        return False


def _link_index(root: Path) -> LinkIndex:
    """The vault's files indexed for links: built again only when a file came or went (a
    LinkIndex is a pure function of the file names; sorting and keying 10,000 of them is most
    of what resolving links costs a re-check), and the vault walked again only when a
    folder's mtime says so (`_listed`: a second walk of 10,000 files after the index's)."""
    with _CACHE_LOCK:
        hit = _INDEXES.get(str(root))
    if hit is not None and hit[1] is not None and _unchanged(hit[1]):
        return hit[0]
    files, stamps = _listed(root)
    index = hit[0] if hit is not None and hit[0].files == files else LinkIndex(files)
    with _CACHE_LOCK:
        _INDEXES[str(root)] = (index, stamps)
    return index


def _links(
    vault: Vault, parsed: dict[str, _Parsed]
) -> tuple[list[Finding], dict[str, int], set[str]]:
    """(broken links, incoming link count per note, notes with a link that resolves)."""
    private = vault.policy.is_private
    index = _link_index(vault.root)
    broken: list[Finding] = []
    lines: dict[tuple[str, str], tuple[str, list[int]]] = {}  # (note, link as written)
    incoming: dict[str, int] = {}
    linking: set[str] = set()
    for src, p in parsed.items():
        for link, line, written in zip(p.links, p.lines, p.written, strict=True):
            if "<%" in link.target or "{{" in link.target:
                continue  # a template's placeholder (Templater's <% %>, the core plugin's {{ }})
            target = index.resolve(link, src)
            if target is None:
                if private(_target_path(link, src)):
                    continue  # a link into a private folder: not shown, even as broken
                what = (
                    "embed" if link.embed else ("link" if link.kind == "wiki" else "markdown link")
                )
                reason = f"{what} {link.target!r}: no such note or file"
            elif private(target):
                continue  # neither a link nor a broken one: private notes never appear
            else:
                if target != src:
                    incoming[target] = incoming.get(target, 0) + 1
                    linking.add(src)
                missing = _missing_heading(link, target, parsed)
                if missing is None:
                    continue
                reason = missing
            lines.setdefault((src, written), (reason, []))[1].append(line)
    # The same link written twice in a note is one finding (its id has no line, so that one
    # ignore quiets both), naming every line it is on.
    for (src, written), (reason, at) in lines.items():
        more = f" (also on line{'s' if len(at) > 2 else ''} {', '.join(map(str, at[1:]))})"
        broken.append(
            Finding(
                "broken_link", src, reason + (more if len(at) > 1 else ""), link=written, line=at[0]
            )
        )
    return broken, incoming, linking


def _missing_heading(link: Link, target: str, parsed: dict[str, _Parsed]) -> str | None:
    """Why a wikilink's #heading or #^block is not in its note (None when it is, or when the
    link names none). Markdown links' fragments are slugs in many tools: not judged."""
    if link.kind != "wiki" or not link.heading or target not in parsed:
        return None
    headings, blocks = _anchors(target, parsed[target])
    part = link.heading.rsplit("#", 1)[-1].strip()  # [[Note#Top#Sub]]: the last one
    if part.startswith("^"):
        if part[1:] in blocks:
            return None
        return f"no block ^{part[1:]} in {target}"
    if not part or heading_key(part) in headings:
        return None
    return f"no heading {part!r} in {target}"
