"""Where a note's temp file is made and how a file is written whole: fsynced, renamed over (a
reader sees old or new, never half)."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from server.core.state_files import make_state_dir, state_dir
from server.write.swap import replace_if_same


def temp_dir(root: Path, path: Path) -> Path:
    """Where a temp file for the note `path` is made: `.git/vaultwatch/tmp/`, outside the working
    tree, so no `git add -A` (the Obsidian Git plugin's backup) or `git status` ever sees one,
    even one a crash left. A rename is atomic only within one filesystem, so that folder is used
    only when it is on the note's; otherwise (a worktree's or submodule's git dir on another
    disk, a note folder that is a mount point) the temp file goes beside the note as before.
    That fallback stays safe: such a temp file is made only once the write holds git's
    index.lock (`Store.apply`), so no other git command can stage it while it exists, and
    recovery removes one a crash left."""
    d = state_dir(root) / "tmp"
    try:
        make_state_dir(d)  # never a link (OSError: then beside the note)
        near = path.parent
        while not near.exists() and near != root and near.parent != near:
            near = near.parent  # a new note's folder is made on its parent's filesystem
        if os.stat(d).st_dev == os.stat(near).st_dev:
            return d
    except OSError:
        pass
    return path.parent


def _temp_name(root: Path, path: Path) -> str:
    d = temp_dir(root, path)
    if d == path.parent:
        return str(d / f".{path.name}.{secrets.token_hex(4)}.vaultwatch-tmp")
    return str(d / f".{secrets.token_hex(8)}.vaultwatch-tmp")  # names of any folder meet here


def _write_temp(tmp: str, path: Path, data: bytes) -> None:
    """`data` in the new temp file `tmp` for `path`, fsynced, with the file's current mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, path.stat().st_mode & 0o7777)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(
    path: Path, data: bytes, tmp_dir: Path | None = None, same_as: int | None = None
) -> None:
    """Temp file in `tmp_dir` (on the same filesystem; default the same folder), fsync, rename
    over: a reader sees old or new, never half. With `same_as` (an inode), only over that
    file (`swap.replace_if_same`): swap.Replaced, the file there kept, when another took its
    place (an editor's rename-save)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}." if tmp_dir is None else ".",
        suffix=".vaultwatch-tmp",
        dir=path.parent if tmp_dir is None else tmp_dir,
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if same_as is None:
            os.replace(tmp, path)
        else:
            replace_if_same(tmp, path, same_as)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
