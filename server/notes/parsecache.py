"""The parsed notes persisted in `.git/vaultwatch/parsed.sqlite`, so a fresh server (every new
conversation starts one) parses only the notes that changed since any server last looked.

A derived cache: deleting it only costs time. A row is used only when the note's (mtime_ns,
size, inode, ctime_ns) and its spelling on disk are what they were when it was parsed; ctime
cannot be set back by a tool, so an edit that restores the old mtime is still seen. The cache is
versioned by this module's schema and a digest of the parser's own source (and PyYAML's
version), so a parser change discards it rather than serving what the old parser produced.
Anything wrong with the file (corrupt, truncated, another version, locked too long) is logged
and rebuilt; no error from here ever reaches a tool call.

Only notes the index holds are written here, and the index holds only notes the path policy
allows: a private note never enters the file, and a note that became private is deleted from
it by the next walk (and is never looked up meanwhile, since the walk no longer yields it).
Several processes may share the file: SQLite (WAL) serialises their writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import yaml

from server.core.state_files import state_file
from server.notes.note import Doc

log = logging.getLogger("vaultwatch.parsecache")

SCHEMA = 1
Key = tuple[int, int, int, int]  # (mtime_ns, size, ino, ctime_ns)


class Cached(NamedTuple):
    key: Key
    doc: Doc


def parser_version() -> str:
    """Changes whenever the code that turns bytes into a Doc may give a different answer."""
    h = hashlib.sha256(f"{SCHEMA}|{yaml.__version__}|{hasattr(yaml, 'CSafeLoader')}".encode())
    here = Path(__file__).resolve().parent
    for name in ("frontmatter.py", "note.py", "links.py", "parsecache.py"):
        try:
            h.update((here / name).read_bytes())
        except OSError:  # cannot tell what parsed the rows: never match them
            h.update(os.urandom(16))
    return h.hexdigest()[:16]


def _encode(doc: Doc) -> str | None:
    """The row for a doc, or None when its frontmatter would not come back exactly as parsed
    (YAML sets, binary, non-string keys): such a note is simply parsed again next time."""
    fm = doc.frontmatter
    try:
        row = json.dumps(
            [doc.hash, doc.body_start, doc.chars, doc.title, doc.h1, doc.tags, doc.problems, fm],
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError):
        return None
    if fm and json.loads(row)[7] != fm:
        return None
    return row


def _decode_all(rows: list[tuple[Any, ...]]) -> dict[str, Cached]:
    # One json.loads over every row: the per-call overhead of 10,000 small loads is most of
    # the time they would take.
    datas = json.loads("[" + ",".join(r[6] for r in rows) + "]")
    out = {}
    for (path, disk, mtime, size, ino, ctime, _), d in zip(rows, datas, strict=True):
        hash_, body_start, chars, title, h1, tags, problems, fm = d
        key = (mtime, size, ino, ctime)
        out[path] = Cached(
            key,
            Doc(
                path=path,
                disk=disk,
                size=size,
                mtime_ns=mtime,
                hash=hash_,
                frontmatter=fm,
                body_start=body_start,
                chars=chars,
                headings=(),
                tags=tuple(tags),
                links=(),
                title=title,
                problems=tuple(problems),
                h1=h1,
                full=False,
            ),
        )
    return out


DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes(
    path TEXT PRIMARY KEY, disk TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    ino INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
"""


T = TypeVar("T")


class SqliteCache:
    """A derived cache in one SQLite file of the state folder: opened 0600 and never through a
    link (state_files.state_file), versioned (`version`: another one's rows are deleted on
    open), and rebuilt when found unusable; no error from it ever reaches a caller. A
    subclass names its tables (`DDL`, a `meta` table among them) and what a new version
    deletes (`RESET`)."""

    DDL = ""
    RESET = ""

    def __init__(self, path: Path, version: str) -> None:
        self.path = path
        self.version = version
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.rebuilds = 0  # how often the file was found unusable and started afresh
        self.disabled = False  # set after the file failed even when new: the index just parses

    def _open_file(self) -> sqlite3.Connection:
        # 0600 before SQLite sees it (its -wal and -shm files take the database file's mode);
        # never recreates a vault folder that is gone
        state_file(self.path)
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 5000")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(self.DDL)
            row = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            if row is None or row[0] != self.version:
                # Another parser wrote these rows (or none did): start the table afresh.
                db.execute("BEGIN IMMEDIATE")
                db.execute(self.RESET)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (self.version,))
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def _read_rows(self, select: str, decode: Callable[[list[Any]], T]) -> T | None:
        """`select`'s rows through `decode`; None when the file cannot be read now (locked, a
        disk error: not known to be broken). Rows that do not decode (a damaged file: SQLite's
        error, bad JSON, a wrong type) rebuild it, and a file that fails even when new disables
        the cache."""
        with self._lock:
            for attempt in (1, 2):
                db = self._connect()
                if db is None:
                    return None
                try:
                    return decode(db.execute(select).fetchall())
                except sqlite3.OperationalError as exc:
                    log.warning("cache %s not read now (%s)", self.path, exc)
                    return None
                except (sqlite3.Error, ValueError, TypeError) as exc:
                    log.warning("cache %s unreadable (%s); rebuilding it", self.path, exc)
                    self._discard()
                    if attempt == 2:
                        self.disabled = True
            return None

    def _write_rows(self, gone: list[str], rows: list[tuple[Any, ...]], insert: str) -> bool:
        """Delete the rows of `gone` and put `rows` (`insert`: the INSERT OR REPLACE) in one
        transaction. False when not done now: a full disk or a lock held too long leaves the
        file as it is (its stale rows never match); any other error rebuilds it."""
        with self._lock:
            db = self._connect()
            if db is None:
                return self.disabled  # a disabled cache takes nothing; otherwise try later
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany("DELETE FROM notes WHERE path=?", [(p,) for p in gone])
                    db.executemany(insert, rows)
                    db.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                log.warning("cache %s not written now (%s)", self.path, exc)
                return False
            except sqlite3.Error as exc:
                log.warning("cache %s not written (%s); rebuilding it", self.path, exc)
                self._discard()
                return False
            return True

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self.disabled:
            return self._db
        for attempt in (1, 2):
            try:
                self._db = self._open_file()
                return self._db
            except sqlite3.OperationalError as exc:  # full disk, locked too long: not broken
                log.warning("cache %s not opened now (%s)", self.path, exc)
                return None
            except OSError as exc:  # cannot even create the file (a full disk, read-only)
                log.warning("cache %s not opened now (%s)", self.path, exc)
                return None
            except sqlite3.Error as exc:
                log.warning("cache %s unusable (%s); rebuilding it", self.path, exc)
                if attempt == 2:
                    self.disabled = True
                    return None
                self._discard()
        return None

    def _discard(self) -> None:
        self.rebuilds += 1
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class ParseCache(SqliteCache):
    """Load every row once at start; write back only what changed."""

    DDL = DDL
    RESET = "DELETE FROM notes"

    def __init__(self, path: Path, version: str | None = None) -> None:
        super().__init__(path, version or parser_version())

    def load(self) -> dict[str, Cached]:
        """Every cached note: path -> (stat key, doc). Empty when the file cannot be read."""
        select = "SELECT path, disk, mtime_ns, size, ino, ctime_ns, data FROM notes"
        return self._read_rows(select, _decode_all) or {}

    def save(self, put: list[Cached], gone: list[str]) -> bool:
        """Write changed notes and drop removed ones in one transaction. False when that could
        not be done now (the caller keeps them for the next save); failures only log."""
        if not put and not gone:
            return True
        rows: list[tuple[Any, ...]] = []
        for key, doc in put:
            data = _encode(doc)
            if data is None:
                gone.append(doc.path)
            else:
                rows.append((doc.path, doc.disk, *key, data))
        return self._write_rows(gone, rows, "INSERT OR REPLACE INTO notes VALUES (?,?,?,?,?,?,?)")
