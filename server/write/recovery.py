"""The intent a write records before it changes anything, and the rollback after a crash: every
writer (the AI's, the owner's) starts by putting right what a dead one left half-done. `Store`
(store.py) is built on `Recovery`, which holds the store's vault, journal and intent file."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

from server.core.faults import crash_point
from server.core.git_index import owner_index
from server.core.git_run import GitError, git
from server.core.gitrepo import write_lock
from server.core.state_files import load_state_json, state_dir, write_state
from server.write.commits import _hash_files, blob_id
from server.write.journal import Journal, Recovered
from server.write.leases import (
    WriteRace,
    _lease,
    _lease_broken,
    _open_if_exists,
    _read_fd,
    _settled_fd,
    _unlease,
    _writers_gone,
)
from server.write.merge3 import adds_lines_only, clear_merge_inputs, merge_lines, take_back
from server.write.swap import Replaced
from server.write.temp_files import atomic_write, temp_dir

log = logging.getLogger("vaultwatch.store")

# Where the owner's text that a put-back could not keep on disk is kept (see `_keep_aside`).
KEPT_REFS = "refs/vaultwatch/kept/"


class Recovery:
    def __init__(self, root: Path, journal: Journal) -> None:
        self.root = root
        self.journal = journal
        # one intent file per write (pid + random): a writer never overwrites a dead one's
        self.intent_path = state_dir(root) / f"intent.{os.getpid()}.{secrets.token_hex(4)}.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with write_lock(self.root):
            yield

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

    def _put_back(
        self, target: Path, ours: bytes | None, data: bytes | None, merge: bool = False
    ) -> bool:
        """`_put_back_once`; a write undoing itself (`merge`) that cannot put back text that is
        in no commit (the owner's save from the old copy, their pending edit) keeps it aside in
        git (`_keep_aside`) rather than drop it."""
        done = self._put_back_once(target, ours, data, merge)
        if not done and merge and data is not None:
            self._keep_aside(target.relative_to(self.root).as_posix(), data)
        return done

    def _keep_aside(self, rel: str, data: bytes, say: bool = True) -> str | None:
        """The owner's text `data` for `rel`, which no file or commit will hold (the note keeps
        a newer save that it does not merge into), kept in git under `refs/vaultwatch/kept/`
        and named in the journal (`say`; a rollback names it in its own event instead), where
        the dashboard shows it: before, a save into the old copy that merged with nothing was
        only a warning in a log (issue 27). Returns the ref, None when the text is already the
        note's in HEAD or on disk, or git refused."""
        target = self.root / rel
        try:
            if target.is_file() and target.read_bytes() == data:
                return None
            got = git(self.root, "rev-parse", "--verify", "-q", f"HEAD:{rel}", check=False)
            if got.stdout.decode().strip() == blob_id(data):
                return None
            self._store_blobs([data])
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
            ref = f"{KEPT_REFS}{stamp}-{blob_id(data)[:12]}"
            git(self.root, "update-ref", ref, blob_id(data))
        except (OSError, GitError) as exc:
            log.warning("%s: an earlier save could not be kept aside: %s", rel, exc)
            return None
        if say:
            self.journal.append(
                Recovered(
                    [],
                    [rel],
                    f"{rel}: an AI write was undone, and your save made while it ran does not "
                    "merge with the save you made after it; the note keeps the later save, "
                    f"and the earlier is kept in git: `git show {ref}` prints it",
                    None,
                    False,
                    os.getpid(),
                )
            )
        return ref

    def _store_blobs(self, texts: list[bytes]) -> None:
        """Each text stored in git as a blob, checked stored as written."""
        for data in texts:
            got = git(self.root, "hash-object", "-w", "--no-filters", "--stdin", input=data)
            if got.stdout.decode().strip() != blob_id(data):
                raise GitError("git stored different bytes than were written")

    def _put_back_once(
        self, target: Path, ours: bytes | None, data: bytes | None, merge: bool = False
    ) -> bool:
        """Replace our own bytes `ours` at `target` with `data` (None: remove it), under a read
        lease as the write itself is (see _lease), so a save the owner makes into our copy
        meanwhile is never dropped: a file that is no longer ours is left as it is, or, with
        `merge` (a write undoing itself), gets the change ours -> data merged into what it
        holds when that merge decides every line (`merge_lines`): a save put back from the old
        copy is then not lost to a newer save by the path (issue 27). False when it was left
        as it is (changed, being saved, or held by another program's lease)."""
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
            if leased and fd is not None and _lease_broken(fd):
                return False  # being saved this moment: that save is newer, keep it
            if now != ours:
                # edited again since we replaced it: that edit is newer, keep it, with the
                # change we meant merged in when it can be
                if not merge or now is None or ours is None or data is None:
                    return False
                merged = merge_lines(self.root, ours, data, now)
                if merged is None:  # the owner typed right against our lines: take them out
                    merged = take_back(data, ours, now)
                if merged is None:
                    log.warning("%s was saved again and does not merge; left as it is", target)
                    return False
                ours, data = now, merged
                # the merge took a git run: looked at again, so the window in which a save
                # by the path is replaced unseen stays the moment it was
                if (
                    fd is None
                    or _read_fd(fd) != now
                    or os.stat(target).st_ino != os.fstat(fd).st_ino
                ):
                    return False
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                try:  # only over the file looked at: an editor's rename-save stays
                    atomic_write(
                        target,
                        data,
                        temp_dir(self.root, target),
                        same_as=os.fstat(fd).st_ino if fd is not None else None,
                    )
                except Replaced:
                    log.warning("%s was saved again as it was put back; left as saved", target)
                    return False
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

    def _take_our_lines_out(self, target: Path, f: dict[str, str | None]) -> bool:
        """An append a writer was killed in (renamed, not committed) into a note the owner
        typed into since, by its path (an editor saving into our copy): our lines taken out,
        their typing kept (`_put_back`'s merge, as a write undoing itself does). Left as it
        was, the AI's lines stayed on disk in no commit, and the next write snapshotted them
        as the owner's (the crash matrix's late-save merge, killed at "renamed"). Only a
        write that adds lines (`adds_lines_only`): anything else is left as found."""
        if not f.get("old") or not f.get("new") or not target.exists():
            return False
        old = git(self.root, "cat-file", "blob", str(f["old"]), check=False)
        new = git(self.root, "cat-file", "blob", str(f["new"]), check=False)
        if old.returncode or new.returncode or not adds_lines_only(old.stdout, new.stdout):
            return False
        # (once: left as found, the caller keeps the text before the write aside)
        return self._put_back_once(target, bytes(new.stdout), bytes(old.stdout), merge=True)

    def _fold_late_save(self, f: dict[str, object], committed: bool) -> bool:
        """Merge into the note a save its writer took in from the note's old copy and named in
        the intent (`late`: the copy's blob before and the save's; see
        `LateSaves._name_late_saves`), then was killed before the merge holding it was on
        the note: the old copy is no longer the note, so this is the save's last home. After
        a commit, only into the committed text (else it landed already, or the owner typed
        on). A save that does not merge is kept aside in git (`_keep_aside`), the note left."""
        target = self.root / str(f["path"])
        late = f["late"]
        if not isinstance(late, list) or len(late) != 2:
            return False
        try:
            current = target.read_bytes()
        except OSError:
            return False
        if committed and blob_id(current) != f.get("new"):
            return False
        base = git(self.root, "cat-file", "blob", str(late[0]), check=False)
        saved = git(self.root, "cat-file", "blob", str(late[1]), check=False)
        if base.returncode or saved.returncode:
            return False
        if current == saved.stdout or adds_lines_only(bytes(saved.stdout), current):
            return False  # in the note already (landed, then typed on; or put back)
        merged = merge_lines(self.root, bytes(base.stdout), bytes(saved.stdout), current)
        if merged is None:  # kept in git, and the journal says where
            self._keep_aside(str(f["path"]), bytes(saved.stdout))
        if merged is None or merged == current:
            return False
        return self._put_back(target, current, merged)

    def _head_blobs(self, paths: list[str]) -> dict[str, str]:
        out = git(self.root, "ls-tree", "-z", "HEAD", "--", *paths).stdout.decode(
            "utf-8", "replace"
        )
        blobs = {}
        for entry in filter(None, out.split("\x00")):
            meta, _, path = entry.partition("\t")
            blobs[path] = meta.split()[2]
        return blobs

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
        clear_merge_inputs(self.root)  # a killed writer's merge inputs (notes' text)
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
        restored, kept, kept_refs = [], [], []
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
                data = git(self.root, "cat-file", "blob", f["old"]).stdout if f["old"] else None
                changed = cur_id != f["new"] and cur_id != f.get("between", f["new"])
                if changed and self._take_our_lines_out(target, f):
                    restored.append(f["path"])  # the AI's appended lines out, the typing kept
                    crash_point("recovered_file")
                    continue
                # Under a read lease, as a write is (`_put_back`): the vault lock keeps other
                # writers of ours out, not the owner's editor; one saving into the dead
                # writer's copy between our look and our rename lost its words (issue 27).
                if changed or not self._put_back(target, current, data):
                    # changed by someone since, or being saved: left as found, the text it
                    # held before the write kept aside when it is in no commit
                    kept.append(f["path"])
                    ref = self._keep_aside(f["path"], data, say=False) if data else None
                    if ref is not None:
                        kept_refs.append(f"{f['path']}: `git show {ref}`")
                    continue
                if f["old"] is None:
                    prune_empty_folders(
                        self.root, {posixpath.dirname(f["path"])}
                    )  # folders a killed move made
                restored.append(f["path"])
                crash_point("recovered_file")
        for f in files:  # a save taken in from an old copy, not yet on the note
            folded = bool(f.get("late")) and self._fold_late_save(f, committed)
            if folded and f["path"] not in restored:
                restored.append(f["path"])
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
        if kept_refs:  # (the note named once when it is the only one)
            refs = kept_refs if len(kept) > 1 else [r.partition(": ")[2] for r in kept_refs]
            msg += "; the text it had before the write, in no commit, is kept in git: " + (
                ", ".join(refs)
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


def prune_empty_folders(root: Path, folders: set[str]) -> None:
    """Remove the folders (and those above them) that a move, delete, revert or a rolled-back
    move left empty: git keeps no empty folder, Obsidian would show one. Never the vault
    folder itself."""
    for f in sorted(folders - {""}, key=len, reverse=True):
        while f:
            try:
                (root / f).rmdir()
            except OSError:
                break
            f = posixpath.dirname(f)
