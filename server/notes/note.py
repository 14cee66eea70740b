"""A note parsed: frontmatter, body, headings, tags, links, title, content hash; and a stat-keyed
index of every note in the vault so a warm call re-parses only files that changed.

A note that cannot be parsed (broken YAML, invalid UTF-8) is still a note: it lists, with its
problem reported, and never makes a call fail.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from server.notes.links import Link, code_spans, mask_code, parse_links

if TYPE_CHECKING:  # the owner (the vault) hands in the watcher; only its type is named here
    from server.index.watch import TreeWatcher

if TYPE_CHECKING:
    from server.notes.parsecache import Cached, ParseCache

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it


class FrontmatterLoader(_Base):
    """Safe loader that keeps dates as the strings the owner wrote.

    A date like 2026-13-45 would otherwise crash the whole parse; as text it is reported by
    validation instead, and `as_date` turns valid ones into dates where a query needs them.
    """


FrontmatterLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in _Base.yaml_implicit_resolvers.items()
}

FM_MAX_CHARS = 64 * 1024
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*(?:[ \t]#+)?[ \t]*$", re.M)
# Obsidian-style inline tag: letters (any script), digits, _ - /; it must follow whitespace or
# start the text, which is checked by hand so the regex can jump straight to each '#'.
INLINE_TAG = re.compile(r"#([\w\-/]+)")


def content_hash(data: bytes) -> str:
    """sha256 of the file's exact bytes, first 16 hex digits: the hash every read returns."""
    return hashlib.sha256(data).hexdigest()[:16]


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
    """Bytes -> text; invalid UTF-8 is replaced, not fatal, and reported."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode(
            "utf-8", "replace"
        ), f"not valid UTF-8 (byte {exc.start}); shown with replacement characters"


CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7}) ", re.M)
FM_OPEN = re.compile(r"\A---[ \t]*\r?\n")
FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.M)


def split_frontmatter(text: str) -> tuple[str | None, int, int]:
    """(yaml text or None, yaml start, body start). An unclosed fence means no frontmatter."""
    m = FM_OPEN.match(text)
    if not m:
        return None, 0, 0
    close = FM_CLOSE.search(text, m.end())
    if close is None:
        return None, 0, 0
    return text[m.end() : close.start()], m.end(), close.end()


# --- a fast path for the frontmatter most notes have -------------------------------------------
# `key: value` lines with plain, simply-quoted or flow-list values cover nearly every note, and
# PyYAML's Python-level constructor is most of a cold scan's time on them (`uv run python -m
# bench --only read`: cold scan). Such lines are read here, and
# each plain scalar is resolved with PyYAML's own resolver and constructors, so the result is
# exactly what the full parse gives (a property test holds the two paths equal). Anything else
# (block lists, nesting, anchors, multi-line strings, comments after values) takes the full parse.

_FAST_KEY = re.compile(r"([^\W\d][\w.-]*):(?:[ \t]+(.*?))?[ \t]*\Z")
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_SCALARS: Any = None


def _plain_ok(v: str, in_flow: bool) -> bool:
    if not v or v[0] in _INDICATORS or v[0].isspace() or v[-1] == ":":
        return False
    if ": " in v or " #" in v or "\t" in v:
        return False
    return not (in_flow and any(c in v for c in ",[]{}"))


class _Decline(Exception):
    """The fast path cannot read this value the way YAML would: use the full parse."""


@functools.lru_cache(maxsize=8192)  # scalars are immutable; dates, states, numbers repeat a lot
def _resolve_plain(v: str) -> Any:
    global _SCALARS
    if _SCALARS is None:
        _SCALARS = FrontmatterLoader("")  # an instance only for its resolver and constructors
    tag = _SCALARS.resolve(yaml.ScalarNode, v, (True, False))
    construct = _SCALARS.yaml_constructors.get(tag)
    if construct is None:
        raise _Decline(tag)
    return construct(_SCALARS, yaml.ScalarNode(tag, v))


def _fast_value(v: str | None) -> tuple[bool, Any]:
    if v is None or v == "":
        return True, None
    if v[0] == '"':
        inner = v[1:-1]
        ok = len(v) >= 2 and v[-1] == '"' and '"' not in inner and "\\" not in inner
        return ok, inner
    if v[0] == "'":
        inner = v[1:-1]
        return len(v) >= 2 and v[-1] == "'" and "'" not in inner, inner
    if v[0] == "[":
        if v[-1] != "]" or any(c in v[1:-1] for c in "[]{}\"'"):
            return False, None
        # YAML's blanks are spaces and tabs only: str.strip() would also drop a no-break or
        # ideographic space, which YAML keeps as (part of) a value
        inner = v[1:-1].strip(" \t")
        if not inner:
            return True, []
        items = [x.strip(" \t") for x in inner.split(",")]
        if items and items[-1] == "":
            items.pop()  # a trailing comma is allowed in flow sequences
        if not all(_plain_ok(x, True) for x in items):
            return False, None
        return True, [_resolve_plain(x) for x in items]
    if not _plain_ok(v, False):
        return False, None
    return True, _resolve_plain(v)


def fast_frontmatter(fm: str) -> dict[str, Any] | None:
    """The frontmatter as the full YAML parse would give it, or None to ask for that parse."""
    out: dict[str, Any] = {}
    for line in fm.splitlines():
        if not line.strip() or line.startswith("#"):
            continue  # blank lines and whole-line comments
        m = _FAST_KEY.match(line)
        if m is None:
            return None
        try:
            ok, value = _fast_value(m.group(2))
        except (_Decline, ValueError):
            return None
        if not ok:
            return None
        out[_resolve_plain(m.group(1))] = value  # keys resolve as YAML does: `no:` is False
    return out


def parse_frontmatter(fm: str | None) -> tuple[dict[str, Any], str | None]:
    if fm is None or not fm.strip():
        return {}, None
    if len(fm) > FM_MAX_CHARS:
        return {}, f"frontmatter is larger than {FM_MAX_CHARS // 1024} KB; not parsed"
    fast = fast_frontmatter(fm)
    if fast is not None:
        return fast, None
    try:
        data = yaml.load(fm, Loader=FrontmatterLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at frontmatter line {mark.line + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or "cannot be parsed"
        return {}, f"broken YAML{line}: {reason}"
    except RecursionError:
        return {}, "broken YAML: nested too deeply"
    except Exception as exc:  # a constructor error inside libyaml: still just a broken note
        return {}, f"broken YAML: {exc}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, "frontmatter is not a mapping of keys"
    if not jsonable_ok(data):
        return {}, "frontmatter is too large or too deeply nested (YAML aliases?); not used"
    return {str(k): v for k, v in data.items()}, None


def jsonable_ok(value: Any, limit: int = 5_000) -> bool:
    """False for values that would explode when serialised (alias bombs, deep nesting)."""
    seen = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        seen += 1
        if seen > limit or depth > 20:
            return False
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list | tuple):
            stack.extend((x, depth + 1) for x in v)
    return True


def to_json(value: Any) -> Any:
    """Frontmatter values -> JSON (dates as ISO strings)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def frontmatter_tags(fm: dict[str, Any]) -> list[str]:
    raw = fm.get("tags", fm.get("tag"))
    if raw is None:
        return []
    items = (
        re.split(r"[,\s]+", raw)
        if isinstance(raw, str)
        else raw
        if isinstance(raw, list)
        else [raw]
    )
    out = []
    for item in items:
        if item is None or isinstance(item, dict | list):
            continue
        t = unicodedata.normalize("NFC", str(item).strip().lstrip("#"))
        if t:
            out.append(t)
    return out


def inline_tags(masked_body: str) -> list[str]:
    out = []
    for m in INLINE_TAG.finditer(masked_body):
        if m.start() > 0 and not masked_body[m.start() - 1].isspace():
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
    problems = [decode_problem] if decode_problem else []
    if "\x00" in text:
        problems.append("contains NUL bytes: looks like a binary file, not a note")
    if ("<<<<<<<" in text or ">>>>>>>" in text) and CONFLICT_MARKER.search(text):
        problems.append("contains git conflict markers (<<<<<<<): a merge was left unfinished")
    fm_text, _, body_start = split_frontmatter(text)
    fm, fm_problem = parse_frontmatter(fm_text)
    if fm_problem:
        problems.append(fm_problem)
    spans = code_spans(text) if ("`" in text or "~~~" in text) else []
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
class _Entry:
    mtime_ns: int
    size: int
    ino: int
    doc: Doc
    ctime_ns: int = 0  # kept for the persisted cache's stricter key


@dataclass
class ScanStats:
    files: int = 0
    parsed: int = 0
    removed: int = 0
    cached: int = 0  # taken from the persisted parse cache instead of parsed


class DocIndex:
    """Every note in the vault, re-parsed only when its (mtime_ns, size, inode) changes.

    The first call walks the whole tree. Later calls, where inotify works, look only at what the
    kernel says changed; elsewhere (or after lost events, a config change that alters what is
    visible, or symlinks whose targets cannot be watched) they walk again. Both ways give the
    same answer; the watcher only makes a warm call cheap.

    `want(rel, is_dir)` prunes dot-folders, private globs and non-note files; the vault passes
    it in (with a key that changes when it does), so this module knows nothing of config.
    `watcher` starts the change watcher (the vault passes `watch.TreeWatcher.create`; it may
    return None where inotify is missing); without one every refresh walks. The owner chooses,
    so parsing notes never pulls in the inotify machinery.
    """

    def __init__(
        self,
        root: Path,
        want: Callable[[str, bool], bool] | None = None,
        *,
        watcher: Callable[[], TreeWatcher | None] | None = None,
        cache: ParseCache | None = None,
    ) -> None:
        self.root = root
        # Parsed notes persisted by earlier processes: read once, at the first walk.
        self._cache = cache
        self._seed: dict[str, Cached] | None = None
        self._dirty: set[str] = set()  # paths whose persisted row is out of date
        self.want = want or (lambda rel, is_dir: True)
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.last = ScanStats()
        self.generation = 0  # bumps whenever the set of docs or any doc changes
        self._make_watcher = watcher
        self._watcher: TreeWatcher | None = None
        self._want_key: Any = object()
        self._symlinks = False
        self._root_real = os.path.realpath(root)
        # Where a symlinked note may point; the vault passes the path policy's rule to refresh.
        self._target_ok: Callable[[str], bool] = lambda real: real.startswith(
            self._root_real + os.sep
        )
        self._docs: dict[str, Doc] | None = None  # rebuilt only when something changed
        # Which paths changed in each generation, so consumers can update just those.
        self._pending: set[str] = set()
        self._log: list[tuple[int, frozenset[str]]] = []

    def _walk(
        self, want: Callable[[str, bool], bool], start: tuple[str, str] = ("", "")
    ) -> Iterator[tuple[str, str, os.stat_result]]:
        """(rel, disk rel, stat) of every wanted regular file under `start`, watching folders."""
        watcher = self._watcher
        stack = [start]
        while stack:
            rel_dir, disk_dir = stack.pop()
            abs_dir = os.path.join(self.root, disk_dir) if disk_dir else str(self.root)
            if watcher is not None:
                watcher.watch(rel_dir, disk_dir, abs_dir)
            try:
                it = os.scandir(abs_dir)
            except OSError:
                continue
            with it:
                for entry in it:
                    name = entry.name
                    if name.startswith("."):
                        continue
                    disk_rel = f"{disk_dir}/{name}" if disk_dir else name
                    nfc = name if name.isascii() else unicodedata.normalize("NFC", name)
                    rel = f"{rel_dir}/{nfc}" if rel_dir else nfc
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        continue
                    if is_dir:
                        if want(rel, True):
                            stack.append((rel, disk_rel))
                        continue
                    if not want(rel, False):
                        continue
                    st = self._stat(entry.path, entry)
                    if st is not None:
                        yield rel, disk_rel, st

    def _stat(self, abs_path: str, entry: os.DirEntry[str] | None = None) -> os.stat_result | None:
        try:
            if entry is not None and not entry.is_symlink():
                st = entry.stat(follow_symlinks=False)
            else:
                lst = os.lstat(abs_path)
                if lst.st_mode & 0o170000 == 0o120000:  # a symlink: its target must be inside
                    self._symlinks = True  # and its changes cannot be watched
                    if not self._target_ok(os.path.realpath(abs_path)):
                        return None  # outside, hidden (.git/...) or private: see target_ok
                    st = os.stat(abs_path)
                else:
                    st = lst
        except OSError:
            return None
        return st if st.st_mode & 0o170000 == 0o100000 else None

    def _update(self, rel: str, disk_rel: str, st: os.stat_result, stats: ScanStats) -> bool:
        old = self._entries.get(rel)
        if old and (old.mtime_ns, old.size, old.ino) == (st.st_mtime_ns, st.st_size, st.st_ino):
            return False
        seeded = self._seed.pop(rel, None) if self._seed else None
        if (
            seeded is not None
            and seeded.doc.disk == disk_rel
            and seeded.key == (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        ):
            self._entries[rel] = _Entry(*seeded.key[:3], seeded.doc, st.st_ctime_ns)
            self._pending.add(rel)
            stats.cached += 1
            return True
        try:
            with open(os.path.join(self.root, disk_rel), "rb") as fh:
                data = fh.read()
        except OSError:
            return False
        doc = parse_doc(rel, data, disk=disk_rel, mtime_ns=st.st_mtime_ns, full=False)
        self._entries[rel] = _Entry(st.st_mtime_ns, st.st_size, st.st_ino, doc, st.st_ctime_ns)
        self._pending.add(rel)
        self._dirty.add(rel)
        stats.parsed += 1
        return True

    def _drop_under(self, rel_dir: str, keep: set[str] | None, stats: ScanStats) -> bool:
        prefix = rel_dir + "/" if rel_dir else ""
        gone = [
            p for p in self._entries if p.startswith(prefix) and (keep is None or p not in keep)
        ]
        for p in gone:
            del self._entries[p]
        self._pending.update(gone)
        self._dirty.update(gone)
        stats.removed += len(gone)
        return bool(gone)

    def refresh(
        self,
        want: Callable[[str, bool], bool] | None = None,
        want_key: Any = None,
        target_ok: Callable[[str], bool] | None = None,
    ) -> dict[str, Doc]:
        """Bring the index up to date with the disk; returns path -> Doc. `target_ok(real)`
        says whether a symlink resolving to `real` may be a note (part of `want_key`)."""
        want = want or self.want
        with self._lock:
            if target_ok is not None:
                self._target_ok = target_ok
            stats = ScanStats()
            changed = False
            if self._make_watcher is not None and self._watcher is None:
                self._watcher = self._make_watcher()
                if self._watcher is None:  # no inotify here: walk from now on
                    self._make_watcher = None
            w = self._watcher
            changes = w.drain() if w is not None else None
            full = (
                w is None
                or w.broken
                or changes is None
                or changes.overflow
                or self._symlinks
                or want_key != self._want_key
            )
            if full:
                if self._cache is not None and self._seed is None:
                    self._seed = self._cache.load()  # once per process, before the first walk
                if w is not None:
                    w.broken = False  # watches already placed stay; the walk adds the rest
                self._symlinks = False
                self._want_key = want_key
                seen: set[str] = set()
                for rel, disk_rel, st in self._walk(want):
                    stats.files += 1
                    seen.add(rel)
                    changed |= self._update(rel, disk_rel, st, stats)
                changed |= self._drop_under("", seen, stats)
                if self._seed:  # rows for notes gone, renamed or now private: delete them
                    self._dirty.update(p for p in self._seed if p not in self._entries)
                    self._seed = {}
            else:
                assert changes is not None
                for gone in changes.gone_dirs:
                    changed |= self._drop_under(gone, None, stats)
                for rel_dir, disk_dir in changes.dirs.items():
                    if not want(rel_dir, True):
                        continue
                    seen = set()
                    for rel, disk_rel, st in self._walk(want, (rel_dir, disk_dir)):
                        seen.add(rel)
                        changed |= self._update(rel, disk_rel, st, stats)
                    changed |= self._drop_under(rel_dir, seen, stats)
                for rel, disk_rel in changes.files.items():
                    stats.files += 1
                    fst = (
                        self._stat(os.path.join(self.root, disk_rel)) if want(rel, False) else None
                    )
                    if fst is None:
                        if self._entries.pop(rel, None) is not None:
                            self._pending.add(rel)
                            self._dirty.add(rel)
                            stats.removed += 1
                            changed = True
                    else:
                        changed |= self._update(rel, disk_rel, fst, stats)
            if changed:
                self._bump()
            self._flush()
            if self._docs is None:
                self._docs = {k: e.doc for k, e in self._entries.items()}
            self.last = stats
            return self._docs

    def _flush(self) -> None:
        """Persist what changed since the last flush (held lock: one flush at a time)."""
        if self._cache is None or not self._dirty:
            return
        from server.notes.parsecache import Cached

        dirty, self._dirty = self._dirty, set()
        put = [
            # a note the server wrote was parsed in full: store what a walk would have parsed
            Cached(
                (e.mtime_ns, e.size, e.ino, e.ctime_ns),
                replace(e.doc, headings=(), links=(), full=False) if e.doc.full else e.doc,
            )
            for p in dirty
            if (e := self._entries.get(p)) is not None
        ]
        if not self._cache.save(put, [p for p in dirty if p not in self._entries]):
            self._dirty |= dirty  # not written now (a full disk, a long lock): next time

    LOG_GENERATIONS = 256

    def _bump(self) -> None:
        self.generation += 1
        changed, self._pending = frozenset(self._pending), set()
        self._log.append((self.generation, changed))
        del self._log[: -self.LOG_GENERATIONS]
        if self._docs is not None:  # patch the shared map instead of rebuilding it
            docs = dict(self._docs)
            for p in changed:
                e = self._entries.get(p)
                if e is None:
                    docs.pop(p, None)
                else:
                    docs[p] = e.doc
            self._docs = docs

    def changes_since(self, generation: int) -> set[str] | None:
        """Paths changed after `generation`, or None when the log no longer reaches back."""
        with self._lock:
            if generation == self.generation:
                return set()
            if not self._log or self._log[0][0] > generation + 1:
                return None
            out: set[str] = set()
            for gen, paths in self._log:
                if gen > generation:
                    out |= paths
            return out

    def put(self, doc: Doc, st: os.stat_result) -> None:
        """Record a doc the server itself just wrote, so the next refresh need not re-read it."""
        with self._lock:
            entry = _Entry(st.st_mtime_ns, st.st_size, st.st_ino, doc, st.st_ctime_ns)
            self._entries[doc.path] = entry
            self._pending.add(doc.path)
            self._dirty.add(doc.path)  # written to the cache by the next refresh
            self._bump()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self._cache is not None:
            self._cache.close()


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
