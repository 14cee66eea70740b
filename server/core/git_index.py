"""git's own index (.git/index), changed as git changes it: under .git/index.lock (taken
crash-safe, a dead writer's removed), through a copy prepared before the lock is taken."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from server.core.git_run import GitError, git
from server.core.state_files import copy_to_state, git_dir, open_state, state_dir

# -- git's own index ----------------------------------------------------------------------------
#
# After a commit, git's index (.git/index) must hold the new text of the paths committed: left
# with the old text, `git status` shows the AI's change staged for removal, and the owner's next
# plain `git commit` would undo it. Every git command takes .git/index.lock to change the index;
# the owner's `git status` holds it for a moment, a `git commit` waiting for its message holds
# it for minutes, a crashed git leaves it. So the index is changed the way git changes it: the
# lock taken first (waiting a moment for another holder), the new index built in a copy, the
# branch moved while the lock is held, then the copy renamed over the index. If the lock cannot
# be had, nothing is committed and the index is exactly as it was.

INDEX_LOCK_WAIT_S = 2.0  # how long a write waits for another git command's index lock


def index_busy_message(wait_s: float = INDEX_LOCK_WAIT_S) -> str:
    return (
        f"git's index is locked (.git/index.lock) and stayed locked for {wait_s:g} s: another "
        "git command is running (a `git commit` waiting for its message holds it) or one "
        "crashed; nothing was written. Try again in a moment; if it stays locked, tell the "
        "owner: if no git command is running, they can delete .git/index.lock."
    )


class IndexBusy(GitError):
    """.git/index.lock stayed held by another git command; nothing was changed."""

    code = "git_busy"


def _index_lock(root: Path) -> Path:
    return git_dir(root) / "index.lock"


def _index_marker(root: Path) -> Path:
    """Our hard link to the .git/index.lock we hold: if we are killed holding it, the next
    taker of the write lock knows the lock for ours (same inode) and removes it."""
    return state_dir(root) / "index.lock"


def wait_for_index(root: Path, wait_s: float = INDEX_LOCK_WAIT_S) -> bool:
    """Whether .git/index.lock is absent, or goes within `wait_s` (another git at work)."""
    lock = _index_lock(root)
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while os.path.lexists(lock):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def _release_dead_index_lock(root: Path) -> None:
    """Under the write lock, an index lock of ours is a dead writer's (a live one releases it
    before the write lock, and a killed one's git children keep the write lock until they end):
    remove it, or every later write (and the owner's git) would find the index locked.

    The same holds for the locks git takes on our own private indexes (the commit index, the
    copy of git's index): only our git children take them, always under the write lock, so
    one left behind is a killed child's, and would stop every later commit."""
    for name in ("commit.index.lock", "index.next.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(state_dir(root) / name)
    marker = _index_marker(root)
    if not os.path.lexists(marker):
        return
    with contextlib.suppress(OSError):
        if os.path.samefile(marker, _index_lock(root)):
            os.unlink(_index_lock(root))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)


def _take_index_lock(root: Path, wait_s: float, before: Callable[[], None] | None = None) -> bool:
    """Take .git/index.lock as git does (created only if absent), waiting up to `wait_s` for
    another holder. True when it is linked to our marker (crash-safe), False when the file
    system has no hard links (then taken by O_EXCL, as git does). Raises IndexBusy."""
    lock, marker = _index_lock(root), _index_marker(root)
    _release_dead_index_lock(root)
    os.close(open_state(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
    linked = True
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            if before is not None:
                # each try, not only the first: waiting for the lock, we must not take it
                # between two steps of an operation that began meanwhile (a rebase's picks)
                try:
                    before()
                except BaseException:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(marker)
                    raise
            if linked:
                os.link(marker, lock)
            else:
                os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return linked
        except FileExistsError:
            if time.monotonic() >= deadline:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(marker)
                raise IndexBusy(index_busy_message(wait_s)) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        except OSError:
            if not linked:
                raise
            linked = False  # no hard links here: git's own way, without the crash marker
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)


# (st_ino, st_size, st_mtime_ns, st_ctime_ns) of git's index: git replaces it by a rename, so
# the same stamp is the same file
IndexStamp = tuple[int, int, int, int]


def _index_stamp(st: os.stat_result) -> IndexStamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class PreparedIndex(NamedTuple):
    """git's index with `info` (`update-index --index-info` lines) applied, built on a copy
    (`copy`) BEFORE git's index lock is taken, from the index whose stamp is `source` (None: no
    index). `owner_index(prepared=...)` puts it in place under the lock if the index is still
    that one, so git's lock is held only for the moment of the swap."""

    info: bytes
    copy: Path
    source: IndexStamp | None


def prepare_index(root: Path, info: bytes) -> PreparedIndex:
    """A copy of git's index as it is now, with `info` applied (see PreparedIndex). Caller
    holds the write lock (the copy's path is shared by our writers)."""
    index = git_dir(root) / "index"
    copy = state_dir(root) / "index.next"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(copy)
    try:
        src = open(index, "rb")  # noqa: SIM115 - the stamp is of the very file copied
    except FileNotFoundError:
        return PreparedIndex(info, copy, None)
    with src, os.fdopen(open_state(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as dst:
        source = _index_stamp(os.fstat(src.fileno()))
        shutil.copyfileobj(src, dst)
    git(root, "update-index", "--index-info", env={"GIT_INDEX_FILE": str(copy)}, input=info)
    return PreparedIndex(info, copy, source)


class OwnerIndex:
    """git's index held under git's own lock. `git(...)` runs a git command on a copy of it
    (GIT_INDEX_FILE); `install()` puts the copy in place. Leaving without `install()` leaves
    the index exactly as it was."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index = git_dir(root) / "index"
        self.copy = state_dir(root) / "index.next"
        self.exists = self.index.exists()  # no index at all (a bare start): left so
        self.installed = False

    def git(self, *args: str, input: bytes | None = None) -> None:
        if self.exists:
            if self.copy.is_symlink() or not self.copy.exists():
                # after an install(), under the same lock (a write holds it across the owner's
                # snapshot and its own commit): the next change starts from the index in place
                copy_to_state(self.index, self.copy)
            git(self.root, *args, env={"GIT_INDEX_FILE": str(self.copy)}, input=input)

    def install(self) -> None:
        if self.exists:
            os.replace(self.copy, self.index)
        self.installed = True


class IndexMoved(GitError):
    """git's index was written by another git after a PreparedIndex was made from it; the
    lock was let go at once (see owner_index's `stale_ok`)."""


@contextmanager
def owner_index(
    root: Path,
    wait_s: float = INDEX_LOCK_WAIT_S,
    prepared: PreparedIndex | None = None,
    first: Callable[[], None] | None = None,
    stale_ok: bool = True,
) -> Iterator[OwnerIndex]:
    """Change git's index as git does: under .git/index.lock (IndexBusy when another git
    command keeps it past `wait_s`), through a copy renamed over it. Caller holds the write
    lock (so the marker of a dead holder can be told from a live one).

    With `prepared`, the copy is that one, already changed, when git's index is still the one
    it was built from; otherwise (another git wrote the index since) it is built again here,
    from the index as it is under the lock, or, without `stale_ok`, IndexMoved with the lock
    let go at once (the caller prepares again outside it). `first` runs the moment the lock is
    taken, before anything else (a look for an operation in progress: what it raises lets the
    lock go at once)."""
    linked = _take_index_lock(root, wait_s, first)
    idx = OwnerIndex(root)
    try:
        if first is not None:
            first()
        current: IndexStamp | None = None
        with contextlib.suppress(FileNotFoundError):
            current = _index_stamp(os.stat(idx.index))
        if prepared is not None and current != prepared.source and not stale_ok:
            raise IndexMoved("git's index was written meanwhile")
        if prepared is None or current != prepared.source:
            if idx.exists:
                copy_to_state(idx.index, idx.copy)  # read under the lock: nobody changes it
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(idx.copy)
            if prepared is not None:
                idx.git("update-index", "--index-info", input=prepared.info)
        yield idx
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(idx.copy)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_index_lock(root))
        if linked:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_index_marker(root))
