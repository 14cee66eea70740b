"""Recall's index: notes ranked by meaning, in either language. It keeps every visible note's
vectors in step with the notes (embedding only the units whose text changed) and ranks notes
against a query vector; the models are `embedders`, what is embedded `units`, where vectors live
`vectors`.

Rules kept from the semantic-memory setup this grows from: one embedding model for every write
and query path, guarded by its dimension; vectors are derived (the notes are the asset, the
vectors can be rebuilt at any time); dedupe before storing (`overlaps`: services.dedupe);
a fixed question set decides whether a model change is better (`vaultwatch-server eval`).

A note's score combines its whole-text match with its best section's; vectors are ranked with
numpy, wherever they are stored. No MCP here.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from server.index.embedders import Embedder
from server.index.units import Unit, units_of
from server.index.vectors import NoteVectors, VectorStore, unit_key
from server.notes.note import Doc, decode, parse_doc

log = logging.getLogger("vaultwatch.semantic")

# score = 0.25 * whole note + 0.75 * best section: with every section embedded, the best one says
# more than the opening 400 characters (measured on tests/recall_baseline and tests/apisix_docs)
WHOLE_WEIGHT = 0.25
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
OVERLAP_POOL = 20  # notes closest as a whole that `overlaps` scores in full
# Texts encoded at a time while indexing the vault: a stop (the client closed stdin) is seen
# between steps, not only between batches: a batch of 64 notes took over 2 s on two busy cores,
# so the server waited out cli.STOP_WAIT_S and left with os._exit on every disconnect mid-index.
STEP = 32


class _Stopped(Exception):
    """The server is exiting: the batch being encoded is dropped (the next start redoes it)."""


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
        store: VectorStore,
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
        # False until the indexer has compared the stored vectors with the notes: `indexed` is
        # 0 until then, which is not "starting over" (vectors kept from earlier runs count)
        self.counted = False
        # (when, indexed) as this run's embedding began: the rate so far, for seconds_left
        self._rate_from: tuple[float, int] | None = None
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

    def rate(self) -> float | None:
        """Notes embedded per second in this run so far; None before its first batch."""
        start = self._rate_from
        if start is None or self.indexed <= start[1]:
            return None
        spent = time.monotonic() - start[0]
        return (self.indexed - start[1]) / spent if spent > 0 else None

    def seconds_left(self) -> float | None:
        """Until every note is embedded, at the rate so far; None before there is a rate."""
        r = self.rate()
        return None if r is None else max(0, self.total - self.indexed) / r

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
            self.counted = True
            self._rate_from = None
        last = time.monotonic()
        load = getattr(self.embedder, "load", None)
        if todo and load is not None:
            load()  # not interruptible: a stop asked for meanwhile is seen before encoding
        if not partial:
            self._rate_from = (time.monotonic(), self.indexed)  # the model is loaded: time it
        for k in range(0, len(todo), BATCH):
            if self.stopping and not partial:
                break  # the server is exiting; the rest is embedded on the next start
            chunk = [docs[p] for p in todo[k : k + BATCH]]
            try:
                notes = self._embed(chunk, meta, interruptible=not partial)
                # each batch is stored (and committed) as it is done: a stop or a crash loses
                # at most this batch, and the next start embeds only what is left
                self.store.put(notes)
            except _Stopped:
                break
            except Exception:
                if not self.stopping or partial:
                    raise
                # The server is exiting and closed the indexes under this batch (a client that
                # disconnects mid-index): nothing failed that the next start does not redo.
                log.debug("indexing stopped inside a batch", exc_info=True)
                break
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
        self,
        docs: list[Doc],
        meta: Callable[[Doc], dict[str, Any]] | None,
        interruptible: bool = False,
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
        fresh = self._encode(list(todo.values()), interruptible)
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

    def _encode(self, texts: list[str], interruptible: bool) -> np.ndarray:
        """The texts' vectors; `interruptible` (indexing the vault, not a write) encodes STEP
        texts at a time and raises _Stopped as soon as a stop is asked for."""
        if not texts:
            return np.zeros((0, self.embedder.dim), np.float32)
        if not interruptible or len(texts) <= STEP:
            return self.embedder.encode(texts)
        parts = []
        for k in range(0, len(texts), STEP):
            if self.stopping:
                raise _Stopped
            parts.append(self.embedder.encode(texts[k : k + STEP]))
        return np.concatenate(parts)

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
        LEXICAL_POOL: a note that says it in the asker's own words is the surest hit.

        Measured and not taken (issue 29): letting the boost reorder notes only among those in
        the question's own script raised questions across languages on the mixed set from 0.44
        to 0.71 recall@5, but lowered its `either` kind from 1.00 to 0.83 and its one-language
        MRR by 0.05-0.10; a change that lowers a kind is not taken. docs/measurements.md,
        "Recall quality", lists every candidate."""
        pool_n = max(limit, LEXICAL_POOL) if lexical is not None else limit
        sims, dense, paths, starts = self._scores(query)
        if not paths:
            return []
        scores = dense + self._keyword_boost(paths, keyword) if keyword else dense
        pool = self._pick(scores, sims, paths, starts, keep, pool_n, exclude)
        if lexical is None:
            return pool[:limit]
        for m in pool:
            m.lexical = lexical(m.path)
        return sorted(pool, key=lambda m: not m.lexical)[:limit]  # stable: by meaning within

    def _scores(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
        """(every unit's cosine, each note's score by meaning, paths, each note's first unit)."""
        mat, starts, paths = self._matrix_now()
        if not paths:
            return np.zeros(0, np.float32), np.zeros(0, np.float32), paths, starts
        sims = mat @ query.astype(np.float32)
        whole = sims[starts]
        best = np.maximum.reduceat(sims, starts)
        scores = WHOLE_WEIGHT * whole + (1 - WHOLE_WEIGHT) * best - self._stub_penalty(paths)
        return sims, scores, paths, starts

    def _pick(
        self,
        scores: np.ndarray,
        sims: np.ndarray,
        paths: list[str],
        starts: np.ndarray,
        keep: Callable[[str], bool] | None,
        limit: int,
        exclude: set[str] | None,
    ) -> list[Match]:
        ends = np.append(starts[1:], len(sims))
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

    def overlaps(
        self, vecs: np.ndarray, keep: Callable[[str], bool], pool: int = OVERLAP_POOL
    ) -> list[tuple[str, float, str]]:
        """(path, overlap score, the note's excerpts joined) of the `pool` stored notes closest
        to a note not in the index, given as its unit vectors (`units_of`, whole note first),
        best first. The pool is taken by whole-note cosine; each is then scored by `overlap`."""
        if not len(vecs):
            return []
        mat, starts, paths = self._matrix_now()
        if not paths:
            return []
        ends = np.append(starts[1:], len(mat))
        whole = mat[starts] @ _unit_rows(vecs)[0]
        out = []
        for i in np.argsort(-whole):
            p = paths[i]
            if not keep(p):
                continue
            note = self._loaded()[p]
            out.append((p, overlap(vecs, mat[starts[i] : ends[i]]), " ".join(note.excerpts)))
            if len(out) >= pool:
                break
        return sorted(out, key=lambda t: -t[1])

    def close(self) -> None:
        self.store.close()


def _unit_rows(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """How much two notes say the same, from their unit vectors (whole note first, then one per
    section): half the whole-note cosine, half the sections' mutual coverage (each unit's best
    match in the other note, averaged, both ways). A page and its translation match section by
    section; two pages on one subject share a theme, not their sections. Measured on
    tests/apisix_docs (`uv run python -m bench --only dedupe`): a page against its translation
    scores 0.51-0.90 (median 0.77), two different pages at most 0.77."""
    a, b = _unit_rows(a), _unit_rows(b)
    sims = a @ b.T
    cover = (float(sims.max(axis=1).mean()) + float(sims.max(axis=0).mean())) / 2
    return 0.5 * float(sims[0, 0]) + 0.5 * cover
