"""The little of git the read side needs: make sure the vault is a repo with a first commit."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FALLBACK_HUMAN = ("Vault owner", "owner@vaultwatch.local")


class GitError(RuntimeError):
    pass


def git(
    root: Path,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = True,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
    proc = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, env=full_env, input=input,
        pass_fds=tuple(getattr(_HELD, "fds", ())),
    )  # fmt: skip
    if check and proc.returncode != 0:
        said = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        raise GitError(
            f"git {' '.join(a for a in args[:4] if not a.startswith('-c'))} failed: {said}"
        )
    return proc


def human_identity(root: Path) -> tuple[str, str]:
    """The identity git itself would commit with here (config or GIT_AUTHOR_* environment),
    or a stand-in when git has none."""
    r = git(root, "var", "GIT_AUTHOR_IDENT", check=False)
    m = re.match(r"^(.*?) <([^>]*)>", r.stdout.decode("utf-8", "replace"))
    if r.returncode == 0 and m and m.group(1).strip() and m.group(2).strip():
        return m.group(1).strip(), m.group(2).strip()
    return FALLBACK_HUMAN


def identity_env(name: str, email: str) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def state_dir(root: Path) -> Path:
    return root / ".git" / "vaultwatch"


def make_state_dir(d: Path) -> Path:
    """The state folder `d` (<vault>/.git/vaultwatch), made if missing, but never the vault
    folder itself: a vault moved or deleted while a server runs must stay gone, not come back
    as an empty stub that a restarted server would serve (git resolving it to whatever
    repository is above)."""
    if not d.is_dir():
        vault = d.parent.parent
        if not vault.is_dir():
            raise FileNotFoundError(2, "the vault folder is gone", str(vault))
        d.mkdir(parents=True, exist_ok=True)
    return d


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
    g = root / ".git"
    for marker, command, what in IN_PROGRESS:
        if (g / marker).exists():
            return command, what
    return None


# The lock's fd is passed to every git child started while it is held: a server killed
# mid-commit leaves its `git update-ref` running, and the lock must stay taken until that child
# is done too, or the next server's recovery would undo files the child is about to commit.
# (per thread: only the thread holding the lock may hand out its fd)
_HELD = threading.local()


@contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """One writer at a time across every process on this vault (flock on write.lock)."""
    d = make_state_dir(state_dir(root))
    fd = os.open(d / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.fds = (*getattr(_HELD, "fds", ()), fd)
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
    if not (root / ".git" / "HEAD").exists():  # a bare `.git/vaultwatch` is not a repository
        try:
            git(root, "init", "-q")
        except GitError:
            # Another server started at the same moment and is initialising this very repo
            # (git init takes a lock on .git/config): wait for it rather than fail.
            for _ in range(100):
                if (root / ".git" / "HEAD").exists():
                    break
                time.sleep(0.05)
            else:
                raise
    with write_lock(root):
        if git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode == 0:
            return False
        git(root, "add", "-A")
        name, email = human_identity(root)
        git(
            root,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "import\n\nVaultwatch-Action: import",
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
