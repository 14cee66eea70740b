"""Health's judgment of each note persisted in `.git/vaultwatch/health.sqlite`, so the first
check in a new process (the dashboard's first `H`, each `vaultwatch health`) reads and judges
only the notes that changed since any check last looked, as the process's own caches
(health_links._CACHE, health._PROBLEMS) let a re-check do.

A row is one note's: its content hash, the budget its `fits` was judged under, its links
(each with the line it is on and the text as written), its length, and its problems under
one config (the config's digest, `config_digest`). A row is used only for the note's path
with the same content hash (and the same budget; its problems only under the same config);
the file is versioned by a digest of the code that judges (the note parser, the write
checks, health's link reading) and PyYAML's version, so a change there discards it. A derived
cache: deleting it only costs time; a damaged file is rebuilt (parsecache.SqliteCache, whose
state-file handling it shares: 0600, never through a link).

Only notes of the vault's index are written here, and the index holds only notes the path
policy allows: a private note never enters the file. A note gone from the index (deleted,
moved, made private) has its row deleted by the next check, which never looks it up
meanwhile (it looks up only the notes of the index)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from server.core.state_files import state_dir
from server.notes.config import Config
from server.notes.parsecache import SqliteCache

log = logging.getLogger("vaultwatch.health")

SCHEMA = 1
NAME = "health.sqlite"
DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes(path TEXT PRIMARY KEY, hash TEXT NOT NULL, data TEXT NOT NULL)
    WITHOUT ROWID;
"""


def store_version() -> str:
    """Changes whenever the code that reads a note for health or judges it may answer
    differently: every module of server/notes, the write checks, health's link reading,
    the read budget, the secret scan, this module."""
    h = hashlib.sha256(f"{SCHEMA}|{yaml.__version__}|{hasattr(yaml, 'CSafeLoader')}".encode())
    server = Path(__file__).resolve().parent.parent
    files = [
        *sorted((server / "notes").glob("*.py")),
        server / "write" / "validate.py",
        server / "services" / "health_links.py",
        server / "services" / "health_store.py",
        server / "core" / "budget.py",
        server / "core" / "redact.py",
    ]
    for f in files:
        try:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        except OSError:  # cannot tell what judged the rows: never match them
            h.update(os.urandom(16))
    return h.hexdigest()[:16]


def _canon(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(map(repr, value))
    if isinstance(value, re.Pattern):
        return ["re", value.pattern, value.flags]
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"no stable form for {type(value).__name__}")


def config_digest(cfg: Config) -> str | None:
    """A digest of everything in the config that may change a note's problems, the same in
    every process for the same config; None when some part has no stable form (then no
    problems are kept across processes)."""
    same = dataclasses.replace(cfg, loaded_at="")  # when it was read: not what it says
    try:
        text = json.dumps(dataclasses.asdict(same), sort_keys=True, default=_canon)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class HealthStore(SqliteCache):
    DDL = DDL
    RESET = "DELETE FROM notes"

    def load(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """path -> (hash, row); empty when the file cannot be read now."""
        return self._read_rows("SELECT path, hash, data FROM notes", _decode) or {}

    def save(self, put: dict[str, tuple[str, dict[str, Any]]], gone: Iterable[str]) -> bool:
        """Write `put` and delete `gone` in one transaction; False when not done now."""
        rows = [(p, h, json.dumps(d, ensure_ascii=False)) for p, (h, d) in put.items()]
        drop = list(gone)
        if not rows and not drop:
            return True
        return self._write_rows(drop, rows, "INSERT OR REPLACE INTO notes VALUES (?,?,?)")


def _decode(rows: list[Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    datas = json.loads("[" + ",".join(r[2] for r in rows) + "]")
    out = {}
    for (path, hash_, _), data in zip(rows, datas, strict=True):
        if isinstance(path, str) and isinstance(hash_, str) and isinstance(data, dict):
            out[path] = (hash_, data)
    return out


_VERSION: str | None = None
# per vault root: the paths this process knows to have a row (to delete the rows of notes
# gone from the index at once, without reading the file), None until the file was read
_STORED: dict[str, set[str]] = {}
_LOCK = threading.Lock()


def _store(root: Path) -> HealthStore:
    global _VERSION
    if _VERSION is None:
        _VERSION = store_version()
    return HealthStore(state_dir(root) / NAME, _VERSION)


class Rows:
    """One check's view of the file: read when the process's caches first miss a note,
    written once at the end (`finish`) with what was judged afresh."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._rows: dict[str, tuple[str, dict[str, Any]]] | None = None
        self.fresh: set[str] = set()  # notes judged in this check (parsed or problems)

    def get(self, path: str, hash_: str) -> dict[str, Any] | None:
        """The row of the note at `path` with this content hash, if the file has it."""
        if self._rows is None:
            store = _store(self.root)
            try:
                self._rows = store.load()
            finally:
                store.close()
            with _LOCK:
                _STORED[str(self.root)] = set(self._rows)
        hit = self._rows.get(path)
        return hit[1] if hit is not None and hit[0] == hash_ else None

    def finish(self, notes: Iterable[str], rows: dict[str, tuple[str, dict[str, Any]]]) -> None:
        """Write `rows` (the notes judged afresh) and delete the rows of notes no longer in
        the index (`notes`: every note the check looked at)."""
        key = str(self.root)
        with _LOCK:
            known = _STORED.get(key)
        gone = set() if known is None else known - set(notes)
        if not rows and not gone:
            return
        store = _store(self.root)
        try:
            if store.save(rows, gone):
                with _LOCK:
                    stored = _STORED.setdefault(key, set())
                    stored.difference_update(gone)
                    stored.update(rows)
        finally:
            store.close()
