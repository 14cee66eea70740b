"""Other git processes at work on the vault right now, as the system lists them.

git keeps no lock across the steps of a rebase or a merge: `git rebase` reads the branch
first, then git's index and the branch again for its clean-tree check, and only then writes
its state folder (.git/rebase-merge); `git merge` reads HEAD, merges, and moves HEAD at its
end only if it is still where it read it. Between its first read and the first mark it leaves
in .git, such a command is visible only as a process. One that read the branch before our
commit moved it fails at its very end: a rebase half-way (HEAD detached, the owner's `git
rebase --abort` would take the branch back from our commit), a merge with the merged notes
left uncommitted for the next backup to record as an ordinary commit. The write path looks
for these processes (`rebases_or_merges`) before it moves the branch and again, still holding
git's index lock, once it has: one found then is kept at its next step that needs the lock,
where it fails before it has changed anything (commits._hold_for_a_rebase_begun).

Linux only (/proc): elsewhere nothing is found and the window stays as SECURITY.md says.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from server.core.gitrepo import rebase_orig_head

log = logging.getLogger("vaultwatch.store")

# git's own options that take their value as the next argument (`git -C <path> rebase ...`)
_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})
WATCHED = frozenset({"rebase", "merge"})


def subcommand(argv: list[str]) -> str | None:
    """The git command an argv runs (`rebase` of `git -C v -c k=v rebase up`), or None."""
    if not argv or os.path.basename(argv[0]) != "git":
        return None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in _VALUED:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return a
    return None


def _read(path: str, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def rebases_or_merges(root: Path) -> list[tuple[int, str]]:
    """(pid, "rebase" | "merge") of each live git process running one of those in this vault
    (its working folder the vault or inside it: git moves there before it reads a ref). About
    2 ms for 150 processes under load: only processes named `git` are read further. Empty
    where /proc cannot say (not Linux, or no access)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    top = os.path.realpath(root)
    found: list[tuple[int, str]] = []
    for name in names:
        if not name.isdigit():
            continue
        base = f"/proc/{name}"
        try:
            if _read(f"{base}/comm", 64) != b"git\n":
                continue
            argv = [os.fsdecode(a) for a in _read(f"{base}/cmdline", 1 << 16).split(b"\0")]
            cwd = os.readlink(f"{base}/cwd")
        except OSError:  # gone meanwhile, a zombie, or another user's
            continue
        command = subcommand(argv)
        if command in WATCHED and (cwd == top or cwd.startswith(top + os.sep)):
            found.append((int(name), command))
    return found


def other_git_running(root: Path) -> tuple[str, str] | None:
    """(command, "a rebase") of a rebase or merge running in this vault that has left no mark
    in .git yet (or is ending), as `operation_in_progress` names a marked one; None if none.
    The write path waits for it as for a marked one: it may have read the branch already."""
    for _pid, command in rebases_or_merges(root):
        return command, f"a {command}"
    return None


_POLL_S = 0.02


def hold_for_other_gits(root: Path, new: str, hold_s: float) -> None:
    """Called holding git's index lock, the branch just moved to `new` and git's index swapped.

    A rebase or merge that has begun meanwhile may have read the branch before our commit:
    let go, it would rebase or merge the branch as it was, and fail at its very end to move a
    branch that is no longer where it read it (a rebase half-way, HEAD detached, whose
    `git rebase --abort` then takes the branch back from our commit; a merge leaving its
    merged notes for the next backup to commit as an ordinary one). Each such git needs the
    index lock at its next step: kept until then, it fails there, before it has changed
    anything, and the plugin tries again at its next sync. A rebase whose state names our
    commit (it read the branch after we moved it) is let go at once.

    Seen by its state folder (written while the lock was ours) or, before it writes one, as a
    process (`rebases_or_merges`: Linux only; elsewhere a rebase between its read of the
    branch and its state folder still meets the window SECURITY.md names). Kept `hold_s` at
    most (a pre-rebase hook of the owner's that waits on git's index)."""
    deadline = time.monotonic() + hold_s
    while True:
        orig = rebase_orig_head(root)
        if orig == new:
            return  # it read our commit: it rebases it too
        if orig is None and not rebases_or_merges(root):
            return
        if time.monotonic() >= deadline:
            log.warning("a rebase or merge begun during our commit kept going for %.0f s", hold_s)
            return
        time.sleep(_POLL_S)
