"""Full-text index of note bodies: SQLite FTS5 in `.git/vaultwatch/index.sqlite`.

A derived cache, never committed and deletable at any time: before each query it is reconciled
with the notes on disk by (mtime_ns, size), a write through the server updates it before the
tool returns, and a missing or corrupt file is rebuilt rather than reported.

The FTS table is contentless (only the index is stored). To remove a note's old tokens FTS5
needs the text it was indexed with, so each note's indexed text is kept zlib-compressed beside
it; that keeps the whole file near the size of the text itself.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from server.core.errors import VaultwatchError
from server.core.state_files import make_state_dir, state_file
from server.notes.note import HEADING, Doc, decode
from server.notes.textfold import index_text

log = logging.getLogger("vaultwatch.search")

# 2: the body leaves out the H1 that is the note's title (the title column has it), so a
# short note is not counted twice for a word that is only in its title.
SCHEMA = 2
# How long a write waits for another server's hold on the shared index before it commits without
# it (the index catches up once free): long enough for any one update of the other's.
BUSY_TIMEOUT_MS = 10_000
DDL = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS docs(
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, z BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    title, body, content='', tokenize='unicode61 remove_diacritics 2');
INSERT OR IGNORE INTO meta VALUES ('schema', '{SCHEMA}');
INSERT OR IGNORE INTO meta VALUES ('rows', '0');
CREATE TRIGGER IF NOT EXISTS docs_added AFTER INSERT ON docs
    BEGIN UPDATE meta SET value = value + 1 WHERE key = 'rows'; END;
CREATE TRIGGER IF NOT EXISTS docs_removed AFTER DELETE ON docs
    BEGIN UPDATE meta SET value = value + 1 WHERE key = 'rows'; END;
CREATE TRIGGER IF NOT EXISTS docs_changed AFTER UPDATE ON docs
    BEGIN UPDATE meta SET value = value + 1 WHERE key = 'rows'; END;
"""
# Every server on the vault shares the file, and each keeps its own map of rowid -> path: a
# row another server added, deleted, or deleted and then gave its rowid to another note (SQLite
# reuses the highest one) is a match this server would drop or, worse, name as a note that no
# longer says this or that its owner made private. `rows` counts every change to `docs`, by
# triggers so that any writer counts, whatever its version; a server reads its maps again only
# when the count is not the one it last left it at (its own writes do not make it reload).
ROWS = "SELECT value FROM meta WHERE key = 'rows'"
# An index laid out by another version: only its own tables go (recall's vectors share the
# file and stay), and the next sync indexes every note again.
RESET = f"""
DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS docs;
INSERT OR REPLACE INTO meta VALUES ('schema', '{SCHEMA}');
"""


MATCHES = "SELECT rowid FROM fts WHERE fts MATCH ?"
# every match's rowid as one string: a word in a third of 10,000 notes is 3,000 rows, and
# fetching them one Python row at a time cost more than the match itself (issue 20)
MATCH_IDS = "SELECT group_concat(rowid) FROM fts WHERE fts MATCH ?"
# bm25 over the body alone (title weight 0: a title counts through Ranker.visit's `title`)
BEST_FIRST = "SELECT rowid, bm25(fts, 0.0, 1.0) AS body FROM fts WHERE fts MATCH ? ORDER BY body"
# the same score for some rows only: `+rowid` keeps the test out of FTS5 (which would run the
# query once per row), so SQLite checks it before it computes bm25 for a row
BEST_OF = "SELECT rowid, bm25(fts, 0.0, 1.0) AS body FROM fts WHERE fts MATCH ? AND +rowid IN"
MAX_ALONE = 2_000  # more title matches left than this (a word in every file name): read all
# The notes holding a CJK word in one piece are read alone when they fill the page and are at
# most this share of the matches (同步合并 at 10,000 notes: 565 of 3,478); when most matches
# hold it so, reading the best rows of all is cheaper (the bound stops early)
WHOLE_SHARE = 0.25


class IndexBroken(VaultwatchError):
    """The index file failed mid-query (corrupted behind our back): discard and rebuild."""

    code = "index_broken"


class IndexUnavailable(VaultwatchError):
    """The index file is fine but cannot be used now (busy, disk full, not openable)."""

    code = "index_unavailable"

    def __init__(self, exc: BaseException) -> None:
        super().__init__(
            f"the search index cannot be used right now ({exc}); nothing was changed. Try again "
            "shortly; if it persists, tell the owner (is the disk full?)."
        )


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Whether a database error means the file itself is damaged: only then is it discarded and
    rebuilt from the notes. The file is shared by every server on the vault and holds recall's
    vectors too, so a busy ("database is locked"), full or unopenable one is never deleted."""
    if not isinstance(exc, sqlite3.OperationalError):
        return True  # malformed image, not a database, our schema check
    msg = str(exc).lower()
    return "malformed" in msg or "not a database" in msg or "corrupt" in msg


class Wants(enum.Enum):
    ALL = "all"
    # only the marked matches: those whose title holds every word, or that hold every word as
    # typed, in one piece (see Ranker.start)
    TITLES = "titles"
    NONE = "none"


class Ranker(Protocol):
    """What SearchIndex.search feeds its matches to (text_search.TopK)."""

    def start(self, matches: list[str], titles: list[str], whole: list[str]) -> int | None:
        """Every matching note (any order), those of them whose title (or file name) holds every
        word, and those that hold every word in one piece as typed (the phrase expression; empty
        when the query has none); starts the ranking afresh. Returns how many of the best
        matches to visit first (None: all of them, 0: none, e.g. no match or a page past the
        last one)."""
        ...

    def visit(self, path: str, body: float, title: bool) -> Wants:
        """One match, best body score first: `body` is bm25 over the body (and frontmatter
        values) alone, lower is better, 0 = no hit there; `title`: every word looked for is in
        the title (or the file name). Returns which of the matches still to come it wants."""
        ...


class SearchIndex:
    """One vault's index. Safe to share between threads; several processes may share the file."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        self.root = root
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._known: dict[str, tuple[int, int]] = {}  # path -> (mtime_ns, size) as indexed
        self._ids: dict[int, str] = {}
        self._rows: str | None = None  # `rows` when the maps last matched the file
        self._synced_generation: int | None = None
        self.rebuilds = 0

    # -- connection and recovery ----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        make_state_dir(self.path.parent)
        for attempt in (1, 2):
            try:
                state_file(self.path)  # 0600, and so its -wal and -shm files
                db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
                db.executescript(DDL)
                row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if row is not None and row[0] != str(SCHEMA):
                    db.executescript(RESET + DDL)
                    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if row is None or row[0] != str(SCHEMA):
                    raise sqlite3.DatabaseError(f"index schema {row} is not {SCHEMA}")
                db.execute("SELECT count(*) FROM docs").fetchone()
                self._db = db
                self._load_known()
                return db
            except sqlite3.DatabaseError as exc:
                with contextlib.suppress(Exception):
                    db.close()
                if not is_corrupt(exc):
                    raise IndexUnavailable(exc) from exc
                if attempt == 2:
                    raise
                log.warning("search index unusable (%s); rebuilding it", exc)
                self._discard_file()
        raise AssertionError("unreachable")

    def _discard_file(self) -> None:
        self.rebuilds += 1
        self._db = None
        self._known.clear()
        self._ids.clear()
        self._rows = None
        self._synced_generation = None
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    def _load_known(self) -> None:
        assert self._db is not None
        # the count first: outside a transaction a write landing between the two reads is then
        # in the maps and also makes the next `_catch_up` read them again, never the reverse
        self._rows = self._count(self._db)
        known: dict[str, tuple[int, int]] = {}
        ids: dict[int, str] = {}
        for id_, path, mtime, size in self._db.execute("SELECT id, path, mtime_ns, size FROM docs"):
            known[path] = (mtime, size)
            ids[id_] = path
        self._known, self._ids = known, ids

    @staticmethod
    def _count(db: sqlite3.Connection) -> str | None:
        row = db.execute(ROWS).fetchone()
        return None if row is None else str(row[0])

    def _catch_up(self, db: sqlite3.Connection) -> bool:
        """Read the maps again if another server changed `docs` since (see ROWS). Inside a
        transaction the maps then hold for every read and write until it ends."""
        rows = self._count(db)
        if rows is not None and rows == self._rows:
            return False
        self._load_known()
        return True

    def _todo(self, docs: dict[str, Doc], only: set[str] | None) -> tuple[list[Doc], list[str]]:
        pool = docs if only is None else {p: docs[p] for p in only if p in docs}
        changed = [d for p, d in pool.items() if self._known.get(p) != (d.mtime_ns, d.size)]
        gone = (
            [p for p in self._known if p not in docs]
            if only is None
            else [p for p in only if p not in docs and p in self._known]
        )
        return changed, gone

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- keeping it in step with the notes ----------------------------------------------------------

    def in_step(self, generation: int) -> bool:
        return self._db is not None and generation == self._synced_generation

    @property
    def synced_generation(self) -> int | None:
        return self._synced_generation if self._db is not None else None

    def sync(
        self, docs: dict[str, Doc], generation: int | None = None, only: set[str] | None = None
    ) -> int:
        """Index what changed, drop what is gone. Returns how many notes were (re)indexed.

        `docs` is every note, or with `only` just the current state of those paths (a path in
        `only` but not in `docs` is gone). Any database error discards the file and rebuilds
        it from scratch on the next full sync: the index is only a cache.
        """
        with self._lock:
            if generation is not None and generation == self._synced_generation and self._db:
                return 0
            try:
                n = self._sync(docs, only)
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise IndexUnavailable(exc) from exc
                log.warning("search index failed (%s); rebuilding it", exc)
                self._discard_file()
                self._synced_generation = None  # the next call brings everything back in
                return 0
            self._synced_generation = generation
            return n

    def _sync(self, docs: dict[str, Doc], only: set[str] | None) -> int:
        db = self._connect()
        if only is not None and self._synced_generation is None:
            only = None  # nothing to be incremental from
        self._catch_up(db)  # a note another server indexed already is not indexed again
        changed, gone = self._todo(docs, only)
        if not changed and not gone:
            return 0
        done = 0
        db.execute("BEGIN IMMEDIATE")
        try:
            if self._catch_up(db):  # another server wrote since: the maps hold from here on
                changed, gone = self._todo(docs, only)
            for path in gone:
                self._delete(db, path)
            for doc in changed:
                try:
                    data = (self.root / doc.disk).read_bytes()
                except OSError:
                    continue
                text, _ = decode(data)
                self._put(db, doc, text)
                done += 1
            self._rows = self._count(db)
            db.execute("COMMIT")
        except BaseException:
            self._rolled_back(db)
            raise
        return done

    def _rolled_back(self, db: sqlite3.Connection) -> None:
        """After a failed transaction: what we believe is indexed goes back to what is."""
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")  # SQLite may have rolled back itself (a full disk does)
        try:
            self._load_known()
        except sqlite3.Error:
            self._known.clear()
            self._synced_generation = None  # the next sync compares every note again

    def update(self, doc: Doc, text: str) -> None:
        """Index one note the server just wrote, before the tool returns (written = searchable)."""
        with self._lock:
            try:
                db = self._connect()
                db.execute("BEGIN IMMEDIATE")
                try:
                    self._catch_up(db)
                    self._put(db, doc, text)
                    self._rows = self._count(db)
                    db.execute("COMMIT")
                except BaseException:
                    self._rolled_back(db)
                    raise
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise IndexUnavailable(exc) from exc  # the next sync catches up by stat
                log.warning("search index failed (%s); it will be rebuilt", exc)
                self._discard_file()

    def _delete(self, db: sqlite3.Connection, path: str) -> None:
        row = db.execute("SELECT id, z FROM docs WHERE path=?", (path,)).fetchone()
        if row is not None:
            title, _, body = zlib.decompress(row[1]).decode("utf-8").partition("\x00")
            db.execute(
                "INSERT INTO fts(fts, rowid, title, body) VALUES('delete', ?, ?, ?)",
                (row[0], title, body),
            )
            db.execute("DELETE FROM docs WHERE id=?", (row[0],))
            self._ids.pop(row[0], None)
        self._known.pop(path, None)

    def _put(self, db: sqlite3.Connection, doc: Doc, text: str) -> None:
        self._delete(db, doc.path)
        title, body = (index_text(part) for part in note_words(doc, text))
        z = zlib.compress(f"{title}\x00{body}".encode(), 6)
        cur = db.execute(
            "INSERT INTO docs(path, mtime_ns, size, z) VALUES (?, ?, ?, ?)",
            (doc.path, doc.mtime_ns, doc.size, z),
        )
        rowid = cur.lastrowid
        assert rowid is not None
        db.execute("INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)", (rowid, title, body))
        self._known[doc.path] = (doc.mtime_ns, doc.size)
        self._ids[rowid] = doc.path

    # -- asking ---------------------------------------------------------------------------------

    def search(
        self, expr: str, title_expr: str | None, ranker: Ranker, phrase_expr: str | None = None
    ) -> None:
        """Feed `ranker` the notes matching an FTS5 expression: first all of them (cheap: no
        score), then the best ones by body score, in order, until it has seen enough. Title
        words count through `title_expr` (see Ranker.visit); ranking is the caller's: it knows
        the notes' dates and filters.

        bm25 of every match is what SQLite must compute to find the best; sorting all of them
        is what costs (a top-N sort of the first few is several times cheaper), and Python
        looks only at the rows the ranking needs. Title matches further down, when the ranking
        still wants them, are scored alone (`+rowid IN`: bm25 only for the rows that pass).
        `phrase_expr` (search_query.phrase_expression) marks the matches that hold the words in
        one piece, as typed, which the ranker puts first; they are scored alone the same way."""
        with self._reading(paths=True) as db:
            ids = self._ids
            (joined,) = db.execute(MATCH_IDS, (expr,)).fetchone()
            rows = [r for r in map(int, joined.split(",")) if r in ids] if joined else []
            in_title: set[int] = set()
            if title_expr is not None and rows:
                title_match = f"{{title}} : ({title_expr})"
                in_title = {r for (r,) in db.execute(MATCHES, (title_match,))}
                in_title.intersection_update(rows)
            whole: set[int] = set()
            if phrase_expr is not None and rows:
                whole = {r for (r,) in db.execute(MATCHES, (phrase_expr,))}
                whole.intersection_update(rows)
            marked = in_title | whole

            def start() -> int | None:
                return ranker.start(
                    [ids[r] for r in rows], [ids[r] for r in in_title], [ids[r] for r in whole]
                )

            first = start()
            if first == 0:
                return
            fills = getattr(ranker, "whole_fills", None)
            few = len(whole) <= min(MAX_ALONE, WHOLE_SHARE * len(rows))
            if fills is not None and few and fills():
                # the notes holding the words in one piece fill the page: only they are read,
                # when they are few among the matches (when most are, bm25 of every match and
                # the bound on the best rows read fewer: the reading below)
                marks = ",".join("?" * len(whole))
                cur = db.execute(f"{BEST_OF} ({marks}) ORDER BY body", [expr, *sorted(whole)])
                self._feed(cur, ranker, in_title, marked, set())
                return
            sql, args = BEST_FIRST, list[object]([expr])
            if first is not None:
                sql, args = f"{BEST_FIRST} LIMIT ?", [expr, first]
            seen: set[int] = set()
            wants = self._feed(db.execute(sql, args), ranker, in_title, marked, seen)
            left = sorted(marked - seen)  # marked matches below the first rows
            more = first is not None and len(seen) >= first
            if wants is Wants.TITLES and more and len(left) <= MAX_ALONE:
                marks = ",".join("?" * len(left))  # scored alone, best first
                cur = db.execute(f"{BEST_OF} ({marks}) ORDER BY body", [expr, *left])
                wants = self._feed(cur, ranker, in_title, marked, seen)
            if wants is not Wants.NONE and more:
                start()  # not enough: all
                self._feed(db.execute(BEST_FIRST, (expr,)), ranker, in_title, marked, set())

    def _feed(
        self,
        rows: sqlite3.Cursor,
        ranker: Ranker,
        in_title: set[int],
        marked: set[int],
        seen: set[int],
    ) -> Wants:
        """Rows (rowid, body), best first, to the ranker while it wants them; `seen` collects
        every row read (visited or skipped). Returns what it still wanted at the end."""
        ids, wants = self._ids, Wants.ALL
        for r, body in rows:
            seen.add(r)
            title = r in in_title
            if wants is Wants.TITLES and r not in marked:
                continue  # cannot reach the page: see Ranker.visit
            path = ids.get(r)
            if path is not None:
                wants = ranker.visit(path, body, title)
                if wants is Wants.NONE:
                    break
        return wants

    @contextlib.contextmanager
    def _reading(self, paths: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection for one read, with SQLite's errors said as the tools say them: a
        query FTS5 cannot read, an index busy or missing, an index broken. With `paths` (rowids
        are turned into paths) the reads are one snapshot and the maps are those of it: a row
        another server writes meanwhile is neither missing from them nor named wrongly."""
        with self._lock:
            db = self._connect()
            try:
                if paths:
                    db.execute("BEGIN")
                    self._catch_up(db)
                yield db
            except sqlite3.OperationalError as exc:
                if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                    raise ValueError(f"the search index could not read this query: {exc}") from exc
                if not is_corrupt(exc):
                    raise IndexUnavailable(exc) from exc
                raise IndexBroken(str(exc)) from exc
            except sqlite3.DatabaseError as exc:
                raise IndexBroken(str(exc)) from exc
            finally:
                if db.in_transaction:  # only read: nothing to keep or lose
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")

    def partial(
        self, strict: str, expr: str, parts: tuple[tuple[tuple[str, ...], int], ...], limit: int
    ) -> list[str]:
        """The notes matching a relaxed query (search_query.Relaxed: `expr` and `parts`) that do
        not match the `strict` expression, at most `limit`, best first: the most groups held
        over every relaxed word, then bm25 over the body (rarer pairs count more), then path.

        Which groups a note holds is read per group as one string of rowids (MATCH_IDS), not
        per note: a relaxed query runs one match per group, a few for a typed word."""
        with self._reading(paths=True) as db:
            ids = self._ids

            def rowids(e: str) -> set[int]:
                (joined,) = db.execute(MATCH_IDS, (e,)).fetchone()
                return set(map(int, joined.split(","))) if joined else set()

            rows = rowids(expr) - rowids(strict)
            held = dict.fromkeys(rows, 0)
            for groups, need in parts:
                count = dict.fromkeys(rows, 0)
                for g in groups:
                    for r in rowids(g) & rows:
                        count[r] += 1
                rows = {r for r in rows if count[r] >= need}
                for r in rows:
                    held[r] += count[r]
            rows &= ids.keys()
            if not rows:
                return []
            scored: list[tuple[int, float, str]] = []
            if len(rows) <= MAX_ALONE:
                marks = ",".join("?" * len(rows))
                cur = db.execute(f"{BEST_OF} ({marks})", [expr, *rows])
            else:
                cur = db.execute(BEST_FIRST, (expr,))
            for r, body in cur:
                if r in rows:
                    scored.append((-held[r], body, ids[r]))
            scored.sort()
            return [p for _, _, p in scored[:limit]]

    def best(self, expr: str, limit: int) -> dict[str, float]:
        """The `limit` notes matching an FTS5 expression with the best body score, each with
        that score negated (bm25 over the body: higher is better here). recall's keyword boost."""
        with self._reading(paths=True) as db:
            rows = db.execute(f"{BEST_FIRST} LIMIT ?", (expr, limit)).fetchall()
            ids = self._ids
            return {ids[r]: -body for r, body in rows if r in ids}

    def doc_counts(self, tokens: list[str]) -> dict[str, int]:
        """In how many notes each token occurs, for tokens as `query_tokens` gives them. Read
        through a temp fts5vocab table: nothing is added to the file."""
        with self._reading() as db:
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_df USING fts5vocab(main, fts, row)"
            )
            counts = {}
            for tok in tokens:
                row = db.execute("SELECT doc FROM temp.fts_df WHERE term = ?", (tok,)).fetchone()
                counts[tok] = row[0] if row else 0
            return counts

    def stats(self) -> dict[str, int]:
        with self._lock:
            db = self._connect()
            docs = db.execute("SELECT count(*) FROM docs").fetchone()[0]
        size = sum(
            os.path.getsize(str(self.path) + s)
            for s in ("", "-wal")
            if os.path.exists(str(self.path) + s)
        )
        return {"docs": docs, "bytes": size}

    def checkpoint(self) -> None:
        with self._lock:
            db = self._connect()
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def note_words(doc: Doc, text: str) -> tuple[str, str]:
    """(title, body) of a note as search sees it, before folding: the title and file name; the
    frontmatter values (text the owner wrote too: exit criteria, next actions) and the body.
    recall's -word exclusion reads the same text, so both tools drop the same notes."""
    fm_words = " ".join(_strings(doc.frontmatter))
    return f"{doc.title} {doc.stem}", f"{fm_words}\n{_body_without_title(doc, text)}"


def _body_without_title(doc: Doc, text: str) -> str:
    """The body, without the H1 line the title came from: the title column holds it already."""
    body = text[doc.body_start :]
    if doc.h1 is None or doc.h1 != doc.title:
        return body
    for m in HEADING.finditer(body):
        if len(m.group(1)) == 1 and m.group(2).strip() == doc.h1:
            return body[: m.start()] + body[m.end() :]
    return body


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
