"""A three-way line merge for the write path's one merge: a save that landed in a note's old copy
while a write replaced it (leases.Replacing.late_saves), folded in with the write's change
instead of put back over it (late_saves.LateSaves._take_late_saves; issue 27)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections import Counter
from pathlib import Path

from server.core.faults import crash_point
from server.core.git_run import git
from server.core.state_files import make_state_dir, state_dir

# Long conflict markers: a note line that starts with one makes the merge refuse (None), so no
# line of a note is ever taken for a marker.
_SIZE = 41
_OURS, _BASE, _SEP, _THEIRS = (c * _SIZE for c in "<|=>")


def merge_lines(root: Path, base: bytes, first: bytes, second: bytes) -> bytes | None:
    """`base` with both the change base -> first and the change base -> second, or None when
    they change the same lines. Lines both sides only add at the same place (the owner typing
    at the end of a note while the AI appends to its last section) are kept, `first`'s before
    `second`'s: nothing either side wrote is dropped, and no line is changed that one side
    changed and the other did not. Text only (a NUL byte: None). Inputs go to the vault's
    private state folder, never /tmp (a private note's text stays inside .git)."""
    if first == second or second == base:
        return first
    if first == base:
        return second
    quick = _both_insert_at_one_place(base, first, second)
    if quick is not None:
        return _keeps_both(base, first, second, quick)
    texts = (base, first, second)
    if any(b"\0" in t for t in texts) or any(
        line.startswith(m.encode())
        for t in texts
        for line in t.splitlines()
        for m in (_OURS, _BASE, _SEP, _THEIRS)
    ):
        return None
    folder = make_state_dir(state_dir(root) / "merge")
    tag = f"{os.getpid()}.{secrets.token_hex(4)}"  # the pid: see clear_merge_inputs
    names = [folder / f"{tag}.{n}" for n in ("first", "base", "second")]
    try:
        for path, data in zip(names, (first, base, second), strict=True):
            path.write_bytes(data)
        crash_point("merge_inputs")  # the three texts in the state folder, for git
        r = git(
            folder,
            "merge-file",
            "-p",
            "--quiet",
            "--diff3",
            f"--marker-size={_SIZE}",
            *map(str, names),
            check=False,
        )
    finally:
        for path in names:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    if r.returncode < 0 or r.returncode > 127:  # an error, not a count of conflicts
        return None
    out = bytes(r.stdout) if r.returncode == 0 else _both_added(bytes(r.stdout))
    return None if out is None else _keeps_both(base, first, second, out)


def clear_merge_inputs(root: Path) -> None:
    """Remove the merge inputs a killed writer left (its pid is in their names): a note's text,
    a private one's too, in the state folder forever otherwise. A live process's are kept."""
    folder = state_dir(root) / "merge"
    try:
        names = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    except OSError:
        return  # no merge ever made (or not a folder we read)
    for path in names:
        pid = path.name.split(".", 1)[0]
        if pid.isdigit() and _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: alive
    return True


def _keeps_both(base: bytes, first: bytes, second: bytes, out: bytes) -> bytes | None:
    """`out`, or None when it lost what a side that only added lines added: git's merge takes
    the same line added by both sides near one place for one (the owner typing the line the AI
    appends, with any other change of theirs: the AI's commit came out empty, its line in the
    owner's snapshot), and gives an owner's last line without its newline one (an owner's line
    changed in the AI's commit). A side that only added lines must be the other side with
    exactly those lines added, nothing else changed."""
    for side, other in ((second, first), (first, second)):
        if side == base or not adds_lines_only(base, side):
            continue
        if not adds_lines_only(other, out) or _added(other, out) != _added(base, side):
            return None
    return out


def _added(old: bytes, new: bytes) -> Counter[bytes]:
    """The lines `new` adds to `old` (`adds_lines_only(old, new)`), as a multiset: where a run of
    equal lines lets the block sit, its lines are the same."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < len(a) and a[head] == b[head]:
        head += 1
    return Counter(b[head : head + len(b) - len(a)])


def _both_added(merged: bytes) -> bytes | None:
    """The merge with each conflict resolved as both sides' lines, `first`'s first, when every
    conflict is one where both sides only added lines (its base part empty); else None."""
    out: list[bytes] = []
    part = ""  # "" outside a conflict, else "first", "base" or "second"
    for line in merged.splitlines(keepends=True):
        mark = line[:_SIZE].decode("ascii", "replace")
        if mark == _OURS and not part:
            part = "first"
        elif mark == _BASE and part == "first":
            part = "base"
        elif mark == _SEP and part == "base":
            part = "second"
        elif mark == _THEIRS and part == "second":
            part = ""
        elif part == "base":
            return None  # a line both sides changed: no merge decides that for the owner
        else:
            out.append(line)
    return None if part else b"".join(out)


def adds_lines_only(old: bytes, new: bytes) -> bool:
    """Whether `new` is `old` with lines added at one place and nothing else changed (an
    append to a section): the only change the write path merges onto an owner's save, so
    what it commits is the owner's text plus lines that were checked when planned."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(b) <= len(a) or (a and not a[-1].endswith(b"\n")):
        return False  # a last line without its newline would be changed by an append
    head = 0
    while head < len(a) and a[head] == b[head]:
        head += 1
    return a[head:] == b[len(b) - (len(a) - head) :]


def take_back(saved: bytes, on: bytes, landed: bytes) -> bytes | None:
    """`landed` without the lines the AI added to `saved` (`on` is `saved` with them, one
    block), for undoing a write whose note took a save since (`landed`: `on` with it). The
    3-way merge first; where it cannot decide (the owner typed right after the AI's last line,
    so the taking back and the typing touch), the AI's block is taken out where it stands,
    when it stands in `landed` exactly once, whole: else None (the owner changed it, or typed
    the same lines; left as it is)."""
    if not adds_lines_only(saved, on):
        return None
    a, b = saved.splitlines(keepends=True), on.splitlines(keepends=True)
    head = 0
    while head < len(a) and a[head] == b[head]:
        head += 1
    block = b[head : head + len(b) - len(a)]
    lines = landed.splitlines(keepends=True)
    at = [i for i in range(len(lines) - len(block) + 1) if lines[i : i + len(block)] == block]
    if len(at) != 1:
        return None
    return b"".join(lines[: at[0]] + lines[at[0] + len(block) :])


def _both_insert_at_one_place(base: bytes, first: bytes, second: bytes) -> bytes | None:
    """Without a git run, the usual case: `second` adds lines at one place of `base` and
    `first` adds lines at that same place (the owner typing at the end of a note whose last
    section the AI appends to): `first`'s lines, then `second`'s. None for anything else."""
    b = base.splitlines(keepends=True)
    s2 = second.splitlines(keepends=True)
    f = first.splitlines(keepends=True)
    if b and not b[-1].endswith(b"\n"):
        return None
    h = 0
    while h < len(b) and h < len(s2) and b[h] == s2[h]:
        h += 1
    tail = len(b) - h
    if len(s2) <= len(b) or s2[len(s2) - tail :] != b[h:] or len(f) < len(b):
        return None
    if f[:h] != b[:h] or (tail and f[len(f) - tail :] != b[h:]):
        return None
    if f and not f[-1].endswith(b"\n") and tail == 0:
        return None  # the owner's last line without its newline: git decides
    inserted = s2[h : len(s2) - tail]
    return b"".join(f[: len(f) - tail] + inserted + b[h:])
