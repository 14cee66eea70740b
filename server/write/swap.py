"""Replace a note only if it is still the file that was checked: the rename made one atomic
compare that includes the inode (issue 27).

Between the write rule's check of a note (`leases.Replacing.replace`) and the rename of our temp
file over it, an editor that saves by renaming a new file over the note (vim, many IDEs, Obsidian
on some platforms) puts the owner's save there, and a plain rename then replaced it unseen: the
owner's text was in no file and no commit. A lease does not help: renaming over a path does not
open the old file for writing, so it breaks no lease.

Linux's renameat2 does it as one step: RENAME_EXCHANGE swaps our temp file with whatever the
note's path holds at that instant, and what comes back is looked at: the file checked (by inode)
is done with; another file (the editor's save) is put back at once and the write planned again
on it. A note that was not there is made with RENAME_NOREPLACE, so one created meanwhile is never
replaced. Where renameat2 is missing or the filesystem refuses it (other systems, NFS, many FUSE
mounts) the plain rename is used, and the window is as SECURITY.md says.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import Any

from server.core.errors import VaultwatchError

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
# the kernel or the filesystem does not do it: fall back to the plain rename
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}


def _renameat2() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return getattr(libc, "renameat2", None)


_CALL = _renameat2()


def _rename2(src: str, dst: str, flags: int) -> bool:
    """renameat2(src, dst, flags): True when done, False when not supported here; OSError
    for any other failure (EEXIST, ENOENT: the caller's to read)."""
    if _CALL is None:
        return False
    if _CALL(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), dst)


class Replaced(VaultwatchError):
    """The note's path held another file than the one checked: `saved` is what it holds (None:
    no file now); it was put back, nothing of ours is there. The write path turns it into a
    WriteRace (planned again); nobody reads its message."""

    code = "write_race"

    def __init__(self, saved: bytes | None) -> None:
        super().__init__("the note was replaced by another file while it was written")
        self.saved = saved


def replace_if_same(tmp: str, target: Path, checked: int | None) -> None:
    """Rename `tmp` over `target` if `target` is still the file with inode `checked` (None: no
    file was there). Replaced when another file took its place since the check: that file is
    back at `target` and `tmp` is gone."""
    if checked is None:
        try:
            if _rename2(tmp, str(target), _RENAME_NOREPLACE):
                return
        except FileExistsError:  # made since the check: the owner's new note
            os.unlink(tmp)
            raise Replaced(target.read_bytes()) from None
        os.replace(tmp, str(target))
        return
    try:
        swapped = _rename2(tmp, str(target), _RENAME_EXCHANGE)
    except FileNotFoundError:  # gone since the check (moved or deleted): nothing to replace
        os.unlink(tmp)
        raise Replaced(None) from None
    if not swapped:
        os.replace(tmp, str(target))
        return
    # `tmp` now holds what the note's path held
    if os.lstat(tmp).st_ino == checked:
        os.unlink(tmp)
        return
    saved = Path(tmp).read_bytes()
    os.replace(tmp, str(target))  # the editor's save back; ours goes
    raise Replaced(saved)
