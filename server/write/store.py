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

A file is "unchanged" when its bytes are what the plan read, read as one state, and its stamp
(inode, size, mtime, ctime) too, or, the stamp changed, the plan's bytes are not empty: an
editor that saves by truncate-then-write passes through an empty file, which never equals a
non-empty plan; one that re-saves identical text changes the stamp only, and replacing that
text loses nothing. Under a read lease (granted only while no program has the file open for
writing: no save is in progress) the bytes are enough. The rule's one home is
`leases.unchanged`, applied by `leases.Replacing` for every writer. An appending write that meets
an owner's save at the snapshot or the rename, or finds one in the note's old copy after it, is
not planned again: the save becomes the owner's snapshot and the AI's lines are merged onto it
(`late_saves.LateSaves`, on which `Store` is built).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from server.core.faults import crash_point
from server.core.git_index import (
    INDEX_LOCK_WAIT_S,
    IndexBusy,
    IndexMoved,
    owner_index,
    prepare_index,
    wait_for_index,
)
from server.core.git_log import CLIENT, TOOL, commit_message, trailer_value
from server.core.git_run import GitError, RefUpdate, git, human_identity
from server.core.gitprocs import other_git_running
from server.core.gitrepo import operation_in_progress
from server.core.state_files import git_dir, write_state
from server.notes.config import Config
from server.notes.note import BOM
from server.write.commits import (
    _HELD_AT,
    BranchMoved,
    _clear_a_merge_stopped_by_us,
    _hash_files,
    _index_info,
    _mark_private_index,
    _move_branch,
    _ref_stamp,
    _ref_update,
    blob_id,
    commit_objects,
    head_branch,
)
from server.write.file_write import FileWrite, mergeable
from server.write.journal import Commit
from server.write.late_saves import LateSaves
from server.write.leases import Replacing, WriteRace
from server.write.snapshot import _snapshot_message
from server.write.store_errors import (
    _GIT_POLL_S,
    GitBusy,
    StoreError,
    _busy_in_progress,
    _busy_index,
)
from server.write.temp_files import _fsync_dir, _temp_name, _write_temp


def _keep_bom(w: FileWrite) -> FileWrite:
    """The write with the BOM the file has now put back at the start of its new bytes."""
    if w.old is not None and w.new is not None and w.old.startswith(BOM) and w.new[:3] != BOM:
        w.new = BOM + w.new
    return w


class Store(LateSaves):
    """The write path of one vault. Its vault, journal, lock, intent and recovery after a crash
    are `Recovery`'s (recovery.py), the owner's snapshot `Snapshots`' (snapshot.py)."""

    def begin(self, deadline: float | None = None) -> list[str]:
        """What every writer does first, under the lock: the AI's writes and every owner action
        (revert, undo, move, create, delete) alike. git must allow a commit (check_repo, which
        waits until `deadline` for another git's operation to end), then whatever a dead writer
        left half-done is put right (recover_locked): without it the owner's move or revert
        snapshotted a killed AI write's files as the owner's own edit.
        Returns the paths put back."""
        self.check_repo(deadline)
        return self.recover_locked()

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
        # one running that has left no mark yet is waited for the same way (see gitprocs)
        busy = busy or other_git_running(self.root)
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
        # what undoing a note takes back, once a late save was folded into it: (what is on
        # disk of ours, what goes back) instead of (new, old)
        undo_as: dict[str, tuple[bytes, bytes | None]] = {}
        replacing = Replacing()  # each note checked, replaced and checked again; closed below
        update: RefUpdate | None = None
        try:
            # what git changes when it moves the branch, as it is before the branch is read
            named = (git_dir(self.root) / "HEAD").read_text(errors="replace").strip()[5:]
            refs = _ref_stamp(self.root, named)
            branch, head = self._branch_head()
            update = _ref_update(self.root, message)  # git starts while the rest is made
            try:
                head_blobs, snapped = self._snapshot_entries(
                    paths, expect={w.disk: (w.rel, w.old, w.stamp) for w in writes}
                )
            except WriteRace:
                if not all(map(mergeable, writes)):
                    raise
                # Saved since the plan (the owner typing): an appending write goes on, and the
                # rename merges it onto the save it meets there, which becomes the snapshot
                # (`_replace`). Failing here, after this step's git runs, every attempt met a
                # save of an editor typing under load.
                head_blobs = self._head_blobs(paths)
                dirty = [
                    w
                    for w in writes
                    if w.old is not None and head_blobs.get(w.disk) != blob_id(w.old)
                ]
                self._store_blobs([w.old for w in dirty if w.old is not None])
                snapped = [(w.disk, blob_id(w.old or b"")) for w in dirty]
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
                # A rebase or merge that has not yet left its mark in .git is seen running: it
                # may have read the branch already (see gitprocs).
                op = operation_in_progress(self.root) or other_git_running(self.root)
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
                rebased: list[FileWrite] = []  # planned again here, on the owner's save
                for i, w in enumerate(writes):
                    # the write rule (leases.unchanged), one home for every writer
                    if self._replace(replacing, w, temps, i):
                        rebased.append(w)
                    renamed.append(w)
                    crash_point("renamed")
                saves = replacing.late_saves()  # a save that came into an old copy meanwhile
                if saves:  # folded in: the owner's save, then the AI's change on it
                    rebased += self._take_late_saves(saves, writes, undo_as)
                if rebased:
                    shas = self._rebuild(
                        rebased, writes, snapped, head_blobs, head, message, author
                    )
                    info = _index_info(self.root, [(w.disk, blob_id(w.new or b"")) for w in writes])
                    idx.git("update-index", "--index-info", input=info)
                    self._seal_intent(writes, undo_as)
                crash_point("index_locked")  # renamed, the commit built, the index lock ours
                _move_branch(self.root, branch, head, shas[-1], idx, update)
            sha = shas[-1]
            _HELD_AT[self.root] = (_HELD_AT[self.root][0], time.time_ns())
            self._keep_saves_since(replacing, writes)
            _clear_a_merge_stopped_by_us(self.root)
            # The renames made durable once git's lock is let go (a directory's fsync can take
            # longer than all of the above): the journal of the file system keeps them in
            # order with the branch's move meanwhile, and the write reports only after this.
            for folder in sorted({(self.root / w.disk).parent for w in renamed}):
                _fsync_dir(folder)
        except (OSError, GitError, WriteRace, StoreError) as exc:
            replacing.release()
            restore = exc.restore if isinstance(exc, WriteRace) else None
            self._undo(
                renamed,
                restore_for=(exc.rel if isinstance(exc, WriteRace) else None, restore),
                undo_as=undo_as,
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
            replacing.close()
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
        self,
        written: list[FileWrite],
        restore_for: tuple[str | None, bytes | None] = (None, None),
        undo_as: dict[str, tuple[bytes, bytes | None]] | None = None,
    ) -> None:
        rel, late = restore_for
        for w in reversed(written):
            target = self.root / w.disk
            if undo_as and w.rel in undo_as:  # a late save folded in: ours is what landed
                ours, back = undo_as[w.rel]
                self._put_back(target, ours, back, merge=True)
                continue
            data = late if (w.rel == rel and late is not None) else w.old
            self._put_back(target, w.new, data, merge=True)
