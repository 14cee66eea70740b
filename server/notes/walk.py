"""The one walk of a vault's files, with one policy for what a file is and how it is named.

- A name starting with `.` is skipped, file or folder: `.git` (the token, remote credentials),
  `.obsidian`, `.trash` are no part of the notes.
- Every path is given in NFC (`VaultFile.rel`, how every path rule compares it) beside the
  disk's own spelling (`VaultFile.disk`, what to open): macOS writes names in NFD, and a link or
  a path from the model names them in NFC.
- A symlinked folder is never entered (it can loop, or lead out of the vault). A symlink is a
  file only when it resolves to a regular file that `target_ok` allows (default: inside the
  vault and in no dot-folder; a caller with a path policy passes `PathPolicy.target_allowed`,
  which also refuses private targets). Only regular files are files (no fifo, no socket).
- `want(rel, is_dir)` is the caller's own rule (private folders, notes only): a folder it
  refuses is not entered, a file it refuses is not given.

Folders are walked in name order, each folder's files before its sub-folders (as `os.walk`
with sorted names), so every caller sees one order too.
"""

from __future__ import annotations

import os
import stat as st_mode
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple


class VaultFile(NamedTuple):
    rel: str  # NFC, '/'-separated, relative to the vault root
    disk: str  # as the disk spells it
    stat: os.stat_result  # the file's own (a symlink's: its target's; every_link: the link's)
    link: bool  # a symlink


def nfc(name: str) -> str:
    return name if name.isascii() else unicodedata.normalize("NFC", name)


def spelled(root: Path, rel: str) -> str:
    """`rel` (NFC, as every path rule compares it) as it is spelled on disk, the way back from
    `nfc`: a name made on macOS may be NFD, and Linux opens only the bytes it has (adversarial
    pass 3, N16: such a note could be neither moved nor deleted). A path that does not exist,
    or a name two files share in NFC, stays as given: never a guess between two files. The
    owner's file actions and the check of what the owner changed (write/modified.py) ask it."""
    if rel.isascii() or os.path.lexists(root / rel):
        return rel
    here, out = root, []
    for part in rel.split("/"):
        if not os.path.lexists(here / part):
            try:
                match = [n for n in os.listdir(here) if unicodedata.normalize("NFC", n) == part]
            except OSError:
                return rel
            if len(match) != 1:
                return rel
            part = match[0]
        out.append(part)
        here = here / part
    return "/".join(out)


def inside_vault(root: Path | str) -> Callable[[str], bool]:
    """Where a symlink may point when the caller has no path policy: inside the vault (`real`
    fully resolved) and in no dot-folder."""
    prefix = os.path.realpath(root) + os.sep

    def ok(real: str) -> bool:
        if not real.startswith(prefix):
            return False
        return not any(p.startswith(".") for p in real[len(prefix) :].split(os.sep))

    return ok


def file_stat(
    abs_path: str,
    target_ok: Callable[[str], bool],
    entry: os.DirEntry[str] | None = None,
    on_link: Callable[[], None] | None = None,
) -> tuple[os.stat_result, bool] | None:
    """(stat, is a symlink) of the file at `abs_path` under the walk's rules, or None when it
    is no file: not a regular file, or a symlink whose target `target_ok` refuses. `on_link`
    is called for every symlink met, allowed or not (the index cannot watch what they point
    to, so it walks again)."""
    try:
        if entry is not None and not entry.is_symlink():
            st = entry.stat(follow_symlinks=False)
            link = False
        else:
            lst = os.lstat(abs_path)
            link = st_mode.S_ISLNK(lst.st_mode)
            if link:
                if on_link is not None:
                    on_link()
                if not target_ok(os.path.realpath(abs_path)):
                    return None  # outside, hidden (.git/...) or private
                st = os.stat(abs_path)
            else:
                st = lst
    except OSError:
        return None
    return (st, link) if st_mode.S_ISREG(st.st_mode) else None


def walk_files(
    root: Path | str,
    *,
    want: Callable[[str, bool], bool] | None = None,
    target_ok: Callable[[str], bool] | None = None,
    start: tuple[str, str] = ("", ""),
    on_folder: Callable[[str, str, str], object] | None = None,
    on_link: Callable[[], None] | None = None,
    every_link: bool = False,
) -> Iterator[VaultFile]:
    """Every file under `start` ((rel, disk) of a folder; the root by default), by the rules
    above. `on_folder(rel, disk, absolute)` is called for each folder entered (the index
    watches it). `every_link` gives every symlink (to a folder too) as found, unchecked and
    unfollowed: for the owner's file actions, which must see a link to refuse acting through
    it (their `refuse_links`)."""
    root_s = str(root)
    ok = target_ok or inside_vault(root)
    stack = [start]
    while stack:
        rel_dir, disk_dir = stack.pop()
        abs_dir = os.path.join(root_s, disk_dir) if disk_dir else root_s
        if on_folder is not None:
            on_folder(rel_dir, disk_dir, abs_dir)
        try:
            with os.scandir(abs_dir) as it:
                entries = [e for e in it if not e.name.startswith(".")]
        except OSError:
            continue
        entries.sort(key=lambda e: e.name)
        folders: list[tuple[str, str]] = []
        for entry in entries:
            name = nfc(entry.name)
            rel = f"{rel_dir}/{name}" if rel_dir else name
            disk = f"{disk_dir}/{entry.name}" if disk_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if want is None or want(rel, True):
                    folders.append((rel, disk))
                continue
            if want is not None and not want(rel, False):
                continue
            if every_link and entry.is_symlink():
                try:
                    found: tuple[os.stat_result, bool] | None = (
                        entry.stat(follow_symlinks=False),
                        True,
                    )
                except OSError:
                    found = None
            else:
                found = file_stat(entry.path, ok, entry, on_link)
            if found is not None:
                yield VaultFile(rel, disk, found[0], found[1])
        stack.extend(reversed(folders))
