"""Recall's life in one served vault: the embedding index the config asks for, opened when first
needed (and re-opened for another model or backend); the background indexer started after the
first tool call; the catch-up loop that embeds the owner's saves; a write's notes embedded before
the tool returns; and the stop, between steps, when the server leaves.

Recall is one tool: whatever goes wrong here is said by recall (`unavailable`) and never becomes
another tool's error. `Vault` holds one `RecallLifecycle` and hands it what it needs through
`RecallHost` (this layer sits below the vault and never imports it); journal events go out
through the `on_progress` callback for the same reason.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from server.core.errors import VaultwatchError
from server.index.doc_index import DocIndex
from server.notes.config import Config, SemanticConfig
from server.notes.entry import Entry
from server.notes.note import Doc

if TYPE_CHECKING:  # numpy and the embedder load only when recall is first used
    from server.index.semantic import SemanticIndex

log = logging.getLogger("vaultwatch.vault")
SEMANTIC_RETRY_S = 60.0  # a recall that could not be set up is tried again after this long
CATCH_UP_S = 5.0  # how soon the dashboard's server embeds a note the owner saved
INDEXING_RETRY_S = 2.0  # after recall's indexing failed, the next tool call this much later retries


class RecallHost(Protocol):
    """What recall reads of its vault: where it is, its config, its notes and their index."""

    root: Path
    state: Path
    index: DocIndex

    @property
    def config(self) -> Config: ...

    def entries(self) -> dict[str, Entry]: ...


class RecallLifecycle:
    def __init__(self, host: RecallHost, on_progress: Callable[[int, int], None]) -> None:
        self.host = host
        self.on_progress = on_progress  # (indexed, total): the vault journals it
        self._semantic: SemanticIndex | None = None
        self._semantic_key: Any = None
        self._semantic_lock = threading.Lock()
        self._semantic_starter: threading.Thread | None = None
        self._closing = False  # set by stop: recall starts nothing after it
        self._semantic_failed_at = 0.0
        # (config key, what broke, when to try again): recall could not be set up
        self._semantic_broken: tuple[Any, str, float] | None = None
        self._stopped: SemanticIndex | None = None  # the index `stop` stopped, for `close`

    def semantic(self) -> SemanticIndex | None:
        """The embedding index the config asks for. None when recall is off, or when it cannot
        be set up (`unavailable` says why): recall is one tool, and every tool call
        comes through here first, so its problems must never become theirs. A different model
        or backend configured means a different index, never mixed vectors."""
        sc = self.host.config.semantic
        if not self.wanted():
            return None
        key = (sc.model, sc.backend, sc.url, sc.path, sc.collection)
        with self._semantic_lock:
            if self._semantic is None or self._semantic_key != key:
                broken = self._semantic_broken
                if broken is not None and broken[0] == key and time.monotonic() < broken[2]:
                    return None  # not retried on every call (a Qdrant server down would slow all)
                if self._semantic is not None:
                    self._semantic.stop(wait=5.0)  # the old model's indexer, if it still runs
                    self._semantic.close()
                    self._semantic = None
                try:
                    self._semantic = self._open_semantic(sc)
                except Exception as exc:
                    why = (
                        exc.message
                        if isinstance(exc, VaultwatchError)
                        else f"{type(exc).__name__}: {exc}"
                    )
                    self._semantic_broken = (key, why, time.monotonic() + SEMANTIC_RETRY_S)
                    log.warning("recall is unavailable: %s", why)
                    return None
                self._semantic_key, self._semantic_broken = key, None
            return self._semantic

    def unavailable(self) -> str:
        """Why semantic() gave None, for recall's answer."""
        broken = self._semantic_broken
        cfg = self.host.config
        sc = cfg.semantic
        if cfg.recall_problems:
            first = cfg.recall_problems[0]
            return (
                f"recall is off: the config's semantic block is wrong ({first}); use search_text, "
                f"and tell the owner to correct {first.file} (it applies on the next call)"
            )
        off_by_env = os.environ.get("VAULTWATCH_SEMANTIC") == "off"
        if sc.enabled and not off_by_env and broken is not None:
            return (
                f"recall is unavailable: its index could not be opened ({broken[1]}); use "
                "search_text, and tell the owner"
            )
        if off_by_env:  # the true reason: the config may well say enabled
            also = " (the config's semantic.enabled is false too)" if not sc.enabled else ""
            return (
                "recall is off for this server: it was started with the environment variable "
                f"VAULTWATCH_SEMANTIC=off{also}. Use search_text instead; recall comes back "
                "when the owner restarts the server without that variable"
            )
        return (
            "recall is off in this vault (semantic.enabled: false in the config); use "
            "search_text, or ask the owner to set semantic.enabled: true"
        )

    def _open_semantic(self, sc: SemanticConfig) -> SemanticIndex:
        from server.index.embedders import make_embedder
        from server.index.semantic import SemanticIndex
        from server.index.vectors import QdrantVectors, SqliteVectors

        state = self.host.state
        embedder = make_embedder(sc.model)
        store: SqliteVectors | QdrantVectors
        if sc.backend == "qdrant":
            store = qdrant = QdrantVectors(
                sc.collection or "vaultwatch-" + re.sub(r"[^\w-]", "_", self.host.root.name),
                embedder.name,
                embedder.dim,
                url=sc.url,
                path=str(state / sc.path) if sc.path else None,
                api_key=os.environ.get(sc.api_key_env) if sc.api_key_env else None,
            )
            self._copy_local_vectors(qdrant, embedder.name, embedder.dim)
        else:
            store = SqliteVectors(state / "index.sqlite", embedder.name, embedder.dim)
        return SemanticIndex(embedder, store, self.host.root, self.on_progress)

    def _copy_local_vectors(self, store: Any, model: str, dim: int) -> None:
        """Switching to Qdrant copies the vectors this machine already has (same model), so
        nothing is embedded twice; notes whose stat changed are re-embedded as usual."""
        from server.index.vectors import SqliteVectors

        if store.load():
            return
        local = SqliteVectors(self.host.state / "index.sqlite", model, dim)
        try:
            have = local.load()
        finally:
            local.close()
        if have:
            entries = self.host.entries()
            for n in have.values():
                if n.path in entries:
                    n.meta = self.note_meta(entries[n.path].doc)
            store.put([n for n in have.values() if n.path in entries])

    def note_meta(self, doc: Doc) -> dict[str, Any]:
        e = self.host.entries().get(doc.path)
        return {
            "title": doc.title,
            "type": e.type if e else None,
            "tags": list(doc.tags),
            "date": e.day.isoformat() if e and e.day else None,
        }

    def wanted(self) -> bool:
        return self.host.config.semantic.enabled and os.environ.get("VAULTWATCH_SEMANTIC") != "off"

    def start_soon(self) -> None:
        """start, called after each tool call; the first time (numpy and the embedder
        still to import: `uv run python -m bench --only semantic`, cold start) it runs in a
        thread, so no call waits for recall's set-up."""
        if not self.wanted() or self._closing:
            return
        if self._semantic is not None:
            self._start_logged()  # cheap once built: returns when already indexing
            return
        with self._semantic_lock:
            if self._semantic_starter is not None and self._semantic_starter.is_alive():
                return
            self._semantic_starter = threading.Thread(
                target=self._start_logged, name="semantic-start", daemon=True
            )
            self._semantic_starter.start()

    def _start_logged(self) -> None:
        try:
            self.start()
        except Exception:  # recall reports its own state; no other tool fails for it
            log.exception("semantic indexing could not start")

    def start(self) -> None:
        """Embed the vault in the background (called on the first tool call, so never before
        the MCP handshake: clients give a server 30-60 s to start)."""
        try:
            sem = self.semantic()
        except VaultwatchError:  # (a VaultError from the vault's own checks)
            return  # recall itself says why; every other tool works on
        if sem is None or sem.ready or sem.indexing:
            return
        if sem.error is not None:
            # A failure (a full disk, a busy index) is not for ever: try again, a while after.
            if time.monotonic() - self._semantic_failed_at < INDEXING_RETRY_S:
                return
            sem.error = None

        docs = {p: e.doc for p, e in self.host.entries().items()}
        sem.total = len(docs)  # so a recall right now can say "0 of N", not "0 of 0"

        def run() -> None:
            try:
                sem.reconcile(docs, self.note_meta)
                if sem.stopping:
                    return  # stopped part-way: not ready, and nothing to report
                sem.ready = True
                self.on_progress(sem.indexed, sem.total)
            except Exception as exc:  # the notes are fine; recall says what broke
                self._semantic_failed_at = time.monotonic()
                sem.error = f"{type(exc).__name__}: {exc}"
                log.exception("semantic indexing failed")

        with self._semantic_lock:
            if self._closing:  # stop already looked for an indexer to stop: start none
                return
            sem.thread = threading.Thread(target=run, name="semantic-index", daemon=True)
            sem.thread.start()

    def keep_current(self, every: float = CATCH_UP_S) -> None:
        """Embed the owner's edits as they are saved, not when a client next calls recall: the
        dashboard's server (--index-now) may have no client at all, and the header's recall
        figure and health's near-duplicates read what it has embedded."""

        def loop() -> None:
            while not self._closing:
                time.sleep(every)
                try:
                    self._catch_up()
                except Exception:  # the next round tries again; no tool depends on this
                    log.exception("keeping recall current failed")

        threading.Thread(target=loop, name="semantic-catch-up", daemon=True).start()

    def _catch_up(self) -> None:
        sem = self._semantic
        if sem is None or not sem.ready or sem.error or sem.indexing or self._closing:
            return
        index = self.host.index
        before = index.generation
        docs = {p: e.doc for p, e in self.host.entries().items()}
        generation = index.generation
        if sem.in_step(generation):
            return

        def run() -> None:
            try:
                # these docs are that generation only if no refresh ran meanwhile
                done = sem.reconcile(
                    docs, self.note_meta, generation=generation if generation == before else None
                )
                if done and not sem.stopping:
                    self.on_progress(sem.indexed, sem.total)
            except Exception:  # recall embeds these before its next query anyway
                log.exception("embedding the owner's changes failed")

        with self._semantic_lock:
            # as the indexer itself: stop() stops and waits for it, so the process never
            # exits inside the model's native code
            if self._closing or sem.indexing:
                return
            sem.thread = threading.Thread(target=run, name="semantic-index", daemon=True)
            sem.thread.start()

    def after_write(self, paths: list[str]) -> None:
        """Written means findable by meaning too: embed the written notes before returning."""
        sem = self.semantic()
        if sem is None:
            return
        entries = self.host.entries()
        try:
            sem.reconcile(
                {p: entries[p].doc for p in paths if p in entries}, self.note_meta, partial=True
            )
        except Exception:  # the write is committed; the next reconcile embeds these notes
            log.exception("embedding the written notes failed")

    def stop(self, deadline: float) -> bool:
        """Start nothing more, and stop the background indexer by `deadline` (monotonic).
        False when it is still running: its store must then be left open for it (`close`)."""
        # Not under _semantic_lock: opening recall holds it, and may take long (a model, a
        # Qdrant server that does not answer). The starter checks the flag under it.
        self._closing = True
        starter = self._semantic_starter
        # recall's starter (first tool call) may be about to start the indexer: wait for it,
        # or an indexer started after this look would run on into the interpreter's shutdown
        if starter is not None:
            starter.join(max(0.0, deadline - time.monotonic()))
        sem = self._stopped = self._semantic
        return not (starter is not None and starter.is_alive()) and (
            sem is None or sem.stop(max(0.0, deadline - time.monotonic()))
        )

    def close(self) -> None:
        """Close the vector store of the index `stop` stopped; only once it said it stopped."""
        if self._stopped is not None:
            self._stopped.close()
