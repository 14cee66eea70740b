"""One vault: its root, its current config, its notes and its journal.

This is what the tools talk to. It knows nothing of MCP: errors are VaultError with a code and
a message written for whoever called (the MCP layer passes them to the model as they are).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .config import Config, ConfigProblem, ConfigStore
from .docs import DocIndex, ReadResult, read_note
from .gitrepo import state_dir
from .journal import Journal
from .paths import PathPolicy, PathRefused, VaultPath
from .query import Entry, classify
from .search import SearchIndex
from .store import Store


class VaultError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Vault:
    def __init__(self, root: Path, *, client: str = "unknown") -> None:
        self.root = Path(root).absolute()
        if not self.root.is_dir():
            raise VaultError("vault_missing", f"vault folder {self.root} does not exist")
        self.state = state_dir(self.root)
        self.journal = Journal(self.state / "events.jsonl", client=client)
        self._policy_key: tuple[Any, ...] | None = None
        self._policy: PathPolicy | None = None
        self._entries_key: tuple[int, int] | None = None
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self.configs = ConfigStore(self.root, on_reload=self._on_config_reload)
        self.index = DocIndex(self.root)
        self.search = SearchIndex(self.state / "index.sqlite", self.root)
        self.store = Store(self.root, self.journal)

    # -- config ---------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        return self.configs.current()

    @property
    def config_errors(self) -> list[ConfigProblem]:
        return self.configs.errors

    def _on_config_reload(self, cfg: Config | None, errors: list[ConfigProblem]) -> None:
        self.journal.append(
            "config_reloaded",
            ok=cfg is not None,
            file=(cfg.source if cfg else None) or (errors[0].file if errors else None),
            errors=[str(e) for e in errors],
        )

    @property
    def policy(self) -> PathPolicy:
        cfg = self.config
        key = (cfg.private, cfg.extensions)
        if self._policy is None or key != self._policy_key:
            self._policy = PathPolicy(self.root, cfg.private, cfg.extensions)
            self._policy_key = key
        return self._policy

    def _want(self) -> Callable[[str, bool], bool]:
        pol = self.policy
        private, is_note = pol.is_private, pol.is_note_name

        def want(rel: str, is_dir: bool) -> bool:
            return not private(rel) and (is_dir or is_note(rel))

        return want

    # -- notes ----------------------------------------------------------------------------------

    def entries(self) -> dict[str, Entry]:
        """Every visible note with its type and date under the current config (warm: cheap)."""
        cfg = self.config
        pol = self.policy
        docs = self.index.refresh(self._want(), want_key=(pol.private, pol.extensions))
        gen = self.index.generation
        with self._lock:
            if self._entries_key == (gen, id(cfg)):
                return self._entries
            changed = (
                self.index.changes_since(self._entries_key[0])
                if self._entries_key is not None and self._entries_key[1] == id(cfg)
                else None
            )
            if changed is None:  # first call, a new config, or too far behind: classify all
                fresh = {path: classify(doc, cfg) for path, doc in docs.items()}
            else:
                fresh = dict(self._entries)
                for path in changed:
                    doc = docs.get(path)
                    if doc is None:
                        fresh.pop(path, None)
                    else:
                        fresh[path] = classify(doc, cfg)
            self._entries, self._entries_key = fresh, (gen, id(cfg))
            return self._entries

    def searchable_entries(self) -> dict[str, Entry]:
        """entries(), with the full-text index brought in step with them first."""
        entries = self.entries()
        gen = self.index.generation
        if not self.search.in_step(gen):
            since = self.search.synced_generation
            changed = self.index.changes_since(since) if since is not None else None
            self.search.sync({p: e.doc for p, e in entries.items()} if changed is None else
                             {p: entries[p].doc for p in changed if p in entries},
                             gen, only=None if changed is None else changed)  # fmt: skip
        return entries

    def close(self) -> None:
        self.index.close()
        self.search.close()

    def resolve(self, raw: str, *, must_exist: bool = True) -> VaultPath:
        try:
            # an NFD spelling on disk is found by the policy itself; no per-call map of every note
            vp = self.policy.resolve(raw)
        except PathRefused as exc:
            raise VaultError(exc.code, exc.message) from exc
        if must_exist and not vp.disk.is_file():
            raise VaultError("not_found", self._not_found(vp.rel))
        return vp

    def _not_found(self, rel: str) -> str:
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
        return classify(res.doc, self.config), res

    def read_rules(self) -> tuple[str, str | None]:
        """(path, text) of the rules file, or text None if there is none."""
        rel = self.config.rules
        try:
            return rel, (self.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return rel, None
