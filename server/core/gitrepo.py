"""The vault's repository as a whole: made a repo with a first commit when it is not one
(`ensure_repo`), one writer at a time (`write_lock`), the operation git is in the middle of (a
merge, a rebase), and the paths git ignores or filters. Running git is `git_run`, commits and
their trailers `git_log`, our state folder `state_files`, git's index `git_index`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from server.core.git_index import _release_dead_index_lock
from server.core.git_log import (
    ACTION,
    commit_message,
)
from server.core.git_run import (
    _HELD,
    GitError,
    git,
    human_identity,
    identity_env,
)
from server.core.state_files import (
    git_dir,
    open_state,
    state_dir,
)

# What git leaves in .git while an operation waits for the owner, and how to abort each. One
# list: the write path refuses to commit in the middle of one, the dashboard shows and aborts it.
IN_PROGRESS = (
    ("MERGE_HEAD", "merge", "a merge"),
    ("rebase-merge", "rebase", "a rebase"),
    ("rebase-apply", "rebase", "a rebase"),
    ("CHERRY_PICK_HEAD", "cherry-pick", "a cherry-pick"),
    ("REVERT_HEAD", "revert", "a revert"),
)


def operation_in_progress(root: Path) -> tuple[str, str] | None:
    """(git command, "a merge") of the operation the vault's git is in the middle of, or None.
    A few stat calls: cheap enough for every poll."""
    g = git_dir(root)
    for marker, command, what in IN_PROGRESS:
        if (g / marker).exists():
            return command, what
    # A cherry-pick or revert of several commits keeps .git/sequencer between its picks, with
    # no *_HEAD file until one stops; like a rebase's, its next pick needs git's index.
    if (g / "sequencer").is_dir():
        with contextlib.suppress(OSError):
            if (g / "sequencer" / "todo").read_text(errors="replace").lstrip().startswith("rev"):
                return "revert", "a revert"
        return "cherry-pick", "a cherry-pick"
    return None


def rebase_orig_head(root: Path) -> str | None:
    """The commit a rebase in progress started from (what it will move its branch from when it
    ends: the branch as it was when the rebase read it), '' while the rebase has not written it
    yet, None when no rebase is in progress."""
    g = git_dir(root)
    for state in ("rebase-merge", "rebase-apply"):
        if (g / state).is_dir():
            try:
                return (g / state / "orig-head").read_text(errors="replace").strip()
            except OSError:
                return ""
    return None


@contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """One writer at a time across every process on this vault (flock on write.lock)."""
    fd = open_state(state_dir(root) / "write.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.fds = (*getattr(_HELD, "fds", ()), fd)
        _release_dead_index_lock(root)
        yield
    finally:
        _HELD.fds = tuple(f for f in getattr(_HELD, "fds", ()) if f != fd)
        os.close(fd)  # releases the lock, unless a git child still holds its copy


def ensure_repo(root: Path) -> bool:
    """`git init` and one "import" commit as the human when the vault is not yet a repo.

    Safe when two servers start at once (a client's probe process and the real one): `git init`
    is idempotent and the import commit is made under the write lock, only if HEAD is unborn.
    Returns True when this call made the import commit.
    """
    # a bare `.git/vaultwatch` is not a repository; a `.git` file (a worktree, a submodule) is
    if not (git_dir(root) / "HEAD").exists():
        try:
            git(root, "init", "-q")
        except GitError:
            # Another server started at the same moment and is initialising this very repo
            # (git init takes a lock on .git/config): wait for it rather than fail.
            for _ in range(100):
                if (git_dir(root) / "HEAD").exists():
                    break
                time.sleep(0.05)
            else:
                raise
    with write_lock(root):
        if git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode == 0:
            return False
        git(root, "add", "-A")
        # Added with no filter run (`_argv`): a file under a git filter (git-crypt) would go
        # into history as its bytes on disk, which the filter exists to keep out. Left out of
        # the import, untracked, for the owner to add with their own git.
        staged = [os.fsdecode(p) for p in git(root, "ls-files", "-z").stdout.split(b"\x00") if p]
        filtered = sorted(filtered_paths(root, staged))
        if filtered:
            git(root, "--literal-pathspecs", "rm", "-q", "--cached", "--", *filtered)
        name, email = human_identity(root)
        # Without hooks or signing, as every other commit of ours (commit-tree, SAFE_CONFIG): a
        # global pre-commit hook (git-secrets, talisman, the pre-commit framework) that refuses
        # would otherwise stop every start, the repository left initialised with no commit,
        # and a planted gpg.program would run. The owner's identity still applies.
        git(
            root,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            commit_message("import", {ACTION: "import"}),
            env=identity_env(name, email),
        )
        return True


def ignored_paths(root: Path, paths: list[str]) -> list[str]:
    """The paths git ignores here (.gitignore, .git/info/exclude, core.excludesFile) and does
    not track: notes the owner keeps out of history, which no AI write may commit."""
    if not paths:
        return []
    data = b"".join(p.encode() + b"\x00" for p in paths)
    r = git(root, "check-ignore", "-z", "--stdin", check=False, input=data)
    if r.returncode not in (0, 1):  # 1: none ignored; anything else: git could not tell
        raise GitError(f"git check-ignore failed: {r.stderr.decode(errors='replace').strip()}")
    return [p.decode("utf-8", "replace") for p in r.stdout.split(b"\x00") if p]


def filtered_paths(root: Path, paths: list[str]) -> dict[str, str]:
    """path -> the git `filter` attribute set on it (git-crypt, lfs, any clean filter): git
    stores such a file as its filter makes it, and a commit of the bytes on disk would put
    what the filter hides (git-crypt's plaintext) into history."""
    if not paths:
        return {}
    data = b"".join(p.encode() + b"\x00" for p in paths)
    r = git(root, "check-attr", "-z", "--stdin", "filter", check=False, input=data)
    if r.returncode != 0:
        raise GitError(f"git check-attr failed: {r.stderr.decode(errors='replace').strip()}")
    parts = r.stdout.split(b"\x00")
    out = {}
    for i in range(0, len(parts) - 2, 3):
        value = parts[i + 2].decode("utf-8", "replace")
        if value not in ("unspecified", "unset"):
            out[parts[i].decode("utf-8", "replace")] = value
    return out
