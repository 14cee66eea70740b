"""One vault: its root, its current config, its notes and its journal.

This is what the tools talk to. It knows nothing of MCP: errors are VaultError with a code and
a message written for whoever called (the MCP layer passes them to the model as they are).
"""

from __future__ import annotations

import difflib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.core.errors import VaultwatchError
from server.core.gc_pause import gc_paused
from server.core.state_files import secure_state, state_dir
from server.index.doc_index import DocIndex
from server.index.recall_lifecycle import CATCH_UP_S, RecallLifecycle
from server.index.search import SearchIndex
from server.index.watch import TreeWatcher
from server.notes.config import Config, ConfigProblem, ConfigStore
from server.notes.entry import Entry, classify
from server.notes.note import Doc, ReadResult, read_note
from server.notes.parsecache import ParseCache
from server.notes.paths import PathPolicy, PathRefused, VaultPath, fold, matches_any
from server.write.journal import ConfigReloaded, Journal, SemanticProgress
from server.write.modified import ModifiedTimes
from server.write.store import Store

if TYPE_CHECKING:  # numpy and the embedder load only when recall is first used
    from server.index.semantic import SemanticIndex


class VaultError(VaultwatchError):
    """The vault cannot serve this (a note not found, the vault gone); the message says why."""


class Vault:
    def __init__(self, root: Path, *, client: str = "unknown") -> None:
        self.root = Path(root).absolute()
        if not self.root.is_dir():
            raise VaultError("vault_missing", f"vault folder {self.root} does not exist")
        st = self.root.stat()
        self._identity = (st.st_dev, st.st_ino)
        self.state = state_dir(self.root)
        if (self.root / ".git").is_dir():
            secure_state(self.root)  # 0700 / 0600, also for a vault made by an older version
        self.journal = Journal(self.state / "events.jsonl", client=client)
        self._policy_key: tuple[Any, ...] | None = None
        self._policy: PathPolicy | None = None
        self._glob_warnings: tuple[Config, list[str]] | None = None
        self._entries_key: tuple[int, int, int] | None = None
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self.configs = ConfigStore(self.root, on_reload=self._on_config_reload)
        self.index = DocIndex(
            self.root, watcher=TreeWatcher.create, cache=ParseCache(self.state / "parsed.sqlite")
        )
        self.modified = ModifiedTimes(self.root)
        self.search = SearchIndex(self.state / "index.sqlite", self.root)
        self.store = Store(self.root, self.journal)
        self.recall = RecallLifecycle(self, on_progress=self._semantic_progress)

    def check_present(self) -> None:
        """Refuse every call once the vault folder is gone (moved, deleted or replaced) since
        the server started: serving an empty folder, or recreating the old path as a stub,
        would pass the vault off as empty. One stat per call."""
        try:
            st = self.root.stat()
            same = (st.st_dev, st.st_ino) == self._identity
        except OSError:
            same = False
        if not same:
            raise VaultError(
                "vault_gone",
                f"the vault folder {self.root} is gone (moved or deleted) since this server "
                "started; nothing was read or changed. Tell the owner to restart vaultwatch on "
                "the vault where it is now.",
            )

    # -- config ---------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        return self.configs.current()

    @property
    def config_errors(self) -> list[ConfigProblem]:
        return self.configs.problems

    def _on_config_reload(self, cfg: Config | None, errors: list[ConfigProblem]) -> None:
        self.journal.append(
            ConfigReloaded(
                ok=cfg is not None,
                file=(cfg.source if cfg else None) or (errors[0].file if errors else None),
                errors=[str(e) for e in errors],
            )
        )

    @property
    def config_notice(self) -> str | None:
        """What every tool error says while the config does not load (None when it does)."""
        _ = self.config  # re-reads the config if it changed on disk
        return self.configs.notice

    @property
    def policy(self) -> PathPolicy:
        cfg = self.config
        closed = self.configs.notice if cfg.standing_in == "closed" else None
        key = (cfg.private, cfg.extensions, closed)
        if self._policy is None or key != self._policy_key:
            self._policy = PathPolicy(self.root, cfg.private, cfg.extensions, closed=closed)
            self._policy_key = key
        return self._policy

    def private_glob_warnings(self) -> list[str]:
        """Private globs that match nothing in the vault: most likely a misspelt folder, which
        would leave the folder meant visible. Walks the tree only until every glob has matched
        (cached per config)."""
        cfg = self.config
        if self._glob_warnings is not None and self._glob_warnings[0] is cfg:
            return self._glob_warnings[1]
        waiting = set(cfg.private)
        # Not the one walk of files (notes/walk.py): this asks whether any *name* matches a
        # glob, a folder's or a symlink's as much as a file's, inside private folders too, and
        # stops at the first match of each; `matches_any` compares in NFC itself.
        stack = [""]
        while stack and waiting:
            rel_dir = stack.pop()
            try:
                with os.scandir(self.root / rel_dir) as it:
                    for entry in it:
                        if entry.name.startswith("."):
                            continue
                        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                        waiting -= {g for g in waiting if matches_any(rel, (g,))}
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(rel)
            except OSError:
                continue
        out = [
            f"private glob {g!r} matches nothing in the vault; check its spelling in "
            f"{cfg.source or 'vault.config.yaml'} (a folder is written 'folder/' or 'folder/**')"
            for g in cfg.private
            if g in waiting
        ]
        self._glob_warnings = (cfg, out)
        return out

    def _want(self) -> Callable[[str, bool], bool]:
        pol = self.policy
        private, is_note = pol.is_private, pol.is_note_name

        def want(rel: str, is_dir: bool) -> bool:
            return not private(rel) and (is_dir or is_note(rel))

        return want

    # -- notes ----------------------------------------------------------------------------------

    def entries(self) -> dict[str, Entry]:
        """Every visible note with its type and date under the current config (warm: cheap)."""
        if self._entries_key is None:  # the first: every note loaded (parsed or from the cache)
            with gc_paused():
                return self._load_entries()
        return self._load_entries()

    def _load_entries(self) -> dict[str, Entry]:
        cfg = self.config
        pol = self.policy
        if self._entries_key is None:
            # the first call: git's status of every file runs beside the walk, not after it
            self.modified.prime()
        docs = self.index.refresh(
            self._want(), want_key=self._policy_key, target_ok=pol.target_allowed
        )
        gen = self.index.generation
        version, commits, dirty = self.modified.current(
            gen, self.index.changes_since, self.index.changed_after
        )

        def modified(doc: Doc) -> int:
            if doc.path in dirty:
                return doc.mtime_ns
            return commits.get(doc.path, doc.mtime_ns)

        with self._lock:
            if self._entries_key == (gen, id(cfg), version):
                return self._entries
            changed = (
                self.index.changes_since(self._entries_key[0])
                if self._entries_key is not None and self._entries_key[1] == id(cfg)
                else None
            )
            if changed is None:  # first call, a new config, or too far behind: classify all
                fresh = {path: classify(doc, cfg, modified(doc)) for path, doc in docs.items()}
            else:
                fresh = dict(self._entries)
                for path in changed:
                    doc = docs.get(path)
                    if doc is None:
                        fresh.pop(path, None)
                    else:
                        fresh[path] = classify(doc, cfg, modified(doc))
                if self._entries_key and version != self._entries_key[2]:  # a commit: re-date
                    for path, e in fresh.items():
                        if e.modified_ns != modified(e.doc):
                            fresh[path] = classify(e.doc, cfg, modified(e.doc))
            self._entries, self._entries_key = fresh, (gen, id(cfg), version)
            return self._entries

    def searchable_entries(self) -> dict[str, Entry]:
        """entries(), with the full-text index brought in step with them first."""
        entries = self.entries()
        gen = self.index.generation
        if not self.search.in_step(gen):
            since = self.search.synced_generation
            changed = self.index.changes_since(since) if since is not None else None
            self.search.sync(
                {p: e.doc for p, e in entries.items()}
                if changed is None
                else {p: entries[p].doc for p in changed if p in entries},
                gen,
                only=None if changed is None else changed,
            )
        return entries

    # -- meaning (recall): its lifecycle is server/index/recall_lifecycle.py ----------------------

    def semantic(self) -> SemanticIndex | None:
        """The embedding index the config asks for, or None (`semantic_unavailable` says why)."""
        return self.recall.semantic()

    def semantic_unavailable(self) -> str:
        return self.recall.unavailable()

    def semantic_wanted(self) -> bool:
        return self.recall.wanted()

    def note_meta(self, doc: Doc) -> dict[str, Any]:
        return self.recall.note_meta(doc)

    def start_semantic_soon(self) -> None:
        self.recall.start_soon()

    def start_semantic(self) -> None:
        self.recall.start()

    def keep_semantic_current(self, every: float = CATCH_UP_S) -> None:
        self.recall.keep_current(every)

    def semantic_after_write(self, paths: list[str]) -> None:
        self.recall.after_write(paths)

    def _semantic_progress(self, indexed: int, total: int) -> None:
        self.journal.append(SemanticProgress(self.config.semantic.model, indexed, total))

    def close(self, wait: float = 5.0) -> bool:
        """Stop recall's background indexer (waiting up to `wait` seconds) and close the indexes.
        False when the indexer is still running: its store is then left open for it, and the
        process must leave with os._exit (see cli.stop)."""
        stopped = self.recall.stop(time.monotonic() + wait)
        self.index.close()
        self.search.close()
        if stopped:
            self.recall.close()
        return stopped

    def resolve(self, raw: str, *, must_exist: bool = True) -> VaultPath:
        try:
            # an NFD spelling on disk is found by the policy itself; no per-call map of every note
            vp = self.policy.resolve(raw)
        except PathRefused as exc:
            raise VaultError(exc.code, exc.message) from exc
        if must_exist and not vp.disk.is_file():
            raise VaultError("not_found", self.not_found_message(vp.rel))
        return vp

    def owner_file_linking_to(self, rel: str) -> str | None:
        """The owner's file (rules, config, vocabulary, or a note in a `protected:` folder)
        that is a symlink to the note `rel`, if one is: get_context shows the rules file by its
        target, and a protected note reads as its target, so a write to the target is a write
        to the owner's file."""
        folded = fold(rel)
        for name in self.config.protected_paths():
            try:
                vp = self.policy.resolve(name, note=False)
            except PathRefused:
                continue
            if vp.link is not None and fold(vp.link) == folded:
                return vp.rel
        globs = self.config.protected
        if globs:
            target = os.path.realpath(self.root / rel)
            for path in self.entries():
                if path == rel or not matches_any(path, globs):
                    continue
                here = self.root / path  # a note the walk lists: a link to a note, not a folder
                if os.path.realpath(here) == target and os.path.abspath(here) != target:
                    return path
        return None

    def not_found_message(self, rel: str) -> str:
        paths = list(self.entries())
        close = difflib.get_close_matches(rel, paths, n=3, cutoff=0.5)
        name = rel.rsplit("/", 1)[-1].casefold()
        close += [p for p in paths if p.rsplit("/", 1)[-1].casefold() == name and p not in close]
        hint = f" Did you mean: {', '.join(close[:3])}?" if close else ""
        return f"no note at {rel!r}.{hint} Use list_docs or search_text to find notes."

    def read(self, raw: str) -> tuple[Entry, ReadResult]:
        vp = self.resolve(raw)
        try:
            res = read_note(self.root, vp.rel, vp.disk.relative_to(self.root).as_posix())
        except OSError as exc:
            raise VaultError("unreadable", f"cannot read {vp.rel!r}: {exc.strerror}") from exc
        # dated like every listing when the note is as the last listing saw it (no refresh here:
        # a read must not walk the vault); otherwise it changed since, so its mtime is right
        known = self._entries.get(vp.rel)
        when = known.modified_ns if known and known.doc.hash == res.doc.hash else None
        return classify(res.doc, self.config, when), res

    def read_rules(self) -> tuple[str, str | None, str]:
        """(path, text, why there is no text) of the rules file. get_context shows the text to
        the assistant, so it is read only as `read_doc` would read it (PathPolicy.resolve: inside
        the vault, no dot-folder, not private, a note, a symlink by its target): a config or an
        older version's kept rules naming `.git/config` or a private note show nothing."""
        rel = self.config.rules
        try:
            vp = self.policy.resolve(rel)
        except PathRefused as exc:
            return rel, None, f"the rules file {rel!r} cannot be shown: {exc.message}"
        try:
            return vp.rel, vp.disk.read_text(encoding="utf-8", errors="replace"), ""
        except OSError:
            return vp.rel, None, f"no rules file at {vp.rel!r}"
