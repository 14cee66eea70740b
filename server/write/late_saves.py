"""A save the owner made while a write replaced the note, taken in instead of put back over: the
AI's appending change merged onto the save (`merge3`), the save becoming the owner's snapshot,
the note on disk landed with any newer save merged in (issue 27). Without this, an editor that
re-read the AI's uncommitted text saved it back as the owner's, and a save into a note's old
copy was lost when the owner saved again by its path. `Store` is built on it."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path

from server.core.faults import crash_point
from server.core.git_run import GitError, human_identity
from server.core.state_files import write_state
from server.write.commits import blob_id, commit_objects
from server.write.file_write import FileWrite, mergeable
from server.write.leases import Replacing, WriteRace, read_stable
from server.write.merge3 import merge_lines, take_back
from server.write.snapshot import Snapshots, _snapshot_message
from server.write.temp_files import _temp_name, _write_temp

log = logging.getLogger("vaultwatch.store")

# How long a save folded in is tried on a note an editor keeps saving (see Store._land).
LAND_S = 2.0


class LateSaves(Snapshots):
    # -- a save that landed in the old copy -----------------------------------------------------

    def _replace(self, replacing: Replacing, w: FileWrite, temps: list[str | None], i: int) -> bool:
        """Rename the write's temp file over its note under the write rule. A note the owner
        saved since the plan (read here as one state, whole: not a save caught half-way) is
        not a reason to plan the whole write again: the AI's change is merged onto the save
        (`merge_lines`) and that is renamed over instead, the save becoming the owner's
        snapshot. An editor saving 50 times a second changed the note in every attempt's
        window under load (23-30 on 2 cores), and five attempts in a row all failed (issue
        27). True when so merged (`w` then holds the save and the merge). WriteRace as before
        for a pinned write, a create or delete, a note being saved this moment, and a change
        on the AI's own lines."""
        target = self.root / w.disk
        planned, change = w.old, w.new  # the AI's change: planned -> change
        deadline = time.monotonic() + LAND_S
        merged = False
        while True:
            try:
                replacing.replace(target, w.rel, w.old, w.stamp, temps[i])
                break
            except WriteRace as race:
                saved = race.actual
                if saved == b"" and w.old and mergeable(w) and race.restore is None:
                    # emptied a moment ago: a truncate-then-write save half-way, waited for
                    try:
                        saved, _ = read_stable(target, w.rel)
                    except WriteRace:
                        raise race from None
                if (
                    not mergeable(w)
                    or race.restore is not None
                    or saved is None
                    or planned is None
                    or change is None
                    or (not saved and planned)  # emptied: a truncate-then-write half-way
                    or time.monotonic() >= deadline
                ):
                    raise
                on = merge_lines(self.root, planned, saved, change)
                if on is None or on == saved:
                    # (the save is the AI's text byte for byte: taken as merged, the AI's
                    # commit was empty and the owner's snapshot held the AI's line)
                    raise
            # the save, then the AI's change on it; tried again if saved again meanwhile
            self._store_blobs([saved])  # recovery puts it back from git
            crash_point("merge_taken")  # the save stored in git; intent and disk as they were
            old_tmp, temps[i] = temps[i], _temp_name(self.root, target)
            if old_tmp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(old_tmp)
            w.old, w.new, w.stamp = saved, on, None
            self._seal_intent([w], {}, temps={w.rel: temps[i]})  # before the temp file exists
            _write_temp(str(temps[i]), target, on)
            crash_point("merge_temp")  # the merge in its temp file, named by the intent
            merged = True
        if merged:
            self._store_blobs([w.new or b""])
        return merged

    def _take_late_saves(
        self,
        late: list[tuple[str, bytes | None, bytes]],
        writes: list[FileWrite],
        undo_as: dict[str, tuple[bytes, bytes | None]],
    ) -> list[FileWrite]:
        """Someone saved into a note's old copy between our check and our rename (`late`: what
        each old copy holds). Putting that save back over our copy and planning again showed
        the AI's text on disk for a moment, uncommitted: an editor that read it then saved it
        back into the note, and the next write committed the AI's line as the owner's snapshot
        (issue 27); and when the owner saved again by the note's path meanwhile, the put-back
        was declined and the save in the old copy lost ("lost keystroke").

        Instead the save is taken as made just before the write: the owner's snapshot holds
        it, the AI's commit holds the AI's change merged onto it (`merge_lines`: both sides'
        added lines are kept, the owner's first), and the note on disk becomes that, with
        whatever was saved by its path since merged in too (`_land`). A change the merge
        cannot decide (both sides changed the same lines), a pinned write, a create or a
        delete raises WriteRace with the save to put back, as before. Returns the writes so
        changed (`_rebuild` makes their commits again). Caller holds git's index lock."""
        by_rel = {w.rel: w for w in writes}
        self._name_late_saves([(by_rel[r].disk, old, s) for r, old, s in late if old is not None])
        crash_point("late_taken")  # the saves named in the intent; disk as it was
        merged: list[tuple[FileWrite, bytes, bytes]] = []  # (write, late save, AI on it)
        for rel, old, saved in late:
            w = by_rel[rel]
            on = None
            if old is not None and mergeable(w):
                on = merge_lines(self.root, old, saved, w.new or b"")
            if on is None or on == saved:  # the AI's change gone in it: see `_replace`
                raise WriteRace(rel, old, saved, restore=saved)
            merged.append((w, saved, on))
        self._store_blobs([on for _, _, on in merged])
        # the note on disk first (nothing is committed yet): the AI's change on the save, and
        # any save made since by the note's path
        for w, saved, on in merged:
            assert w.new is not None
            try:
                landed = self._land(self.root / w.disk, w.rel, w.new, on)
            except WriteRace as race:  # undone: the save goes back (merged if saved since)
                raise WriteRace(w.rel, w.old, saved, restore=saved, reason=race.reason) from race
            # undone from here (the branch failed to move): the owner's save, with the saves
            # since, comes back (or what is there is left, if that does not merge)
            # (git's merge alone refused the owner typing just after the AI's lines, and the
            # note was left with the AI's text: uncommitted, so a crash's recovery took it for
            # untouched and the next write snapshotted the AI's line as the owner's)
            back = saved if landed == on else merge_lines(self.root, on, landed, saved)
            if back is None:
                back = take_back(saved, on, landed)
            if back is not None and back not in (saved, on):
                self._store_blobs([back])  # recovery after a crash puts it back from git
                crash_point("late_back_stored")
            undo_as[w.rel] = (landed, back if back is not None else landed)
            w.old, w.new = saved, on
        return [w for w, _, _ in merged]

    def _rebuild(
        self,
        rebased: list[FileWrite],
        writes: list[FileWrite],
        snapped: list[tuple[str, str | None]],
        head_blobs: dict[str, str],
        head: str,
        message: str,
        author: tuple[str, str],
    ) -> list[str]:
        """The commits made again for writes planned again on an owner's save (`rebased`: each
        now holds the save as `old` and the AI's change on it as `new`): the owner's snapshot
        holds the save, the AI's commit its change on it. `snapped` is updated to what the
        snapshot holds. Returns the commits (snapshot, then the AI's)."""
        snap = dict(snapped)
        for w in rebased:
            assert w.old is not None
            if blob_id(w.old) == head_blobs.get(w.disk):
                snap.pop(w.disk, None)
            else:
                snap[w.disk] = blob_id(w.old)
        entries = [(w.disk, blob_id(w.new) if w.new is not None else None) for w in writes]
        steps = [(entries, message, author)]
        if snap:
            who = human_identity(self.root)
            steps.insert(0, (list(snap.items()), _snapshot_message(list(snap)), who))
        snapped[:] = list(snap.items())  # the journal names the snapshot that lands
        shas = commit_objects(self.root, head, steps)
        crash_point("merge_rebuilt")  # the commits made again, the branch not moved
        return shas

    def _keep_saves_since(self, replacing: Replacing, writes: list[FileWrite]) -> None:
        """The commit made: a save that reached an old copy after our look at it (see
        `Replacing.saved_since`) is merged into the note on disk (`_land`), left for the owner's
        next snapshot, as any edit they make after a write. A save that does not merge (the
        owner changed a line next to the AI's) lands whole, as the same save by the note's path
        would have: the AI's lines stay in their commit, and the review shows the owner's save
        taking them out; dropped, the owner's edit was in no file and no commit. Never fails
        the write (it has committed); what cannot be landed is logged."""
        by_rel = {w.rel: w for w in writes}
        try:
            for rel, seen, saved in replacing.saved_since():
                w = by_rel[rel]
                if w.new is None:
                    continue  # a note removed by the owner's action: their save is theirs
                try:  # (not named, it is still landed: only a crash from here would lose it)
                    self._name_late_saves([(w.disk, seen, saved)])
                except (OSError, GitError, ValueError) as exc:
                    log.warning("a save into the old copy of %s not named: %s", rel, exc)
                crash_point("since_taken")  # the save named in the intent; disk as it was
                want = merge_lines(self.root, seen, saved, w.new)
                if want is None:
                    log.warning("a save into the old copy of %s does not merge; landed whole", rel)
                    want = saved
                self._land(self.root / w.disk, rel, w.new, want)
                crash_point("kept_since")  # committed; the save since merged into the note
        except (OSError, GitError, WriteRace) as exc:
            log.warning("a save into an old copy was not kept: %s", exc)

    def _name_late_saves(self, saves: list[tuple[str, bytes, bytes]]) -> None:
        """Each save taken in from an old copy ((disk path, what the copy held before, the
        save)) stored in git and named in the intent (`late`), before anything is done with
        it: a writer killed from here until the merge holding it is on the note leaves it for
        recovery to merge into the note (`Recovery._fold_late_save`). Without it, the save
        was in no file and no commit once the writer died: the old copy is no longer the
        note, and nobody else can read it."""
        if not saves:
            return
        self._store_blobs([d for _, base, saved in saves for d in (base, saved)])
        late = {p: [blob_id(base), blob_id(saved)] for p, base, saved in saves}
        intent = json.loads(self.intent_path.read_text(encoding="utf-8"))
        for f in intent["files"]:
            if f["path"] in late:
                f["late"] = late[f["path"]]
        write_state(self.intent_path, json.dumps(intent).encode())

    def _seal_intent(
        self,
        writes: list[FileWrite],
        undo_as: dict[str, tuple[bytes, bytes | None]],
        temps: dict[str, str | None] | None = None,
    ) -> None:
        """The intent rewritten for writes planned again on an owner's save: recovery after a
        crash takes back from a note only what landed of ours (`new`), putting back the
        owner's save (`old`), and knows the commit by its blobs."""
        intent = json.loads(self.intent_path.read_text(encoding="utf-8"))
        by_path = {w.disk: w for w in writes}
        for f in intent["files"]:
            w = by_path.get(f["path"])
            if w is None:
                continue
            ours, back = undo_as.get(w.rel, (w.new, w.old))
            f["old"] = blob_id(back) if back is not None else None
            f["new"] = blob_id(ours) if ours is not None else None
            if temps and w.rel in temps:
                tmp = temps[w.rel]
                f["tmp"] = os.path.relpath(tmp, self.root) if tmp else None
            if temps is None:
                f.pop("late", None)  # in `old` now, with what was saved since
        if temps is None:
            intent["commit"] = [
                [w.disk, blob_id(w.new) if w.new is not None else None] for w in writes
            ]
        write_state(self.intent_path, json.dumps(intent).encode())
        crash_point("merge_sealed")  # the intent names the save and the merge

    def _intent_temp(self, target: Path, tmp: str) -> None:
        """Name `tmp` as the temp file of the note `target` in the intent (the write's own was
        renamed over it already): a writer killed while landing a save left it, with the
        note's text, where only the next server start found it, not the next owner action."""
        intent = json.loads(self.intent_path.read_text(encoding="utf-8"))
        disk = target.relative_to(self.root).as_posix()
        for f in intent["files"]:
            if f["path"] == disk:
                f["tmp"] = os.path.relpath(tmp, self.root)
        write_state(self.intent_path, json.dumps(intent).encode())

    def _land(self, target: Path, rel: str, ours: bytes, want: bytes) -> bytes:
        """Replace our own copy (`ours`) of a note with `want`, under the write rule; a save
        made since by the note's path (the owner typing on) is merged into it, and a save
        into the copy replaced is folded in again, a few times at most. Returns what the note
        holds now; WriteRace when it cannot be done without losing a save. A note saved again
        between our read and our rename (an editor typing on) is read and merged again, for
        LAND_S at most: given up at the first change, the save in the old copy was lost."""
        deadline = time.monotonic() + LAND_S
        while time.monotonic() < deadline:
            current, stamp = read_stable(target, rel)
            if current is None:
                raise WriteRace(rel, ours, None, reason="was removed while it was written")
            out = want if current == ours else merge_lines(self.root, ours, want, current)
            if out is None:
                raise WriteRace(rel, ours, current, reason="was changed on the same lines")
            tmp = _temp_name(self.root, target)
            self._intent_temp(target, tmp)  # before it exists: recovery removes it
            again = Replacing()
            try:
                _write_temp(tmp, target, out)
                crash_point("land_temp")  # the merge in a temp file the intent names
                again.replace(target, rel, current, stamp, tmp)
                crash_point("land_renamed")  # the note holds the merge
                more = again.late_saves()
            except WriteRace as race:
                if race.actual is None and race.reason is not None:
                    raise  # held by another program, or gone: not a save to merge
                continue  # saved again since we read it: read and merge again
            finally:
                again.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            if not more:
                return out
            _, _, saved = more[0]
            folded = merge_lines(self.root, current, saved, out)
            if folded is None:
                raise WriteRace(rel, current, saved, restore=saved)
            ours, want = out, folded
        raise WriteRace(rel, ours, None, reason="kept changing while it was written")
