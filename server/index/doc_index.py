"""The index of every note in the vault: a stat-keyed map of parsed notes (`note.parse_doc`), so
a warm call re-parses only the files that changed, kept up to date by walking the tree or by the
change watcher the vault hands in, and persisted across processes by the parse cache."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.notes.note import Doc, parse_doc
from server.notes.walk import file_stat, walk_files

if TYPE_CHECKING:  # the owner (the vault) hands in the watcher; only its type is named here
    from server.index.watch import TreeWatcher

if TYPE_CHECKING:
    from server.notes.parsecache import Cached, ParseCache


@dataclass
class _Entry:
    mtime_ns: int
    size: int
    ino: int
    doc: Doc
    ctime_ns: int = 0  # kept for the persisted cache's stricter key


@dataclass
class ScanStats:
    files: int = 0
    parsed: int = 0
    removed: int = 0
    cached: int = 0  # taken from the persisted parse cache instead of parsed


class DocIndex:
    """Every note in the vault, re-parsed only when its (mtime_ns, size, inode) changes.

    The first call walks the whole tree. Later calls, where inotify works, look only at what the
    kernel says changed; elsewhere (or after lost events, a config change that alters what is
    visible, or symlinks whose targets cannot be watched) they walk again. Both ways give the
    same answer; the watcher only makes a warm call cheap.

    `want(rel, is_dir)` prunes dot-folders, private globs and non-note files; the vault passes
    it in (with a key that changes when it does), so this module knows nothing of config.
    `watcher` starts the change watcher (the vault passes `watch.TreeWatcher.create`; it may
    return None where inotify is missing); without one every refresh walks. The owner chooses,
    so parsing notes never pulls in the inotify machinery.
    """

    def __init__(
        self,
        root: Path,
        want: Callable[[str, bool], bool] | None = None,
        *,
        watcher: Callable[[], TreeWatcher | None] | None = None,
        cache: ParseCache | None = None,
    ) -> None:
        self.root = root
        # Parsed notes persisted by earlier processes: read once, at the first walk.
        self._cache = cache
        self._seed: dict[str, Cached] | None = None
        self._dirty: set[str] = set()  # paths whose persisted row is out of date
        self.want = want or (lambda rel, is_dir: True)
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.last = ScanStats()
        self.generation = 0  # bumps whenever the set of docs or any doc changes
        self._make_watcher = watcher
        self._watcher: TreeWatcher | None = None
        self._want_key: Any = object()
        self._symlinks = False
        self._root_real = os.path.realpath(root)
        # Where a symlinked note may point; the vault passes the path policy's rule to refresh.
        self._target_ok: Callable[[str], bool] = lambda real: real.startswith(
            self._root_real + os.sep
        )
        self._docs: dict[str, Doc] | None = None  # rebuilt only when something changed
        # Which paths changed in each generation, so consumers can update just those.
        self._pending: set[str] = set()
        self._log: list[tuple[int, frozenset[str]]] = []

    def _walk(
        self, want: Callable[[str, bool], bool], start: tuple[str, str] = ("", "")
    ) -> Iterator[tuple[str, str, os.stat_result]]:
        """(rel, disk rel, stat) of every wanted regular file under `start`, watching folders
        (the one walk of notes/walk.py: its names, dot-folders and symlink rules)."""
        watcher = self._watcher
        for f in walk_files(
            self.root,
            want=want,
            target_ok=self._target_ok,
            start=start,
            on_folder=watcher.watch if watcher is not None else None,
            on_link=self._saw_link,
        ):
            yield f.rel, f.disk, f.stat

    def _saw_link(self) -> None:
        self._symlinks = True  # its target's changes cannot be watched: walk every refresh

    def _stat(self, abs_path: str) -> os.stat_result | None:
        found = file_stat(abs_path, self._target_ok, on_link=self._saw_link)
        return found[0] if found is not None else None

    def _update(self, rel: str, disk_rel: str, st: os.stat_result, stats: ScanStats) -> bool:
        old = self._entries.get(rel)
        if old and (old.mtime_ns, old.size, old.ino) == (st.st_mtime_ns, st.st_size, st.st_ino):
            return False
        seeded = self._seed.pop(rel, None) if self._seed else None
        if (
            seeded is not None
            and seeded.doc.disk == disk_rel
            and seeded.key == (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        ):
            self._entries[rel] = _Entry(*seeded.key[:3], seeded.doc, st.st_ctime_ns)
            self._pending.add(rel)
            stats.cached += 1
            return True
        try:
            with open(os.path.join(self.root, disk_rel), "rb") as fh:
                data = fh.read()
        except OSError:
            return False
        doc = parse_doc(rel, data, disk=disk_rel, mtime_ns=st.st_mtime_ns, full=False)
        self._entries[rel] = _Entry(st.st_mtime_ns, st.st_size, st.st_ino, doc, st.st_ctime_ns)
        self._pending.add(rel)
        self._dirty.add(rel)
        stats.parsed += 1
        return True

    def _drop_under(self, rel_dir: str, keep: set[str] | None, stats: ScanStats) -> bool:
        prefix = rel_dir + "/" if rel_dir else ""
        gone = [
            p for p in self._entries if p.startswith(prefix) and (keep is None or p not in keep)
        ]
        for p in gone:
            del self._entries[p]
        self._pending.update(gone)
        self._dirty.update(gone)
        stats.removed += len(gone)
        return bool(gone)

    def refresh(
        self,
        want: Callable[[str, bool], bool] | None = None,
        want_key: Any = None,
        target_ok: Callable[[str], bool] | None = None,
    ) -> dict[str, Doc]:
        """Bring the index up to date with the disk; returns path -> Doc. `target_ok(real)`
        says whether a symlink resolving to `real` may be a note (part of `want_key`)."""
        want = want or self.want
        with self._lock:
            if target_ok is not None:
                self._target_ok = target_ok
            stats = ScanStats()
            changed = False
            if self._make_watcher is not None and self._watcher is None:
                self._watcher = self._make_watcher()
                if self._watcher is None:  # no inotify here: walk from now on
                    self._make_watcher = None
            w = self._watcher
            changes = w.drain() if w is not None else None
            full = (
                w is None
                or w.broken
                or changes is None
                or changes.overflow
                or self._symlinks
                or want_key != self._want_key
            )
            if full:
                if self._cache is not None and self._seed is None:
                    self._seed = self._cache.load()  # once per process, before the first walk
                if w is not None:
                    w.broken = False  # watches already placed stay; the walk adds the rest
                self._symlinks = False
                self._want_key = want_key
                seen: set[str] = set()
                for rel, disk_rel, st in self._walk(want):
                    stats.files += 1
                    seen.add(rel)
                    changed |= self._update(rel, disk_rel, st, stats)
                changed |= self._drop_under("", seen, stats)
                if self._seed:  # rows for notes gone, renamed or now private: delete them
                    self._dirty.update(p for p in self._seed if p not in self._entries)
                    self._seed = {}
            else:
                assert changes is not None
                for gone in changes.gone_dirs:
                    changed |= self._drop_under(gone, None, stats)
                for rel_dir, disk_dir in changes.dirs.items():
                    if not want(rel_dir, True):
                        continue
                    seen = set()
                    for rel, disk_rel, st in self._walk(want, (rel_dir, disk_dir)):
                        seen.add(rel)
                        changed |= self._update(rel, disk_rel, st, stats)
                    changed |= self._drop_under(rel_dir, seen, stats)
                for rel, disk_rel in changes.files.items():
                    stats.files += 1
                    fst = (
                        self._stat(os.path.join(self.root, disk_rel)) if want(rel, False) else None
                    )
                    if fst is None:
                        if self._entries.pop(rel, None) is not None:
                            self._pending.add(rel)
                            self._dirty.add(rel)
                            stats.removed += 1
                            changed = True
                    else:
                        changed |= self._update(rel, disk_rel, fst, stats)
            if changed:
                self._bump()
            self._flush()
            if self._docs is None:
                self._docs = {k: e.doc for k, e in self._entries.items()}
            self.last = stats
            return self._docs

    def _flush(self) -> None:
        """Persist what changed since the last flush (held lock: one flush at a time)."""
        if self._cache is None or not self._dirty:
            return
        from server.notes.parsecache import Cached

        dirty, self._dirty = self._dirty, set()
        put = [
            # a note the server wrote was parsed in full: store what a walk would have parsed
            Cached(
                (e.mtime_ns, e.size, e.ino, e.ctime_ns),
                replace(e.doc, headings=(), links=(), full=False) if e.doc.full else e.doc,
            )
            for p in dirty
            if (e := self._entries.get(p)) is not None
        ]
        if not self._cache.save(put, [p for p in dirty if p not in self._entries]):
            self._dirty |= dirty  # not written now (a full disk, a long lock): next time

    LOG_GENERATIONS = 256

    def _bump(self) -> None:
        self.generation += 1
        changed, self._pending = frozenset(self._pending), set()
        self._log.append((self.generation, changed))
        del self._log[: -self.LOG_GENERATIONS]
        if self._docs is not None:  # patch the shared map instead of rebuilding it
            docs = dict(self._docs)
            for p in changed:
                e = self._entries.get(p)
                if e is None:
                    docs.pop(p, None)
                else:
                    docs[p] = e.doc
            self._docs = docs

    def changes_since(self, generation: int) -> set[str] | None:
        """Paths changed after `generation`, or None when the log no longer reaches back."""
        with self._lock:
            if generation == self.generation:
                return set()
            if not self._log or self._log[0][0] > generation + 1:
                return None
            out: set[str] = set()
            for gen, paths in self._log:
                if gen > generation:
                    out |= paths
            return out

    def changed_after(self, ns: int) -> set[str]:
        """The notes whose file was modified or changed (mtime, ctime) at or after `ns`."""
        with self._lock:
            return {p for p, e in self._entries.items() if max(e.mtime_ns, e.ctime_ns) >= ns}

    def put(self, doc: Doc, st: os.stat_result) -> None:
        """Record a doc the server itself just wrote, so the next refresh need not re-read it."""
        with self._lock:
            entry = _Entry(st.st_mtime_ns, st.st_size, st.st_ino, doc, st.st_ctime_ns)
            self._entries[doc.path] = entry
            self._pending.add(doc.path)
            self._dirty.add(doc.path)  # written to the cache by the next refresh
            self._bump()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self._cache is not None:
            self._cache.close()
