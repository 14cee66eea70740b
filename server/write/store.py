"""The write path: one writer at a time, the human's pending edits committed first, files written
atomically, one git commit as the AI, and a recorded intent so a crash mid-write is rolled back.

Order of a write (all under the vault's flock):
  1. wait (within the call's budget) while git is busy or mid-merge/rebase; refuse if it stays
     so, or HEAD is detached                                          (nothing touched yet)
  2. plan the snapshot of the owner's uncommitted edits to these paths (their exact bytes)
  3. record this write's own intent file: each path with its previous and new blob ids
  4. write each file to a temp file (under .git/vaultwatch/tmp), fsync; build both commits
     (the owner's snapshot, then the AI's) and git's next index, all without moving anything
  5. take git's own .git/index.lock; look again for an operation in progress and for a moved
     branch (either: let the lock go at once, wait, plan again)
  6. rename each temp file over its note; move the branch to the AI's commit (compare-and-swap,
     snapshot and AI commit in one move); swap in git's index; let the lock go
  7. remove the intent file
Steps 5-6 are one step for every other git process on the vault: each git command that stages
or commits (`git add -A` in the Obsidian Git plugin's backup) must take .git/index.lock first,
and fails (or waits) while we hold it. So no AI line is ever staged by someone else's `git add
-A` between our rename and our commit. And the lock is held for that moment only (the renames,
one ref update, one rename of the index): a rebase or merge takes the same lock at each of its
steps and stops where it meets it, some half-way; we never take it while one is in progress
(looked for before and after taking it), and a rebase that begins while we hold it is held at
its first step, where it fails before it has changed anything (`_hold_for_a_rebase_begun`).
What remains is in SECURITY.md. (The alternative, commit first and rename after, would leave
HEAD ahead of the file on a crash, and commit a change a late owner save then forces us to
take back.)
A failure in 3-6 restores the previous contents before returning. A crash leaves the intent
file; the next writer (any process, under the lock: the AI's writes and the owner's actions
all start with `Store.begin`) or the next start puts the files back unless the human changed
them since. The owner's moves, creates and deletes and the snapshot record an intent too.
The steps are fault hooks (`server/core/faults.py`): the crash matrix kills a writer at each.

A file is "unchanged" only when its bytes AND its stamp (inode, size, mtime, ctime) are what
the plan read: an editor that saves by truncate-then-write passes through an empty file, and
re-saving identical text changes no byte, so bytes alone cannot tell a save in progress. At
the rename, under a read lease (granted only while no program has the file open for writing:
no save is in progress), the bytes are enough.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import signal
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from server.core.errors import VaultwatchError
from server.core.faults import crash_point
from server.core.gitrepo import (
    ACTION,
    CLIENT,
    INDEX_LOCK_WAIT_S,
    TOOL,
    GitError,
    IndexBusy,
    IndexMoved,
    OwnerIndex,
    RefUpdate,
    StateDamaged,
    commit_message,
    filtered_paths,
    git,
    git_dir,
    human_identity,
    identity_env,
    index_busy_message,
    load_state_json,
    make_state_dir,
    operation_in_progress,
    owner_index,
    prepare_index,
    read_state,
    rebase_orig_head,
    state_dir,
    state_file,
    trailer_value,
    wait_for_index,
    write_lock,
    write_state,
)
from server.notes.config import Config
from server.notes.note import BOM
from server.write.journal import Commit, Journal, Recovered

log = logging.getLogger("vaultwatch.store")

NO_SIGN = ("-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null")


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


def _hash_files(root: Path, paths: list[str]) -> list[str]:
    """Store these files (relative to root) in git exactly as their bytes are: no autocrlf,
    eol or clean filter of the user's applies, so the blob is always the bytes we compare.

    Every commit of ours holds the file's exact bytes (the owner's snapshot, the AI's write,
    the dashboard's actions): what reads history back compares blobs with the working file
    byte for byte (a revert merges them with `git merge-file`, recovery matches blob ids), and
    a clean filter the user set could change the owner's text. Which files have changes at all
    is git's view, though: see _hash_as_git_stores."""
    out = git(
        root, "hash-object", "-w", "--no-filters", "--stdin-paths", input="\n".join(paths).encode()
    )
    return out.stdout.decode().split()


def _hash_as_git_stores(root: Path, paths: list[str], filters: bool = False) -> list[str]:
    """The blob `git add` would make of each file (relative to root): core.autocrlf, the
    text/eol attributes applied, each by its own path, and its clean filter only for the
    owner's own action (`filters`; the server never runs a program the vault's config names).
    With none of them set it is the blob of the bytes, stored (-w) so that it can be committed
    as it is. core.safecrlf is off here: a note with mixed line endings is compared, never
    refused."""
    out = git(
        root,
        "-c",
        "core.safecrlf=false",
        "hash-object",
        "-w",
        "--stdin-paths",
        input="\n".join(paths).encode(),
        filters=filters,
    )
    return out.stdout.decode().split()


def _still(path: Path, rel: str, data: bytes | None, st: Stamp | None) -> None:
    """Raise WriteRace unless the file is still what was read (its stamp; or still absent)."""
    try:
        now: Stamp | None = stamp_of(os.stat(path))
    except FileNotFoundError:
        now = None
    if (now is None) != (data is None) or (st is not None and now != st):
        raise WriteRace(rel, data, None, reason="changed while the write was being prepared")


def _read_text(path: Path) -> str | None:
    """A small state file's text; None when missing, damaged or a link (never read through)."""
    try:
        return read_state(path, 4096).decode("ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError, StateDamaged):
        return None


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


class StoreError(VaultwatchError):
    """The write path refused or failed (git busy, mid-merge, the write undone). `message` is
    written for the model; `for_owner` says the same to the owner, whose dashboard and shell
    commands go through this path too (the model is told to "tell the owner")."""

    def __init__(self, code: str, message: str, hint: str = "", owner: str = "") -> None:
        super().__init__(code, message, hint)
        self.for_owner = owner or message


class GitBusy(StoreError):
    """Another git command holds the index, or git is in the middle of a rebase, merge,
    cherry-pick or revert (the Obsidian Git plugin's sync, the owner at a terminal): nothing
    was written. The AI's write path waits for it to end (within the call's budget) and
    plans again; the dashboard's actions report it."""


# How long an AI write waits for another git's operation (a rebase, a merge, a held index) to
# end before it refuses: an Obsidian Git sync rebases in well under a second, and MCP clients
# give a call a minute or more.
GIT_WAIT_S = 20.0
_GIT_POLL_S = 0.02


def _busy_in_progress(command: str, what: str, waited: float) -> GitBusy:
    return GitBusy(
        "git_in_progress",
        f"the owner's git is in the middle of {what} (another git tool on the vault, e.g. the "
        f"Obsidian Git plugin's sync); waited {waited:.0f} s for it to end; nothing was written. "
        "Call again in a minute; if it keeps saying this, tell the owner to finish or abort "
        f"the {command}.",
        owner=f"git is in the middle of {what}; nothing was changed. Finish it, or abort it "
        f"(A in the dashboard, or git {command} --abort), then try again.",
    )


def _busy_index(waited: float) -> GitBusy:
    return GitBusy(
        "git_busy",
        index_busy_message(waited),
        owner="git's index is locked (.git/index.lock): another git command is running or one "
        "crashed; nothing was changed. Try again in a moment; if no git command is running, "
        "delete .git/index.lock.",
    )


@dataclass
class FileWrite:
    rel: str  # NFC path (the model's)
    disk: str  # path on disk, relative to the root
    old: bytes | None  # None: a new file
    new: bytes | None  # None: the file is deleted (owner actions only, e.g. undoing a create)
    stamp: Stamp | None = None  # of the file the plan read (None: no file, or not known)


def _keep_bom(w: FileWrite) -> FileWrite:
    """The write with the BOM the file has now put back at the start of its new bytes."""
    if w.old is not None and w.new is not None and w.old.startswith(BOM) and w.new[:3] != BOM:
        w.new = BOM + w.new
    return w


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes, tmp_dir: Path | None = None) -> None:
    """Temp file in `tmp_dir` (on the same filesystem; default the same folder), fsync, rename
    over: a reader sees old or new, never half."""
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
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


class Store:
    def __init__(self, root: Path, journal: Journal) -> None:
        self.root = root
        self.journal = journal
        # one intent file per write (pid + random): a writer never overwrites a dead one's
        self.intent_path = state_dir(root) / f"intent.{os.getpid()}.{secrets.token_hex(4)}.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with write_lock(self.root):
            yield

    def begin(self, deadline: float | None = None) -> list[str]:
        """What every writer does first, under the lock: the AI's writes and every owner action
        (revert, undo, move, create, delete) alike. git must allow a commit (check_repo, which
        waits until `deadline` for another git's operation to end), then whatever a dead writer
        left half-done is put right (recover_locked): without it the owner's move or revert
        snapshotted a killed AI write's files as the owner's own edit.
        Returns the paths put back."""
        self.check_repo(deadline)
        return self.recover_locked()

    def record_intent(
        self,
        tool: str,
        files: list[tuple[str, bytes | None, bytes | None]],
        between: dict[str, bytes] | None = None,
    ) -> None:
        """An owner action's intent, written before it changes the working tree: each path with
        the bytes it has now (None: no file) and will have (None: removed). The same record a
        write keeps, so a crash half-way through a move of a thousand notes is rolled back by
        the next start or the next writer of either kind. Every previous content is stored in
        git first (one git run), so recovery can always put it back; a file whose bytes are
        not what the caller read raises WriteRace. `between`: the bytes a path holds half-way
        (a moved note before its links are rewritten, a new file still empty), which recovery
        takes for this action's too. Caller holds the lock."""
        olds = [(p, data) for p, data, _ in files if data is not None]
        stored = _hash_files(self.root, [p for p, _ in olds]) if olds else []
        for (p, data), blob in zip(olds, stored, strict=True):
            if blob != blob_id(data):
                raise WriteRace(p, data, None, reason="changed since it was read")
        self._write_intent(
            tool,
            [
                {
                    "path": p,
                    "old": blob_id(old) if old is not None else None,
                    "new": blob_id(new) if new is not None else None,
                    "tmp": None,
                    **({"between": blob_id(between[p])} if between and p in between else {}),
                }
                for p, old, new in files
            ],
        )
        crash_point("intent")

    def _write_intent(
        self,
        tool: str,
        files: list[dict[str, object]],
        commit: list[list[str | None]] | None = None,
    ) -> None:
        intent: dict[str, object] = {"pid": os.getpid(), "tool": tool, "files": files}
        if commit is not None:
            intent["commit"] = commit
        write_state(self.intent_path, json.dumps(intent).encode())

    def intent_commits(self, entries: list[tuple[str, str | None]]) -> None:
        """Add to the recorded intent the exact blobs its commit will hold (a file under a git
        filter, a symlink: not the blob of the bytes), so that recovery after a crash between
        the commit and `drop_intent` knows the commit landed and keeps it."""
        intent = json.loads(self.intent_path.read_text(encoding="utf-8"))
        intent["commit"] = [[p, b] for p, b in entries]
        write_state(self.intent_path, json.dumps(intent).encode())

    def drop_intent(self) -> None:
        """The recorded intent is done with (committed, or undone by its own writer)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.intent_path)

    # -- checks ---------------------------------------------------------------------------------

    def check_repo(self, deadline: float | None = None) -> None:
        """Refuse (StoreError) unless git is in a state a commit may land in. With `deadline`
        (time.monotonic()), a held index or an operation in progress (GitBusy) is waited for
        until then; without, only the index, for INDEX_LOCK_WAIT_S."""
        start = time.monotonic()
        while True:
            try:
                self._check_repo_once(wait_index=deadline is None)
                return
            except GitBusy as exc:
                if deadline is None or time.monotonic() >= deadline:
                    if deadline is None:
                        raise
                    raise self._busy_now(time.monotonic() - start) or exc from None
                time.sleep(_GIT_POLL_S)

    def _busy_now(self, waited: float) -> GitBusy | None:
        busy = operation_in_progress(self.root)
        if busy is not None:
            return _busy_in_progress(*busy, waited)
        if os.path.lexists(git_dir(self.root) / "index.lock"):
            return _busy_index(round(waited, 1))
        return None

    def _check_repo_once(self, wait_index: bool = False) -> None:
        g = git_dir(self.root)  # a worktree's own HEAD, not the main checkout's
        # another git command's lock usually goes in ms
        if not wait_for_index(self.root, INDEX_LOCK_WAIT_S if wait_index else 0):
            raise _busy_index(INDEX_LOCK_WAIT_S if wait_index else 0)
        busy = operation_in_progress(self.root)
        if busy is not None and busy[0] == "merge" and _clear_a_merge_stopped_by_us(self.root):
            busy = operation_in_progress(self.root)
        if busy is not None:
            # a rebase also detaches HEAD: it is the rebase that is reported, and waited for
            raise _busy_in_progress(*busy, 0)
        head = (g / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if not head.startswith("ref: "):
            raise StoreError(
                "detached_head",
                "the vault's git HEAD is detached (not on a branch); nothing was written. Tell "
                "the owner to check out a branch.",
                owner="git's HEAD is detached (not on a branch); nothing was changed. Check out "
                "a branch (git switch <branch>), then try again.",
            )

    # -- the write ------------------------------------------------------------------------------

    def commit(
        self,
        writes: list[FileWrite],
        *,
        subject: str,
        tool: str,
        client: str,
        config: Config,
        trailers: list[tuple[str, str]] | None = None,
    ) -> str | None:
        """Write and commit the AI's writes (caller holds the lock and has run check_repo).
        Returns the sha; None when, its BOMs kept, no file changes (nothing is committed).

        The commit is built from the exact bytes written (through a private index), never from
        whatever the working tree holds a moment later, so an owner typing into the same file
        in Obsidian can neither leak into the AI's commit nor be overwritten unseen: a file
        that is not what the plan read when it is replaced stops the write (WriteRace).

        A file that starts with a BOM keeps it (`writes` is updated in place, so the caller
        indexes the bytes written and lists only the files that changed): the AI's new text is
        planned from text read without it (notes.note.decode), and a replace_doc's content
        never has it, yet it is the owner's choice of encoding.
        """
        writes[:] = [w for w in map(_keep_bom, writes) if w.new != w.old]
        if not writes:
            return None
        author = config.ai_author
        message = commit_message(
            subject,
            [(TOOL, trailer_value(tool)), (CLIENT, trailer_value(client)), *(trailers or [])],
        )
        return self.apply(writes, message=message, author=(author.name, author.email), tool=tool)

    def apply(
        self, writes: list[FileWrite], *, message: str, author: tuple[str, str], tool: str
    ) -> str:
        """The write path with any author and message (the AI's writes, the owner's reverts):
        the owner's pending edits to these paths snapshotted, intent, temp files, rename over
        (or unlink), one commit of exactly these paths (after the snapshot's, in the same move
        of the branch). Caller holds the lock and has run check_repo.

        Everything that can be made beforehand is: the commits, git's next index, the temp
        files. git's own index lock is held only for the last step, the renames, the branch
        moved and the index swapped (see the module's doc): another git's rebase or merge needs
        that lock at each of its steps and stops half-way when it is taken. GitBusy when another
        git holds the index, is in the middle of an operation or moved the branch since the
        plan: nothing is written."""
        paths = [w.disk for w in writes]
        temps: list[str | None] = []  # None: the file is deleted, no temp file
        renamed: list[FileWrite] = []
        held: list[tuple[FileWrite, int | None, Stamp | None]] = []  # fd, stamp when checked
        leased: set[int] = set()  # fds we hold a read lease on (see _lease)
        # every fd opened below, closed on every way out: one left open by a failed rename
        # kept its lease, and an editor opening the note waited 45 s (adversarial pass 3, N11)
        opened: list[int] = []
        update: RefUpdate | None = None
        try:
            # what git changes when it moves the branch, as it is before the branch is read
            named = (git_dir(self.root) / "HEAD").read_text(errors="replace").strip()[5:]
            refs = _ref_stamp(self.root, named)
            branch, head = self._branch_head()
            update = _ref_update(self.root, message)  # git starts while the rest is made
            head_blobs, snapped = self._snapshot_entries(
                paths, expect={w.disk: (w.rel, w.old, w.stamp) for w in writes}
            )
            gone = {p for p, b in snapped if b is None}
            in_head = {**head_blobs, **{p: b for p, b in snapped if b is not None}}
            self._store_old_blobs(writes, {p: b for p, b in in_head.items() if p not in gone})
            # The intent (with the temp names) is on disk before any temp file exists, so a
            # crash at any point leaves nothing that recovery does not know about.
            temps = [
                _temp_name(self.root, self.root / w.disk) if w.new is not None else None
                for w in writes
            ]
            blobs = [blob_id(w.new) if w.new is not None else None for w in writes]
            intent = {
                "pid": os.getpid(),
                "tool": tool,
                "files": [
                    {
                        "path": w.disk,
                        "old": blob_id(w.old) if w.old is not None else None,
                        "new": b,
                        "tmp": os.path.relpath(t, self.root) if t else None,
                    }
                    for w, b, t in zip(writes, blobs, temps, strict=True)
                ],
            }
            write_state(self.intent_path, json.dumps(intent).encode())
            crash_point("intent")
            # A temp file beside its note (our state folder on another file system) would be
            # in the working tree for `git add -A` to take: made under git's index lock only.
            made = [(w, t) for w, t in zip(writes, temps, strict=True) if t is not None]
            late = [(w, t) for w, t in made if Path(t).parent == (self.root / w.disk).parent]
            self._write_temps([(w, t) for w, t in made if (w, t) not in late])
            for w, _t in late:  # their blobs from memory now: the commits below name them
                assert w.new is not None
                got = git(self.root, "hash-object", "-w", "--no-filters", "--stdin", input=w.new)
                if got.stdout.decode().strip() != blob_id(w.new):
                    raise GitError("git stored different bytes than were written")
            crash_point("temps")
            entries = [(w.disk, b) for w, b in zip(writes, blobs, strict=True)]
            steps = [(entries, message, author)]
            if snapped:
                who = human_identity(self.root)
                steps.insert(0, (snapped, _snapshot_message([p for p, _ in snapped]), who))
            shas = commit_objects(self.root, head, steps)
            info = _index_info(self.root, entries)

            def no_operation() -> None:
                # A rebase that has begun since the plan needs git's lock between its picks:
                # looked for just before the lock is taken, and again the moment it is ours (it
                # is let go at once), then waited for, never met.
                op = operation_in_progress(self.root)
                if op is not None:
                    raise _busy_in_progress(*op, 0)

            # From here to the end of the block git's index lock is ours: as short as it can be.
            # git's index written by another git since it was prepared (a `git status`): made
            # again outside the lock, twice at most, then under it.
            for attempt in range(3):
                prepared = prepare_index(self.root, info)
                no_operation()
                _HELD_AT[self.root] = (time.time_ns(), 0)
                try:
                    lock = owner_index(
                        self.root, prepared=prepared, first=no_operation, stale_ok=attempt == 2
                    )
                    idx = lock.__enter__()
                except IndexMoved:
                    continue
                break
            with contextlib.ExitStack() as holding:
                holding.push(lock)
                if not self._on_branch():
                    raise _busy_index(0)  # not a rebase, yet detached: check_repo says why
                if branch != named or _ref_stamp(self.root, named) != refs:
                    raise BranchMoved(f"{branch} moved while the write was being prepared")
                self._write_temps(late)
                for w, tmp in zip(writes, temps, strict=True):
                    target = self.root / w.disk
                    try:
                        fd = _open_if_exists(target)
                    except BlockingIOError:  # leased by another program since the plan
                        raise WriteRace(w.rel, w.old, None, reason=LEASED) from None
                    if fd is not None:
                        opened.append(fd)
                        try:
                            if _lease(fd, w.rel):
                                leased.add(fd)
                        except WriteRace as race:
                            race.expected = w.old
                            raise
                    # Under the lease no program can open the file for writing without waiting
                    # for us: what is read here is what the rename replaces. No program has it
                    # open for writing either (the kernel grants the lease only then), so no
                    # save is half-way: the bytes the plan read are enough, a save since of the
                    # same text (a new stamp) changes nothing. Without a lease, the stamp too.
                    current = _read_fd(fd) if fd is not None else None
                    seen = stamp_of(os.fstat(fd)) if fd is not None else None
                    changed = current != w.old or (
                        fd not in leased and w.stamp is not None and seen != w.stamp
                    )
                    if not changed and fd is not None and fd in leased and _lease_broken(fd):
                        changed = True  # a save is waiting to write into it: let it, plan again
                    if changed:
                        raise WriteRace(w.rel, w.old, current)
                    if tmp is None:
                        os.unlink(target)
                    else:
                        os.replace(tmp, target)
                    renamed.append(w)
                    held.append((w, fd, seen))
                    crash_point("renamed")
                # Someone who opened a file just before we replaced it writes into the old copy
                # (or truncates it, their write still to come): their words would vanish with
                # it. With a lease they were held in open() and it shows: let them go, wait
                # until they have closed the file, put what they saved back and stop. Without
                # one, a change to the old copy is all there is to see. (Our rename changed the
                # old copy's ctime, not its size or mtime.)
                for w, fd, seen in held:
                    if fd is None:
                        continue
                    if fd in leased:
                        broken = _lease_broken(fd)
                        _unlease(fd)
                        leased.discard(fd)
                        if broken:
                            late_bytes = (
                                _read_fd(fd) if _writers_gone(fd) else _settled_fd(fd, w.old)
                            )
                            raise WriteRace(w.rel, w.old, late_bytes, restore=late_bytes)
                    st = os.fstat(fd)
                    moved = seen is not None and (st.st_size, st.st_mtime_ns) != seen[1:3]
                    if moved or _read_fd(fd) != w.old:
                        late_bytes = _settled_fd(fd, w.old)
                        raise WriteRace(w.rel, w.old, late_bytes, restore=late_bytes)
                crash_point("index_locked")  # renamed, the commit built, the index lock ours
                _move_branch(self.root, branch, head, shas[-1], idx, update)
            sha = shas[-1]
            _HELD_AT[self.root] = (_HELD_AT[self.root][0], time.time_ns())
            _clear_a_merge_stopped_by_us(self.root)
            # The renames made durable once git's lock is let go (a directory's fsync can take
            # longer than all of the above): the journal of the file system keeps them in
            # order with the branch's move meanwhile, and the write reports only after this.
            for folder in sorted({(self.root / w.disk).parent for w in renamed}):
                _fsync_dir(folder)
        except (OSError, GitError, WriteRace, StoreError) as exc:
            for fd in leased:
                _unlease(fd)
            restore = exc.restore if isinstance(exc, WriteRace) else None
            self._undo(
                renamed, restore_for=(exc.rel if isinstance(exc, WriteRace) else None, restore)
            )
            for tmp in temps:
                if tmp is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.intent_path)
            if isinstance(exc, (WriteRace, StoreError)):
                raise
            if isinstance(exc, BranchMoved):  # waited for and made again by the caller
                raise GitBusy(
                    "git_busy",
                    "another git command committed on the branch at the same moment (the "
                    f"owner's git tool, e.g. Obsidian Git's sync); nothing was written: {exc}. "
                    "Call again in a moment.",
                ) from exc
            if isinstance(exc, IndexBusy):
                raise _busy_index(INDEX_LOCK_WAIT_S) from exc
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise StoreError("write_failed", f"the write failed and was undone: {detail}") from exc
        finally:
            if _HELD_AT.get(self.root, (0, 1))[1] == 0:  # let go on a way out
                _HELD_AT[self.root] = (_HELD_AT[self.root][0], time.time_ns())
            if update is not None:
                update.cancel()  # moved already, or not to move: git ends either way
            for fd in leased:
                _unlease(fd)
            for fd in opened:
                os.close(fd)
        _mark_private_index(self.root, sha)
        crash_point("commit_done")
        with contextlib.suppress(OSError):  # committed: a leftover intent is tidied by recovery
            os.unlink(self.intent_path)
        if snapped:
            snap_paths = [p for p, _ in snapped]
            self.journal.append(Commit("snapshot", snap_paths, shas[0], chars=0), client="human")
        return sha

    def _write_temps(self, temps: list[tuple[FileWrite, str]]) -> None:
        """Each write's new bytes in its temp file, fsynced; checked stored by git as written."""
        if not temps:
            return
        for w, tmp in temps:
            assert w.new is not None
            _write_temp(tmp, self.root / w.disk, w.new)
        stored = _hash_files(self.root, [t for _, t in temps])
        if stored != [blob_id(w.new or b"") for w, _ in temps]:
            raise GitError("git stored different bytes than were written")

    def _branch_head(self) -> tuple[str, str]:
        """(branch ref, HEAD sha). A HEAD detached by a rebase begun since check_repo looked
        (or for a moment by any git) is GitBusy: waited for, and the write planned again."""
        try:
            return head_branch(self.root)
        except StoreError:
            op = operation_in_progress(self.root)
            if op is not None:
                raise _busy_in_progress(*op, 0) from None
            if self._on_branch():
                raise _busy_index(0) from None  # back on a branch already: plan again
            raise

    def _on_branch(self) -> bool:
        head = (git_dir(self.root) / "HEAD").read_text(encoding="utf-8", errors="replace")
        return head.strip().startswith("ref: ")

    def _store_old_blobs(self, writes: list[FileWrite], in_head: dict[str, str]) -> None:
        """Make sure git has every previous content, so recovery can always restore it. After
        the snapshot that is HEAD's content; only a file git ignores needs storing."""
        for w in writes:
            if w.old is None:
                continue
            if in_head.get(w.disk) != blob_id(w.old):
                git(self.root, "hash-object", "-w", "--no-filters", "--stdin", input=w.old)

    def _undo(
        self, written: list[FileWrite], restore_for: tuple[str | None, bytes | None] = (None, None)
    ) -> None:
        rel, late = restore_for
        for w in reversed(written):
            target = self.root / w.disk
            data = late if (w.rel == rel and late is not None) else w.old
            self._put_back(target, w.new, data)

    def _put_back(self, target: Path, ours: bytes | None, data: bytes | None) -> bool:
        """Replace our own bytes `ours` at `target` with `data` (None: remove it), under a read
        lease as the write itself is (see _lease), so a save the owner makes into our copy
        meanwhile is never dropped: a file that is no longer ours is left as it is. False when
        it was left so (changed, being saved, or held by another program's lease)."""
        try:
            fd = _open_if_exists(target)
        except BlockingIOError:  # another program's lease: it is busy with the file, leave it
            log.warning("%s is held by another program; left as it is, not put back", target)
            return False
        leased = False
        try:
            if fd is not None:
                try:
                    leased = _lease(fd, str(target))
                except WriteRace:
                    log.warning("%s is being saved; left as it is, not put back", target)
                    return False
            now = _read_fd(fd) if fd is not None else None
            if now != ours or (leased and fd is not None and _lease_broken(fd)):
                return False  # edited again since we replaced it: that edit is newer, keep it
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                atomic_write(target, data, temp_dir(self.root, target))
            if fd is not None and leased and _lease_broken(fd):
                # a save into our copy was held while it was replaced: keep what it saved
                _unlease(fd)
                leased = False
                saved = _read_fd(fd) if _writers_gone(fd) else _settled_fd(fd, ours)
                if saved != ours:
                    log.warning("a save into %s landed while it was put back; kept", target)
                    atomic_write(target, saved, temp_dir(self.root, target))
                    return False
            return True
        finally:
            if fd is not None:
                if leased:
                    _unlease(fd)
                os.close(fd)

    def _head_blobs(self, paths: list[str]) -> dict[str, str]:
        out = git(self.root, "ls-tree", "-z", "HEAD", "--", *paths).stdout.decode(
            "utf-8", "replace"
        )
        blobs = {}
        for entry in filter(None, out.split("\x00")):
            meta, _, path = entry.partition("\t")
            blobs[path] = meta.split()[2]
        return blobs

    def snapshot(
        self,
        paths: list[str],
        expect: dict[str, tuple[str, bytes | None, Stamp | None]] | None = None,
    ) -> dict[str, str]:
        """Commit the owner's uncommitted edits to `paths` as the owner (the dashboard's
        actions; the AI's writes commit the snapshot with their own change, see `apply`).
        Returns HEAD's blob of each path afterwards."""
        head_blobs, entries = self._snapshot_entries(paths, expect)
        if not entries:
            return head_blobs
        changed = [p for p, _ in entries]
        # A snapshot changes no file, but a crash between moving the branch and putting git's
        # index in place would leave the owner's edit staged for removal: its intent lets
        # recovery tidy the index (files: as they are, before and after).
        # (each entry's blob is the file's exact bytes as they are: _snapshot_entries)
        self._write_intent(
            "snapshot",
            [{"path": p, "old": now, "new": now, "tmp": None} for p, now in entries],
            commit=[[p, b] for p, b in entries],
        )
        try:
            sha = commit_blobs(
                self.root, entries, _snapshot_message(changed), human_identity(self.root)
            )
        finally:
            self.drop_intent()  # committed, or failed with the branch where it was
        self.journal.append(Commit("snapshot", changed, sha, chars=0), client="human")
        gone = {p for p, b in entries if b is None}
        after = {**head_blobs, **{p: b for p, b in entries if b is not None}}
        return {p: b for p, b in after.items() if p not in gone}

    def _snapshot_entries(
        self,
        paths: list[str],
        expect: dict[str, tuple[str, bytes | None, Stamp | None]] | None = None,
    ) -> tuple[dict[str, str], list[tuple[str, str | None]]]:
        """HEAD's blob of each path, and the owner's uncommitted edits to `paths` as entries
        for a commit (path, blob; None: deleted), [] when there are none. Commits nothing.

        `expect` is what a write planned on, per path: (rel, bytes, stamp). The snapshot
        commits exactly those bytes, and only while the file still is them (same stamp, and git
        reading the same bytes back): a file that changed since the plan, or changes while git
        reads it, raises WriteRace and the write is planned again. So a snapshot never records
        a save caught half-way (an empty note, mid truncate-then-write). Without `expect`
        (the dashboard's actions) each file is read as it settles now.

        Compares the files with HEAD directly (not with git's index, which other tools may have
        left in any state), by the bytes first (no git run when they are HEAD's). A file whose
        bytes differ is asked of git as `git add` would store it: where git converts it
        (core.autocrlf, a text/eol attribute, a clean filter) and gets HEAD's blob, git calls
        it clean and so does this; no owner snapshot rewrites its line endings. What a snapshot
        commits is still the owner's exact bytes (see _hash_files).
        """
        owners = expect is None
        if expect is None:
            expect = {}
            for p in paths:
                try:
                    data, st = read_stable(self.root / p, p)
                except WriteRace as race:
                    raise StoreError(
                        "file_busy",
                        f"{p} {race.reason}; nothing was changed. Try again in a moment.",
                    ) from race
                expect[p] = (p, data, st)
        head_blobs = self._head_blobs(paths)
        dirty: list[str] = []
        # Deleted by the owner (or renamed away) and not committed: the write would otherwise
        # commit the deletion as the AI's (the AI's note at the old name showed as a rewrite of
        # the owner's, and reverting the AI's commit brought the old note back)
        gone: list[str] = []
        for p in paths:
            rel, data, st = expect[p]
            _still(self.root / p, rel, data, st)
            if data is not None and head_blobs.get(p) != blob_id(data):
                dirty.append(p)
            elif data is None and p in head_blobs:
                gone.append(p)
        if not dirty and not gone:
            return head_blobs, []
        # One git for every file (none when no file differs): in a vault without conversions
        # each blob is the bytes' own, already stored, and the only git run, as before.
        try:
            # the dashboard's actions (no plan) are the owner's: their git's clean filters run
            seen = _hash_as_git_stores(self.root, dirty, owners) if dirty else []
        except GitError as exc:
            for p in dirty:  # "short read": the file changed while git read it
                _still(self.root / p, *expect[p])
            # a clean filter that fails (its program missing): every file differing counts
            log.warning("git could not hash the files as it stores them: %s", exc)
            seen = [""] * len(dirty)
        found: dict[str, str] = {}
        exact: list[str] = []  # converted by git, or changed while git read it: read as bytes
        for p, blob in zip(dirty, seen, strict=True):
            rel, data, st = expect[p]
            if blob == blob_id(data or b""):
                found[p] = blob  # stored as its bytes are
            elif blob and blob == head_blobs.get(p):
                _still(self.root / p, rel, data, st)  # and git read the file the plan read
            else:
                exact.append(p)
        if exact:
            try:
                raw = _hash_files(self.root, exact)
            except GitError:
                for p in exact:
                    _still(self.root / p, *expect[p])
                raise
            for p, blob in zip(exact, raw, strict=True):
                rel, data, _ = expect[p]
                if blob != blob_id(data or b""):  # git read other bytes: it changed meanwhile
                    raise WriteRace(
                        rel, data, None, reason="changed while it was being snapshotted"
                    )
                found[p] = blob
        dirty = [p for p in dirty if p in found]
        if not dirty and not gone:
            return head_blobs, []
        entries: list[tuple[str, str | None]] = [(p, found[p]) for p in dirty]
        entries += [(p, None) for p in gone]
        for p in gone:  # still gone: a file put back meanwhile is planned again
            _still(self.root / p, *expect[p])
        return head_blobs, entries

    # -- recovery -------------------------------------------------------------------------------

    def recover(self) -> list[str]:
        """At start: roll back writes a crash interrupted. Returns the paths put back."""
        with self.locked():
            # A crash while one of our own state files was being written (the intent, the
            # private index's marker) leaves only its temp file.
            for stale in [
                *self.intent_path.parent.glob(".*.vaultwatch-tmp"),
                *(self.intent_path.parent / "tmp").glob(".*.vaultwatch-tmp"),  # notes' temps
            ]:
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
            return self.recover_locked()

    def recover_locked(self) -> list[str]:
        """Roll back every write whose writer died mid-way (caller holds the write lock).

        Every write calls this first, not just a server's start: a server that stays up beside
        one that was killed must not build on (or snapshot as the owner's) the dead one's
        half-written files. Under the lock every intent file left is a dead writer's: a live
        one removes its own before it lets the lock go, and a killed one's git children keep
        the lock until they end.
        """
        restored: list[str] = []
        for path in sorted(state_dir(self.root).glob("intent*.json")):
            restored += self._recover_intent(path)
        return restored

    def _recover_intent(self, intent_path: Path) -> list[str]:
        try:
            intent = load_state_json(intent_path)
            files = intent["files"]
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(intent_path)
            return []
        for f in files:
            if f.get("tmp"):  # a temp file the crash left before its rename
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.root / f["tmp"])
        restored, kept = [], []
        # an owner action records the exact blobs its commit holds (see intent_commits)
        sealed = intent.get("commit")
        names = {f["path"] for f in files} | (
            {p for p, _ in sealed} if isinstance(sealed, list) else set()
        )
        # one git run for every path (a move of a thousand notes names two thousand)
        head = self._head_blobs(sorted(names)) if names else {}
        committed = (
            all(head.get(p) == b for p, b in sealed)
            if isinstance(sealed, list)
            else all(head.get(f["path"]) == f["new"] for f in files)
        )
        # A recovery killed half-way leaves files it put back in no event: the next one says
        # so rather than name only what it did itself.
        again = bool(intent.get("recovering"))
        if not committed and not again:
            intent["recovering"] = os.getpid()
            write_state(intent_path, json.dumps(intent).encode())
        if not committed:
            for f in files:
                target = self.root / f["path"]
                current = target.read_bytes() if target.exists() else None
                cur_id = blob_id(current) if current is not None else None
                if cur_id == f["old"]:
                    continue  # never touched
                if cur_id != f["new"] and cur_id != f.get("between", f["new"]):
                    kept.append(f["path"])  # changed by someone since: leave it alone
                    continue
                # Under a read lease, as a write is (`_put_back`): the vault lock keeps other
                # writers of ours out, not the owner's editor; one saving into the dead
                # writer's copy between our look and our rename lost its words (issue 27).
                data = git(self.root, "cat-file", "blob", f["old"]).stdout if f["old"] else None
                if not self._put_back(target, current, data):
                    kept.append(f["path"])  # being saved, or changed at that moment
                    continue
                if f["old"] is None:
                    _prune_parents(self.root, f["path"])  # folders a killed move made
                restored.append(f["path"])
                crash_point("recovered_file")
        # The index for these paths goes back to HEAD whichever way it went (a crash may
        # fall between moving the branch and updating the index).
        tidied = True
        try:
            with owner_index(self.root) as idx:
                idx.git("reset", "-q", "--", *[f["path"] for f in files])
                idx.install()
        except (GitError, OSError) as exc:
            log.warning("git's index not tidied after an interrupted write: %s", exc)
            tidied = False
        os.unlink(intent_path)
        # Every interrupted write is accounted for, even one that had already committed.
        tool = intent.get("tool", "write")
        msg = (
            f"an interrupted {tool} was rolled back"
            + (f"; left as found (changed since): {', '.join(kept)}" if kept else "")
            if not committed
            else f"an interrupted {tool} had been committed"
            + ("; the index was tidied" if tidied else "")
        )
        if again:
            msg += "; an earlier recovery of it was cut short and may have put back more files"
        if not tidied:
            paths = " ".join(f["path"] for f in files)
            msg += (
                "; git's index was locked by another git command and could not be tidied: "
                f"`git reset -q -- {paths}` does it"
            )
        self.journal.append(
            Recovered(restored, kept, msg, intent.get("tool"), committed, intent.get("pid"))
        )
        return restored


def _prune_parents(root: Path, rel: str) -> None:
    """Remove the folders above `rel` that are now empty (git keeps no empty folder; Obsidian
    would show one), never the vault folder itself."""
    parent = os.path.dirname(rel)
    while parent:
        try:
            (root / parent).rmdir()
        except OSError:
            return
        parent = os.path.dirname(parent)


class BranchMoved(GitError):
    """The branch moved between reading HEAD and moving it (compare-and-swap failed)."""


def commit_blobs(
    root: Path,
    entries: list[tuple[str, str | None]],
    message: str,
    author: tuple[str, str],
) -> str:
    """Commit exactly these paths, whatever else the working tree or git's index holds: HEAD +
    these (path, blob; None removes the path) -> a tree (in a private index) -> a commit by
    `author` -> the branch, moved only if it still points where it did (compare-and-swap).
    The real index is then set to HEAD for these paths. Caller holds the write lock.

    The owner's moves, creates, deletes and snapshots from the dashboard commit this way; the
    write path (`Store.apply`: the AI's writes, the owner's reverts and undos) is built of the
    same three steps: `commit_objects`, `prepare_index`, `_move_branch` under git's lock."""
    branch, head = head_branch(root)
    [sha] = commit_objects(root, head, [(entries, message, author)])
    prepared = prepare_index(root, _index_info(root, entries))
    update = _ref_update(root, message)
    try:
        # git's index lock only for the moment the branch moves and the index is swapped: if
        # another git command keeps it, IndexBusy, nothing is committed, the index is as it was
        with owner_index(root, prepared=prepared) as idx:
            crash_point("index_locked")  # .git/index.lock is ours
            _move_branch(root, branch, head, sha, idx, update)
    finally:
        update.cancel()
    _mark_private_index(root, sha)
    crash_point("commit_done")
    return sha


def commit_objects(
    root: Path, head: str, steps: list[tuple[list[tuple[str, str | None]], str, tuple[str, str]]]
) -> list[str]:
    """One commit per step (entries, message, author), each on the one before, the first on
    `head`: its tree is its parent's with the step's entries applied (path, blob; None removes
    the path). Built in a private index; no ref moves, git's index is untouched. Caller holds
    the write lock."""
    # A private index, kept between writes (all of them under the write lock): when it
    # already holds HEAD's tree, read-tree is skipped and write-tree reuses its cached
    # subtrees, which is most of the cost of a commit in a large vault.
    index = state_dir(root) / "commit.index"
    marker = state_dir(root) / "commit.index.head"
    env = {"GIT_INDEX_FILE": str(index)}
    infos = [_index_info(root, entries) for entries, _, _ in steps]
    named = {p for entries, _, _ in steps for p, _ in entries}
    if index.is_symlink():  # git would read the file it names as our index: never
        os.unlink(index)
    cached = index.exists() and _read_text(marker) == head  # holds HEAD's tree already
    # The marker says "the private index holds exactly this commit's tree". It goes before the
    # index is changed and comes back only once the branch holds what the index holds: a crash
    # anywhere between (a batch killed holding .git/index.lock) leaves no marker, and the next
    # commit starts from HEAD's tree. Kept, the dead batch's entries rode along in the next
    # write's commit, its lines in no file on disk (issue 27).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)
    try:
        trees = _private_trees(root, env, head, infos, cached)
        # Read afresh from HEAD, the index holds HEAD and these entries by construction; a
        # cached one is checked (one git run, through the subtrees that differ only).
        if cached and not _changed_paths(root, head, trees[-1]) <= named:
            # Something else is in the private index (whatever put it there): never commit it.
            # Built again from HEAD alone, and refused if even that names other paths.
            log.warning("private index held paths this commit does not name; rebuilt from HEAD")
            trees = _private_trees(root, env, head, infos, False)
            extra = _changed_paths(root, head, trees[-1]) - named
            if extra:
                raise GitError(
                    "the commit would change paths it does not name "
                    f"({', '.join(sorted(extra)[:5])}); nothing was committed"
                )
        state_file(index)  # git wrote it with the umask's mode
        crash_point("private_index")
    except GitError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(index)
        raise
    shas: list[str] = []
    parent = head
    for tree, (_, message, author) in zip(trees, steps, strict=True):
        parent = (
            git(
                root,
                *NO_SIGN,
                "commit-tree",
                tree,
                "-p",
                parent,
                "-F",
                "-",
                env=identity_env(*author),
                input=message.encode(),
            )
            .stdout.decode()
            .strip()
        )
        shas.append(parent)
    return shas


def _index_info(root: Path, entries: list[tuple[str, str | None]]) -> bytes:
    """`git update-index --index-info` lines for these entries (None: the path goes)."""
    lines = []
    for path, blob in entries:
        if blob is None:  # mode 0 takes the path out of the index
            lines.append(f"0 {'0' * 40}\t{path}")
            continue
        lines.append(f"{_git_mode(root / path)} {blob}\t{path}")
    return ("\n".join(lines) + "\n").encode()


def _ref_update(root: Path, message: str) -> RefUpdate:
    """A `git update-ref` started ahead for the commit with `message` (see RefUpdate)."""
    return RefUpdate(root, f"commit: {message.split(chr(10), 1)[0]}")


def _move_branch(
    root: Path, branch: str, head: str, sha: str, idx: OwnerIndex, update: RefUpdate
) -> None:
    """The branch from `head` to `sha` (compare-and-swap, by `update`) and git's index swapped
    for the one `idx` holds, while git's index lock is ours: the owner's index never shows the
    commit's change staged for removal. BranchMoved, nothing changed, when the branch is
    elsewhere."""
    try:
        update.move(branch, sha, head)
    except GitError as exc:
        now = git(root, "rev-parse", "-q", "--verify", branch, check=False)
        if now.stdout.decode().strip() != head:
            # another git moved the branch without the index lock (a merge or rebase
            # finishing): nothing of ours is committed; the write is made again on it
            raise BranchMoved(
                f"{branch} moved while the commit was being made; nothing was committed"
            ) from exc
        raise
    crash_point("branch_moved")
    try:
        idx.install()  # a rename inside .git, under the lock
    except OSError as exc:
        # Not put in place: move the branch back (it moved a moment ago, under our
        # locks), so the write fails as a whole rather than leave the index behind it.
        back = git(root, "update-ref", branch, head, sha, check=False)
        if back.returncode != 0:
            log.warning("git's index not updated after commit %s: %s", sha, exc)
            return
        raise GitError(f"git's index could not be updated ({exc}); nothing was committed") from exc
    _hold_for_a_rebase_begun(root, sha)


# How long the index lock is kept, at most, for a rebase that began while it was ours (see
# _hold_for_a_rebase_begun): its next step needs the lock, so it ends within moments.
REBASE_HOLD_S = 10.0


def _hold_for_a_rebase_begun(root: Path, new: str) -> None:
    """Called holding git's index lock, the branch just moved to `new`. A rebase that has begun
    meanwhile (its state folder appeared while the lock was ours: we looked when we took it)
    read the branch before our commit: left to run on, it would rebase the branch as it was,
    and at its very end fail to move a branch that is no longer where it read it ("could not
    update refs/heads/..."), half-way, HEAD detached, until the owner acts (whose `git rebase
    --abort` then drops our commit). Its next step, checking out its base, needs the index lock:
    kept until then, the rebase fails there, before it has changed anything, and removes its
    state (the plugin tries again at its next sync). A rebase that read our commit is let go."""
    deadline = time.monotonic() + REBASE_HOLD_S
    while True:
        orig = rebase_orig_head(root)
        if orig is None or orig == new:
            return
        if time.monotonic() >= deadline:
            log.warning("a rebase begun during our commit kept going for %.0f s", REBASE_HOLD_S)
            return
        time.sleep(_GIT_POLL_S)


# When a write last took and let go git's index lock on each vault (wall clock, ns; 0: still
# held), so that a merge it stopped can be told by the time git wrote MERGE_HEAD.
_HELD_AT: dict[Path, tuple[int, int]] = {}
# how long after we let the lock go a stopped merge may still be writing its MERGE_HEAD (a
# process descheduled on a loaded machine), and the coarseness of file times
_MERGE_LATE_NS = 2_000_000_000
_FILE_TIME_NS = 20_000_000


def _clear_a_merge_stopped_by_us(root: Path) -> bool:
    """`git merge` refreshes git's index before it merges anything; when it cannot take the
    index lock (ours, for the moment of a write) it gives up, "Unable to write index.", yet
    leaves MERGE_HEAD behind with nothing merged (git 2.39). The next `git commit` (the Obsidian
    Git plugin's backup) would then record a merge whose tree leaves the other side's changes
    out: lines another machine committed vanish from the notes (they stay in history). Such a
    state, written while our lock was held or just after, with nothing staged (git's index is
    HEAD's tree, no conflict) and no other operation under way, is cleared as
    `git merge --abort` would clear it; the plugin's next sync merges again. Under git's index
    lock, so that the plugin's commit cannot record it meanwhile. True when it was cleared."""
    held = _HELD_AT.get(root)
    if held is None:
        return False
    g = git_dir(root)
    try:
        written = os.stat(g / "MERGE_HEAD").st_mtime_ns
    except OSError:
        return False
    end = held[1] or time.time_ns()
    if not held[0] - _FILE_TIME_NS <= written <= end + _MERGE_LATE_NS:
        return False
    if any(os.path.lexists(g / m) for m in ("rebase-merge", "rebase-apply", "sequencer")):
        return False
    if any(os.path.lexists(g / m) for m in ("CHERRY_PICK_HEAD", "REVERT_HEAD")):
        return False
    if git(root, "diff-index", "--cached", "--quiet", "HEAD", check=False).returncode != 0:
        return False  # something merged, staged or in conflict: the owner's to finish
    try:
        with owner_index(root):
            try:
                if os.stat(g / "MERGE_HEAD").st_mtime_ns != written:
                    return False
            except FileNotFoundError:
                return False  # committed or aborted meanwhile
            for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(g / name)
    except IndexBusy:
        return False
    log.warning("a git merge stopped by our index lock before it merged anything was cleared")
    return True


def git_moment(root: Path) -> tuple[object, ...]:
    """What a rebase or merge changes as it goes (its marker, HEAD, ORIG_HEAD), in a few stat
    calls: two equal moments around a plan say no such operation ran meanwhile."""
    g = git_dir(root)
    out: list[object] = [operation_in_progress(root)]
    for f in ("HEAD", "ORIG_HEAD"):
        try:
            st = os.stat(g / f)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_mtime_ns))
    return tuple(out)


def _mark_private_index(root: Path, sha: str) -> None:
    """The branch has moved to `sha`, which the private index holds: say so (upkeep only, a
    lost marker costs a read-tree)."""
    marker = state_dir(root) / "commit.index.head"
    try:
        write_state(marker, sha.encode())
    except OSError as exc:
        log.warning("private index marker not written: %s", exc)
        with contextlib.suppress(OSError):
            os.unlink(marker)


def _snapshot_message(changed: list[str]) -> str:
    subject = "snapshot: " + (changed[0] if len(changed) == 1 else f"{len(changed)} files")
    return commit_message(subject, {ACTION: "snapshot"})


def _ref_stamp(root: Path, branch: str) -> list[tuple[int, int, int] | None]:
    """What git changes when it moves `branch` (its loose ref, packed-refs, a reftable's list)
    or HEAD, as (inode, size, mtime): a few stat calls to tell, under git's index lock and
    without running git, that the branch is where the plan read it."""
    g = git_dir(root)
    common = g
    with contextlib.suppress(OSError):
        common = (g / (g / "commondir").read_text().strip()).resolve()
    out: list[tuple[int, int, int] | None] = []
    for f in (g / "HEAD", common / branch, common / "packed-refs", common / "reftable/tables.list"):
        try:
            st = os.stat(f)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return out


def _private_trees(
    root: Path, env: dict[str, str], head: str, infos: list[bytes], cached: bool
) -> list[str]:
    """The trees of HEAD with each of `infos` applied in turn, built in the private index
    (`env`): from HEAD's tree read afresh unless `cached` (the index is known to hold it)."""
    if not cached:
        git(root, "read-tree", head, env=env)
    trees = []
    for info in infos:
        git(root, "update-index", "--index-info", env=env, input=info)
        trees.append(git(root, "write-tree", env=env).stdout.decode().strip())
    return trees


def _changed_paths(root: Path, head: str, tree: str) -> set[str]:
    """The paths whose blob or mode differs between HEAD's tree and `tree`."""
    out = git(root, "diff-tree", "-r", "-z", "--no-renames", "--name-only", head, tree).stdout
    return {os.fsdecode(p) for p in out.split(b"\x00") if p}


def _git_mode(path: Path) -> str:
    """The mode git records for the file at `path` (a symlink as a link, not its target)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "100644"
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    return "100755" if st.st_mode & 0o111 else "100644"


def disk_blobs(root: Path, paths: list[str]) -> list[tuple[str, str | None]]:
    """Each path with the blob of the file on disk now, stored in git (None: no such file, the
    commit removes it); a symlink as its target text, as git keeps links. The owner's actions
    only (move, delete, create): a file under a filter goes through the filter."""
    files = [p for p in paths if os.path.lexists(root / p) and not os.path.islink(root / p)]
    # a file under a git filter (git-crypt) is stored as `git add` stores it: its bytes on disk
    # are what the filter keeps out of history (the AI never writes such a file; the owner's
    # move or delete in the dashboard does reach it)
    filtered = set(filtered_paths(root, files)) if files else set()
    plain = [p for p in files if p not in filtered]
    through = [p for p in files if p in filtered]
    found = dict(zip(plain, _hash_files(root, plain), strict=True)) if plain else {}
    if through:
        found.update(zip(through, _hash_as_git_stores(root, through, True), strict=True))
    for p in paths:
        if os.path.islink(root / p):
            link = os.fsencode(os.readlink(root / p))
            found[p] = git(root, "hash-object", "-w", "--stdin", input=link).stdout.decode().strip()
    return [(p, found.get(p)) for p in paths]


def head_branch(root: Path) -> tuple[str, str]:
    """(branch ref, HEAD sha) in one git call; StoreError when HEAD is not on a branch."""
    # the flag applies to the arguments after it: the sha first, then the branch's name
    out = git(root, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD").stdout.decode()
    sha, branch = out.split()[:2]
    if not branch.startswith("refs/"):
        raise StoreError(
            "detached_head",
            "the vault's git HEAD is not on a branch; "
            "nothing was written. Tell the owner to check out a branch.",
            owner="git's HEAD is not on a branch; nothing was changed. Check out a branch "
            "(git switch <branch>), then try again.",
        )
    return branch, sha
