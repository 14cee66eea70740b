"""The owner's uncommitted edits to the paths a write is about to change, committed first as
the owner's (the snapshot): read as they settle, compared with HEAD as git would, never a save
caught half-way."""

from __future__ import annotations

import logging

from server.core.git_log import ACTION, commit_message
from server.core.git_run import GitError, human_identity
from server.write.commits import _hash_as_git_stores, _hash_files, blob_id, commit_blobs
from server.write.journal import Commit
from server.write.leases import Stamp, WriteRace, _still, read_stable
from server.write.recovery import Recovery
from server.write.store_errors import StoreError

log = logging.getLogger("vaultwatch.store")


class Snapshots(Recovery):
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


def _snapshot_message(changed: list[str]) -> str:
    subject = "snapshot: " + (changed[0] if len(changed) == 1 else f"{len(changed)} files")
    return commit_message(subject, {ACTION: "snapshot"})
