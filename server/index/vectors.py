"""Where recall's vectors live, behind one protocol (`VectorStore`): the derived index file
(SQLite, float16, one table per model and dimension) or a Qdrant server or local folder. Each
store refuses vectors of another dimension; vectors are derived and can be rebuilt."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from server.core.state_files import make_state_dir, state_file
from server.index.embedders import SemanticError
from server.index.units import UNITS_VERSION


class VectorStore(Protocol):
    """What the semantic index needs of a store (SqliteVectors and QdrantVectors)."""

    def load(self) -> dict[str, NoteVectors]: ...

    def put(self, notes: list[NoteVectors]) -> None: ...

    def delete(self, paths: Iterable[str]) -> None: ...

    def close(self) -> None: ...


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
