"""The vault's git dir and our state folder in it (`.git/vaultwatch`): every state file made,
opened, written and read never through a link, with the owner-only modes, and read as untrusted
input (bounded, regular files only)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from server.core.errors import VaultwatchError
from server.core.git_run import GitError, git

# The vault's git dir, asked of git once per process and vault when `.git` is a file, and the
# vault each state folder belongs to (make_state_dir must know it: the state folder of a
# worktree or a submodule is not inside the vault folder).
_GIT_DIRS: dict[Path, Path] = {}
_VAULT_OF: dict[Path, Path] = {}


def git_dir(root: Path) -> Path:
    """The vault's own git dir, where git keeps its HEAD, index, locks and operation markers.

    `<root>/.git` when that is a folder, or nothing yet (ensure_repo makes it there): never a
    repository above the vault. When `.git` is a file (a worktree: <main>/.git/worktrees/NAME,
    the git dir of this checkout alone; a submodule: <super>/.git/modules/NAME), the folder it
    points to, as `git rev-parse --absolute-git-dir` says, once. GitError, in one line, when
    that file points to no repository."""
    found = _GIT_DIRS.get(root)
    if found is not None:
        return found
    dot = root / ".git"
    if not dot.is_file():
        return dot
    r = git(root, "rev-parse", "--absolute-git-dir", check=False)
    out = os.fsdecode(r.stdout).strip()
    if r.returncode != 0 or not out:
        said = " ".join(r.stderr.decode(errors="replace").split()) or "no git dir"
        raise GitError(
            f"{dot} is a file that points to no git repository ({said}): repair it "
            "(`git worktree repair`, `git submodule absorbgitdirs`) or remove it"
        )
    found = Path(out)
    _GIT_DIRS[root] = found
    _VAULT_OF[found / "vaultwatch"] = root
    return found


def state_dir(root: Path) -> Path:
    """Our state folder: `vaultwatch` in the vault's git dir (per checkout for a worktree)."""
    return git_dir(root) / "vaultwatch"


# What we keep in the state folder (the journal with its attempted diffs, the search index with
# every note's text, the token, the intent) is the owner's alone: the folder is 0700 and each
# file in it 0600, whatever the umask.
STATE_DIR_MODE = 0o700
STATE_FILE_MODE = 0o600


STATE_NAME = "vaultwatch"  # the state folder's name in the git dir


class StateLinked(VaultwatchError, OSError):
    """A state file or folder of ours is a symbolic link: refused, nothing written or read
    through it. An OSError too: every `except OSError` that treats a broken state file as
    upkeep lost (the journal, a cache) goes on treating it so."""

    code = "state_link"


def _linked(what: str, path: Path) -> StateLinked:
    return StateLinked(
        f"{what} in {path.parent} is a symbolic link: vaultwatch never writes or reads its "
        "state through one (it would go where the link points); nothing was written through "
        "it. Remove the link; vaultwatch remakes the file or folder."
    )


def _state_chain(d: Path) -> list[Path]:
    """Every folder from the state folder `d` is in (the nearest one named STATE_NAME) down to
    `d`; just `d` when it is in none (a --token-file of the owner's)."""
    chain = [d]
    for parent in d.parents:
        if chain[-1].name == STATE_NAME:
            break
        chain.append(parent)
    if chain[-1].name != STATE_NAME:
        return [d]
    chain.reverse()
    return chain


def through_link(path: Path) -> bool:
    """Whether the state file `path` would be reached through a symbolic link: the state
    folder or a folder of it down to `path`'s (the file itself is for O_NOFOLLOW to say)."""
    return any(folder.is_symlink() for folder in _state_chain(path.parent))


def make_state_dir(d: Path) -> Path:
    """The state folder `d` (state_dir: <vault>/.git/vaultwatch, or in the git dir a `.git`
    file points to), or a folder inside it (tmp/, transcripts/), made if missing, but never
    the vault folder itself: a vault moved or deleted while a server runs must stay gone, not
    come back as an empty stub that a restarted server would serve (git resolving it to
    whatever repository is above).

    Every folder from the state folder down to `d` is checked to be a folder and no symbolic
    link, each time (a link planted after the start too): everything we keep (the token, the
    journal, the commit index, temp files of notes) would go wherever it points, and what we
    read back would be someone else's. An OSError (ELOOP) that says so."""
    for i, folder in enumerate(_state_chain(d)):
        if folder.is_symlink():
            raise _linked("the state folder" if i == 0 else f"{folder.name}/", folder)
        if folder.is_dir():
            continue
        if i == 0:
            vault = _VAULT_OF.get(folder, folder.parent.parent)
            if not vault.is_dir():
                raise FileNotFoundError(2, "the vault folder is gone", str(vault))
            folder.mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
        else:
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=STATE_DIR_MODE)
            if folder.is_symlink():  # made by someone else between the two looks
                raise _linked(f"{folder.name}/", folder)
    return d


# SQLite opens these beside a database by name, following a link: a planted `index.sqlite-wal`
# link would have SQLite write its log into the file it names.
_SQLITE_SIDE = ("-wal", "-shm", "-journal")


def state_file(path: Path) -> Path:
    """Make sure the state file `path` exists with STATE_FILE_MODE before another program
    creates it with its own default (SQLite gives its -wal and -shm files the database's mode,
    git writes an index with the umask's). Its folders are checked (make_state_dir), and it,
    or a SQLite file beside it, being a symbolic link is refused (OSError ELOOP): chmod, SQLite
    and git would all follow it."""
    make_state_dir(path.parent)
    for p in (path, *(path.with_name(path.name + side) for side in _SQLITE_SIDE)):
        if p.is_symlink():
            raise _linked(p.name, p)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, STATE_FILE_MODE))
    fd = open_state(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.fchmod(fd, STATE_FILE_MODE)
    finally:
        os.close(fd)
    return path


def open_state(path: Path, flags: int, mode: int = STATE_FILE_MODE) -> int:
    """os.open of the state file `path`, never through a symbolic link: its folders checked
    (make_state_dir, made if missing), the file itself opened with O_NOFOLLOW. The one way
    anything of ours opens a state file to write it (or to lock it)."""
    make_state_dir(path.parent)
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(path.name, path) from None
        raise


def write_state(path: Path, data: bytes) -> None:
    """`data` as the state file `path`, atomically: a temp file made in its (checked) folder
    with O_EXCL (no link can be there), fsynced, renamed over (which replaces a link, never
    writes through it), STATE_FILE_MODE."""
    make_state_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.vaultwatch-tmp")
    fd = open_state(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def copy_to_state(src: Path, dst: Path) -> None:
    """A copy of `src` as the state file `dst` (git's index into our copy of it), never
    written through a link at `dst`."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(dst)
    fd = open_state(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out)


# State files are read as untrusted input: a synced or unzipped `.git` can hold anything, and
# one deep JSON file (`[` * 100,000) raised RecursionError where ValueError was caught, so no
# server could start (adversarial pass 3, N13). Read: regular files only (a FIFO would block),
# never through a symlink (N15: the journal was appended to whatever file a link named), and no
# more than a bound.
STATE_READ_MAX = 64 * 1024 * 1024


class StateDamaged(VaultwatchError, ValueError):
    """A state file that is not what we wrote: a link, not a regular file, too big, or JSON
    that does not parse (too deep included). A ValueError: every reader's `except ValueError`
    already treats it as damage."""

    code = "state_damaged"


def read_state(path: Path, limit: int = STATE_READ_MAX) -> bytes:
    """The bytes of the state file `path`. FileNotFoundError when it is missing; StateDamaged
    when it is a symlink (or in a state folder that is one), not a regular file, or over
    `limit` bytes."""
    if through_link(path):
        raise StateDamaged(f"{path.name} is in a state folder that is a symbolic link")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateDamaged(f"{path.name} is a symbolic link; state files never are") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StateDamaged(f"{path.name} is not a regular file")
        if st.st_size > limit:
            raise StateDamaged(f"{path.name} is {st.st_size:,} bytes, over the {limit:,} limit")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise StateDamaged(f"{path.name} is over the {limit:,} byte limit")
        return data
    finally:
        os.close(fd)


def load_state_json(path: Path, limit: int = STATE_READ_MAX) -> Any:
    """The JSON value of the state file `path` (read_state's rules), StateDamaged when it does
    not parse: bad UTF-8, bad JSON, or nested too deeply for the parser."""
    raw = read_state(path, limit)
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError as exc:
        raise StateDamaged(f"{path.name} is nested too deeply") from exc
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise StateDamaged(f"{path.name} is not valid JSON ({exc})") from exc


def secure_state(root: Path) -> None:
    """The state folder at STATE_DIR_MODE and everything in it at STATE_FILE_MODE (folders at
    STATE_DIR_MODE): run at every start, so vaults made by earlier versions are fixed too."""
    top = make_state_dir(state_dir(root))
    # Not the vault walk (server/notes/walk.py, a layer above): this is the state folder inside
    # .git, every file of it, dot-names included; only links are left alone (chmod follows them).
    for dirpath, dirnames, filenames in os.walk(top):
        with contextlib.suppress(OSError):
            os.chmod(dirpath, STATE_DIR_MODE)
        for name in filenames:
            p = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                if not os.path.islink(p):
                    os.chmod(p, STATE_FILE_MODE)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
