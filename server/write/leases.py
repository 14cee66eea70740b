"""A note read as one consistent state, and held while it is replaced: its bytes with its stamp
(inode, size, mtime, ctime) read as one (`read_stable`, `_still`), a save in progress waited for,
and the read lease the write path holds from its check until after its rename (`_lease`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from pathlib import Path

from server.core.errors import VaultwatchError
from server.write.swap import Replaced, replace_if_same


class WriteRace(VaultwatchError):
    """A file changed between planning a write and replacing it (the owner typing into it).
    Its message is the note's path: the write path re-plans on it, nobody reads it."""

    code = "write_race"

    def __init__(
        self,
        rel: str,
        expected: bytes | None,
        actual: bytes | None,
        restore: bytes | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(rel)
        self.rel, self.expected, self.actual, self.restore = rel, expected, actual, restore
        self.reason = reason


# (st_ino, st_size, st_mtime_ns, st_ctime_ns): what a file is, beyond its bytes
Stamp = tuple[int, int, int, int]

# A note found empty this recently is taken for an editor's save in progress (truncate, then
# write) and waited for, at most this long, rather than planned on or snapshotted.
SETTLE_S = 1.0
_POLL_S = 0.005


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _just_emptied(st: os.stat_result) -> bool:
    return st.st_size == 0 and time.time_ns() - st.st_mtime_ns < SETTLE_S * 1e9


def read_stable(path: Path, rel: str) -> tuple[bytes | None, Stamp | None]:
    """The file's bytes and stamp as one consistent state: (None, None) when there is no file.

    The read counts only if the stamp is the same before and after it, the path still names
    that inode, and the file is not a note emptied a moment ago (a save in flight). Otherwise
    it waits, up to SETTLE_S, then raises WriteRace: never plan on a file being written.
    """
    deadline = time.monotonic() + SETTLE_S + 0.1  # past any "just emptied" window
    while True:
        try:
            fd = _open_if_exists(path)
        except BlockingIOError:  # another program's file lease: busy, not ours to wait out
            if time.monotonic() >= deadline:
                raise WriteRace(rel, None, None, reason=LEASED) from None
            time.sleep(_POLL_S)
            continue
        if fd is None:
            return None, None
        try:
            before = os.fstat(fd)
            data = _read_fd(fd)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        st = stamp_of(after)
        try:
            named = stamp_of(os.stat(path))
        except FileNotFoundError:
            named = None
        if (
            stamp_of(before) == st == named
            and len(data) == after.st_size
            and not _just_emptied(after)
        ):
            return data, st
        if time.monotonic() >= deadline:
            raise WriteRace(rel, None, data, reason="is being saved by another program right now")
        time.sleep(_POLL_S)


def _settled_fd(fd: int, old: bytes | None) -> bytes:
    """What an open (possibly replaced) file holds once a save into it has finished: its bytes
    when two reads a moment apart agree and it is not a just-emptied copy of a non-empty note
    (a truncate whose write is still to come), waiting at most SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    data, st = _read_fd(fd), stamp_of(os.fstat(fd))
    while time.monotonic() < deadline:
        time.sleep(_POLL_S)
        again, st2 = _read_fd(fd), stamp_of(os.fstat(fd))
        if again == data and st2[1:3] == st[1:3] and (again or not old):
            return again
        data, st = again, st2
    return data


def _still(path: Path, rel: str, data: bytes | None, st: Stamp | None) -> None:
    """Raise WriteRace unless the file is still what was read: its stamp, or (the same-bytes
    rule, `unchanged`) bytes that are still the plan's; or still absent."""
    try:
        now: Stamp | None = stamp_of(os.stat(path))
    except FileNotFoundError:
        now = None
    if (now is None) != (data is None):
        raise WriteRace(rel, data, None, reason="changed while the write was being prepared")
    if st is None or now == st:
        return
    try:
        fd = _open_if_exists(path)
    except BlockingIOError:
        raise WriteRace(rel, data, None, reason=LEASED) from None
    if fd is not None:
        try:
            current, seen = _read_whole(fd)
        finally:
            os.close(fd)
        if unchanged(current, seen, data, st, leased=False):
            return
    raise WriteRace(rel, data, None, reason="changed while the write was being prepared")


def _read_whole(fd: int) -> tuple[bytes | None, Stamp]:
    """The open file's bytes and its stamp; None for the bytes when a save changed it while it
    was read (they are no state the file had)."""
    before = stamp_of(os.fstat(fd))
    data = _read_fd(fd)
    after = stamp_of(os.fstat(fd))
    return (data if before == after and len(data) == after[1] else None), after


def unchanged(
    current: bytes | None,
    seen: Stamp | None,
    old: bytes | None,
    planned: Stamp | None,
    *,
    leased: bool,
) -> bool:
    """The write rule, one home for every writer (the AI's writes, the owner's reverts, undos,
    moves, creates and deletes, the snapshot of the owner's pending edits): whether a file that
    holds `current` (read as one state) and has the stamp `seen` is still the `old` a write was
    planned on (with the stamp `planned`; None: not known), so that it may be replaced.

    The bytes must be the plan's. Under a read lease (`_lease`) that is enough: no program has
    the file open for writing, so no save is half-way. Without one (NFS, SMB, FUSE, a note of
    another user, a process that does not ignore SIGIO), a new stamp is a save since the plan:
    it still passes when the bytes are the plan's and the plan is not empty (the same-bytes
    rule). An editor re-saving identical text 50 times a second changed the stamp before
    every AI write under load and starved them all (issue 27). Why the bytes are enough: they
    are compared here, at the rename, read as one state (a save during the read fails it). A
    truncate-then-write save caught between its two steps reads empty, which never equals a
    non-empty plan (an empty plan keeps the stamp rule for that reason); one caught after its
    write holds the text it saved, so only a save whose text equals the plan passes, and
    replacing that text loses nothing. What it cannot tell: a save that writes in several
    steps whose first step ends exactly at the plan's bytes (the plan's text, then more in a
    second write()): the more lands in the old copy after our rename, where the check after
    the rename sees it unless it comes after that check (SECURITY.md, windows without leases).
    """
    if current != old:
        return False
    if leased or planned is None or seen == planned:
        return True
    return bool(old)


class Replacing:
    """Notes replaced (a temp file renamed over) or removed under the write rule, and checked
    again after: the AI's writes (Store.apply), the owner's reverts and undos through it, and
    the owner's moves, creates and deletes (app/services/action_tree.py). Each note is opened,
    leased when leases can be had (`_lease`), checked (`unchanged`), replaced; `confirm` then
    looks at each old copy for a save that came in meanwhile. Every descriptor is closed and
    every lease given back by `close`, on every way out (a failed rename kept its lease and an
    editor opening the note waited 45 s: adversarial pass 3, N11)."""

    def __init__(self) -> None:
        self.opened: list[int] = []
        self.leased: set[int] = set()
        # (rel, the bytes planned on, fd of the old copy, its stamp when checked)
        self.held: list[tuple[str, bytes | None, int | None, Stamp | None]] = []
        # (rel, what its old copy held when `late_saves` looked, fd of the old copy)
        self.looked: list[tuple[str, bytes, int]] = []

    def replace(
        self, target: Path, rel: str, old: bytes | None, planned: Stamp | None, tmp: str | None
    ) -> None:
        """Rename `tmp` over `target` (None: remove it) if it still is `old` (see `unchanged`);
        WriteRace, nothing replaced, otherwise."""
        try:
            fd = _open_if_exists(target)
        except BlockingIOError:  # leased by another program since the plan
            raise WriteRace(rel, old, None, reason=LEASED) from None
        current: bytes | None = None
        seen: Stamp | None = None
        if fd is not None:
            self.opened.append(fd)
            try:
                if _lease(fd, rel):
                    self.leased.add(fd)
            except WriteRace as race:
                race.expected = old
                raise
            # Under the lease no program can open the file for writing without waiting for
            # us: what is read here is what the rename replaces.
            current, seen = _read_whole(fd)
        changed = not unchanged(current, seen, old, planned, leased=fd in self.leased)
        if not changed and fd is not None and fd in self.leased and _lease_broken(fd):
            changed = True  # a save is waiting to write into it: let it, plan again
        if changed:
            if fd is not None and fd in self.leased:  # not replaced: nothing to hold it for
                _unlease(fd)
                self.leased.discard(fd)
            raise WriteRace(rel, old, current)
        if tmp is None:
            os.unlink(target)
        else:
            try:  # only over the file checked: an editor's save renamed over it since goes back
                replace_if_same(tmp, target, seen[0] if seen is not None else None)
            except Replaced as gone:
                if fd is not None and fd in self.leased:
                    _unlease(fd)
                    self.leased.discard(fd)
                raise WriteRace(rel, old, gone.saved) from None
        self.held.append((rel, old, fd, seen))

    def confirm(self) -> None:
        """WriteRace for the first save that came into an old copy meanwhile (`late_saves`),
        with what it saved (`restore`: put it back, plan again)."""
        for rel, old, late in self.late_saves():
            raise WriteRace(rel, old, late, restore=late)

    def late_saves(self) -> list[tuple[str, bytes | None, bytes]]:
        """(rel, the bytes planned on, what the old copy holds now) for each note replaced whose
        old copy someone saved into meanwhile: who opened the note just before we replaced it
        writes into the old copy (or truncates it, their write still to come), and their words
        would vanish with it. With a lease they were held in open() and it shows: let them go
        and wait until they have closed the file. Without one, a change to the old copy is all
        there is to see. (Our rename changed the old copy's ctime, not its size or mtime.)
        A save of the very bytes planned on is none: replacing them loses nothing (an editor
        re-saving the note it read, 500 times a second, made every write undo its rename, and
        a note so briefly shown was read and saved back by that editor: the AI's line then went
        into the owner's snapshot, issue 27)."""
        held, self.held = self.held, []
        out: list[tuple[str, bytes | None, bytes]] = []
        for rel, old, fd, seen in held:
            if fd is None:
                continue
            late: bytes | None = None
            if fd in self.leased:
                broken = _lease_broken(fd)
                _unlease(fd)
                self.leased.discard(fd)
                if broken:
                    late = _read_fd(fd) if _writers_gone(fd) else _settled_fd(fd, old)
            if late is None:
                st = os.fstat(fd)
                moved = seen is not None and (st.st_size, st.st_mtime_ns) != seen[1:3]
                if moved or _read_fd(fd) != old:
                    late = _settled_fd(fd, old)
            if late is not None and late != old:
                out.append((rel, old, late))
            looked = late if late is not None else old
            if looked is not None:
                self.looked.append((rel, looked, fd))
        return out

    def saved_since(self) -> list[tuple[str, bytes, bytes]]:
        """(rel, what the old copy held when `late_saves` looked, what it holds now) for each
        old copy saved into since: a program that looked the note up before our rename and
        reached its open() or its write() only after our look (descheduled in between; with a
        lease, held until we let go and then slower than our look). Looked at once more, as
        late as the write can (its commit made): what comes later still is lost with the old
        copy (SECURITY.md)."""
        looked, self.looked = self.looked, []
        out: list[tuple[str, bytes, bytes]] = []
        for rel, seen, fd in looked:
            if _read_fd(fd) != seen:
                late = _settled_fd(fd, seen)
                if late != seen:
                    out.append((rel, seen, late))
        return out

    def release(self) -> None:
        """Give back every lease (the write failed: its files are about to be put back)."""
        for fd in self.leased:
            _unlease(fd)
        self.leased.clear()

    def close(self) -> None:
        self.release()
        for fd in self.opened:
            os.close(fd)
        self.opened.clear()
        self.held.clear()
        self.looked.clear()


def ignore_lease_breaks() -> None:
    """Let the write path take file leases (see _lease): the kernel tells the lease holder
    that someone opened the file with SIGIO, whose default action ends the process. Call it
    from the main thread of a process that writes notes (the server, the dashboard)."""
    signal.signal(signal.SIGIO, signal.SIG_IGN)


# How long a write waits for another program to close a note it holds open for writing (an
# editor's save in progress) before planning again.
LEASE_WAIT_S = 2.0


def _lease(fd: int, rel: str) -> bool:
    """A read lease on the note before it is checked and replaced (`fd` open read-only).

    The kernel grants it only while no process has the file open for writing, and while it is
    held any open for writing (an editor appending a line, a truncate-then-write save) waits
    inside open() until we let go, before it can write a byte. So, held from the check until
    after the rename: the bytes checked are the bytes replaced, and an editor that looked the
    path up before the rename is held, then seen (`_lease_broken`), its save waited for
    (`_writers_gone`) and put back. A read lease, not a write lease: readers (Obsidian's
    indexer, another server's reads) neither block it nor are blocked by it.

    A file open for writing elsewhere is a save in flight: waited for up to LEASE_WAIT_S,
    then WriteRace (the write is planned again on what it saved). False when this process
    or filesystem cannot take leases (SIGIO not ignored, NFS, a file of another owner): the
    check then runs without one; SECURITY.md names the windows that leaves."""
    if signal.getsignal(signal.SIGIO) != signal.SIG_IGN:
        return False
    deadline = time.monotonic() + LEASE_WAIT_S
    while True:
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
            return True
        except BlockingIOError:  # open for writing elsewhere this moment: a save in flight
            if time.monotonic() >= deadline:
                raise WriteRace(
                    rel, None, None, reason="is held open for writing by another program"
                ) from None
            time.sleep(_POLL_S)
        except OSError:
            return False


def _lease_broken(fd: int) -> bool:
    """Whether a program opened the file for writing while our lease was held (it waits in
    open() until the lease goes). The lease stays held."""
    return bool(fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK)


def _unlease(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)


def _writers_gone(fd: int, wait_s: float = LEASE_WAIT_S) -> bool:
    """After our lease was broken and let go: wait until no program holds the (old) file open
    for writing any more, i.e. the save that was held has been written and closed. A read
    lease is granted exactly then (and given back at once). False if still open at the end."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
            continue
        except OSError:
            return False
        _unlease(fd)
        return True


LEASED = "is held by another program right now (a file lease); try again shortly"


def _open_if_exists(path: Path) -> int | None:
    """The file opened for reading, or None when there is none. O_NONBLOCK: a file another
    program holds a lease on raises BlockingIOError at once, instead of stalling every writer
    behind the vault lock for lease-break-time (45 s; adversarial pass 3, N10)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    off = 0
    while True:
        chunk = os.pread(fd, 1 << 20, off)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        off += len(chunk)
