"""When a note was last modified: the time of the last commit that touched it, or its mtime when
the file has changes git has not seen (or git does not track it).

A fresh clone gives every file the clone's mtime, so mtimes alone say nothing about which notes
are recent. Commit times come from one `git log --name-only` pass, cached by HEAD; when HEAD
moves forward only the new commits are read. Which files differ from HEAD comes from
`git status`: in full once per HEAD, then only for the notes that changed on disk since.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import unicodedata
from collections.abc import Callable
from pathlib import Path

from .gitrepo import git, state_dir

log = logging.getLogger("vaultwatch.modified")

FULL_RECHECK = 500  # more notes than this to re-check: one full `git status`


class ModifiedTimes:
    """Commit times per path and the set of paths git has not seen as they are, kept in step
    with HEAD and with the note index's generation. Thread-safe; every git failure degrades to
    mtimes (an empty map), never to an error."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._head: str | None = None
        self._generation: int | None = None
        self._commits: dict[str, int] = {}  # path -> ns of the last commit that touched it
        self._dirty: set[str] = set()
        self.version = 0  # bumped whenever a path's modified time may have changed
        self.log_passes = 0  # full `git log` passes (tests and the bench read it)

    def current(
        self, generation: int, changed_since: Callable[[int], set[str] | None]
    ) -> tuple[int, dict[str, int], set[str]]:
        """(version, commit times, dirty paths) for the notes at index `generation`.
        `changed_since(g)` is the notes changed on disk since generation g, None if unknown."""
        with self._lock:
            head = self._read_head()
            if head == self._head and generation == self._generation:
                return self.version, self._commits, self._dirty
            recheck: set[str] | None = None  # None: every path
            if head != self._head:
                moved = self._follow(self._head, head)
                if moved is not None and self._generation is not None:
                    disk = changed_since(self._generation)
                    recheck = None if disk is None else moved | disk
            elif self._generation is not None:
                recheck = changed_since(self._generation)
            self._refresh_dirty(recheck if head is not None else set())
            self._head, self._generation = head, generation
            self.version += 1
            return self.version, self._commits, self._dirty

    # -- HEAD and the log -------------------------------------------------------------------------

    def _read_head(self) -> str | None:
        """HEAD's sha from the files git keeps (microseconds: this runs on every tool call),
        asking git itself only for layouts the files do not answer (worktrees, odd refs)."""
        gitdir = self.root / ".git"
        if not os.path.lexists(gitdir):
            return None  # not a repository (yet): every note is dated by its mtime
        try:
            head = (gitdir / "HEAD").read_text().strip()
            if not head.startswith("ref: "):
                return head or None
            ref = head[5:].strip()
            try:
                return (gitdir / ref).read_text().strip() or None
            except FileNotFoundError:
                for line in (gitdir / "packed-refs").read_text().splitlines():
                    sha, _, name = line.partition(" ")
                    if name == ref:
                        return sha
                return None  # an unborn branch: no commit yet
        except (OSError, UnicodeDecodeError):
            r = git(self.root, "rev-parse", "-q", "--verify", "HEAD", check=False)
            return r.stdout.decode().strip() or None if r.returncode == 0 else None

    def _follow(self, old: str | None, new: str | None) -> set[str] | None:
        """Bring commit times to `new`. Returns the paths whose HEAD content changed when only
        the commits since `old` were read, None after a full pass (or no HEAD)."""
        if new is None:
            self._commits = {}
            return None
        fresh = old is None
        if fresh:  # a new process: start from what another one saved, if any
            old, self._commits = self._load()
        if old is not None:
            anc = git(self.root, "merge-base", "--is-ancestor", old, new, check=False)
            if anc.returncode == 0:
                newer = self._log(f"{old}..{new}") if old != new else {}
                if newer is not None:
                    self._commits = {**self._commits, **newer}
                    if fresh and newer:
                        self._save(new)
                    return set(newer)
        full = self._log(new)
        self.log_passes += 1
        self._commits = full or {}
        if full is not None:
            self._save(new)
        return None

    # The last full pass, kept beside the index so each new process (the dashboard's insights,
    # the shell commands) does not read the whole history again: one pass per HEAD, not per
    # process. A cache only: unreadable or for another HEAD, it is ignored.

    @property
    def _cache(self) -> Path:
        return state_dir(self.root) / "modified.json"

    def _load(self) -> tuple[str | None, dict[str, int]]:
        try:
            data = json.loads(self._cache.read_text(encoding="utf-8"))
            head, commits = data["head"], data["commits"]
            return str(head), {str(k): int(v) for k, v in commits.items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None, {}

    def _save(self, head: str) -> None:
        tmp = self._cache.with_name(f"modified.{os.getpid()}.tmp")
        try:
            tmp.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"head": head, "commits": self._commits}, f, ensure_ascii=False)
            os.replace(tmp, self._cache)
        except OSError as exc:
            log.warning("could not keep commit times (%s); the next process reads git again", exc)
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _log(self, revs: str) -> dict[str, int] | None:
        args = ("log", "--format=%x01%ct", "--name-only", "-z", "--no-renames", revs, "--")
        r = git(self.root, *args, check=False)
        if r.returncode != 0:
            log.warning("git log failed; notes are dated by mtime: %s", r.stderr[:200])
            return None
        times: dict[str, int] = {}
        for block in r.stdout.split(b"\x01")[1:]:  # per commit: ct NUL \n path NUL path NUL
            head, _, files = block.partition(b"\x00")
            try:
                ns = int(head) * 1_000_000_000
            except ValueError:
                continue
            for raw in files.split(b"\x00"):
                name = raw.strip(b"\n")
                if name:
                    # newest first: the first commit seen for a path is its last one
                    times.setdefault(_path(name), ns)
        return times

    # -- what git has not seen ----------------------------------------------------------------------

    def _refresh_dirty(self, recheck: set[str] | None) -> None:
        if recheck is not None and not recheck:
            return
        if recheck is not None and len(recheck) <= FULL_RECHECK:
            found = self._status(sorted(recheck))
            if found is not None:
                self._dirty = (self._dirty - recheck) | found
                return
        found = self._status(None)
        self._dirty = found if found is not None else set()

    def _status(self, paths: list[str] | None) -> set[str] | None:
        """Paths (of `paths`, or all) whose file or staged content differs from HEAD."""
        cmd = ["--literal-pathspecs", "status", "--porcelain=v1", "-z"]
        cmd += ["--untracked-files=all", "--no-renames", "--", *(paths or [])]
        r = git(self.root, *cmd, check=False)
        if r.returncode != 0:
            log.warning("git status failed; notes are dated by mtime: %s", r.stderr[:200])
            return None
        # each entry: 'XY path' ending in NUL
        return {_path(e[3:]) for e in r.stdout.split(b"\x00") if len(e) > 3}


def _path(raw: bytes) -> str:
    return unicodedata.normalize("NFC", raw.decode("utf-8", "surrogateescape"))
