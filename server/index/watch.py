"""Which files changed since the last look: inotify on Linux, so a warm call need not stat every
note in the vault.

The kernel queues an event before the writer's system call returns, and `drain()` reads the
queue without waiting, so a change made a millisecond ago is always seen: no polling interval,
no race. Where inotify is missing (macOS, Windows) or runs out of watches, `TreeWatcher.create`
returns None and the index falls back to a stat walk on every call, which is just as correct,
only slower.
"""

from __future__ import annotations

import contextlib
import logging
import unicodedata
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("vaultwatch.watch")

try:  # Linux only
    from inotify_simple import INotify
    from inotify_simple import flags as F
except (ImportError, OSError):  # pragma: no cover - other platforms
    INotify = None
    F = None


@dataclass
class Changes:
    """Rel paths (NFC, as the index keys them) mapped to their spelling on disk."""

    files: dict[str, str] = field(default_factory=dict)  # files that may have changed
    dirs: dict[str, str] = field(default_factory=dict)  # folders to walk again (new, moved in)
    gone_dirs: set[str] = field(default_factory=set)  # folders that went away
    overflow: bool = False  # events were lost: walk everything


class TreeWatcher:
    """inotify watches on every folder of the vault the index walks."""

    def __init__(self, ino: Any) -> None:
        self._ino = ino
        self._dirs: dict[int, tuple[str, str]] = {}  # wd -> (rel dir, disk dir); "" = root
        self._by_dir: dict[str, int] = {}
        self.broken = False
        self.closed = False

    @classmethod
    def create(cls) -> TreeWatcher | None:
        if INotify is None:
            return None
        try:
            return cls(INotify(nonblocking=True))
        except OSError as exc:  # no inotify instances left
            log.info("no inotify (%s); the index will stat every note on each call", exc)
            return None

    @property
    def mask(self) -> int:
        return int(
            F.CREATE
            | F.DELETE
            | F.MODIFY
            | F.CLOSE_WRITE
            | F.MOVED_FROM
            | F.MOVED_TO
            | F.ATTRIB
            | F.DELETE_SELF
            | F.MOVE_SELF
        )

    def watch(self, rel_dir: str, disk_dir: str, abs_dir: str) -> bool:
        """Watch one folder (call before listing it, so nothing slips in between)."""
        if rel_dir in self._by_dir:
            return True
        try:
            wd = self._ino.add_watch(abs_dir, self.mask)
        except OSError as exc:  # ENOSPC: out of watches; fall back to walking
            log.info("cannot watch %s (%s); falling back to full walks", abs_dir, exc)
            self.broken = True
            return False
        self._dirs[wd] = (rel_dir, disk_dir)
        self._by_dir[rel_dir] = wd
        return True

    def forget_all(self) -> None:
        for wd in list(self._dirs):
            with contextlib.suppress(OSError):
                self._ino.rm_watch(wd)
        self._dirs.clear()
        self._by_dir.clear()

    def drain(self) -> Changes:
        changes = Changes()
        try:
            events = [] if self.closed else self._ino.read(timeout=0)
        except ValueError:  # closed by another thread meanwhile (the vault closing)
            events = []
        if self.closed:
            # Closed while recall's indexer still asked what changed (a client that disconnects
            # mid-index): "walk everything" is the answer that is always right, where reading
            # the closed queue raised "I/O operation on closed file" into the indexer.
            changes.overflow = True
            return changes
        for ev in events:
            if ev.mask & F.Q_OVERFLOW:
                changes.overflow = True
                continue
            where = self._dirs.get(ev.wd)
            if where is None:
                continue
            base, disk_base = where
            if ev.mask & (F.IGNORED | F.DELETE_SELF | F.MOVE_SELF):
                changes.gone_dirs.add(base)
                if ev.mask & F.IGNORED:
                    self._dirs.pop(ev.wd, None)
                    if self._by_dir.get(base) == ev.wd:
                        del self._by_dir[base]
                continue
            if not ev.name or ev.name.startswith("."):
                continue
            name = ev.name if ev.name.isascii() else unicodedata.normalize("NFC", ev.name)
            rel = f"{base}/{name}" if base else name
            disk = f"{disk_base}/{ev.name}" if disk_base else ev.name
            if ev.mask & F.ISDIR:
                if ev.mask & (F.CREATE | F.MOVED_TO):
                    changes.dirs[rel] = disk
                elif ev.mask & (F.DELETE | F.MOVED_FROM):
                    changes.gone_dirs.add(rel)
                    wd = self._by_dir.pop(rel, None)
                    if wd is not None:
                        self._dirs.pop(wd, None)
            else:
                changes.files[rel] = disk
        return changes

    def close(self) -> None:
        self.closed = True
        self.forget_all()
        self._ino.close()
