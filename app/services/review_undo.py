"""Take back what the AI did to a note from the review: undo one hunk of its net diff, or revert
the note's unreviewed changes. Plain Python; the review screen and the shell call these."""

from __future__ import annotations

from pathlib import Path

from app.services.actions import ActionError
from app.services.history import (
    Commit,
    FileChange,
)
from app.services.net_diff import WORKTREE, Hunk, NetDiff, _is_owner, net_diff, net_diffs
from app.services.revert import owner_commit, plan_revert, recover, recover_first, revert
from app.services.review import NoteSummary, summaries
from app.services.review_marks import write_marks
from server.core.git_log import ACTION, UNDOES, commit_message, printable
from server.core.state_files import state_dir
from server.write.file_write import FileWrite
from server.write.journal import Journal
from server.write.store import Store

# ------------------------------------------------------------------------------------------------
# undo one hunk, revert a note's unreviewed changes


def _store(root: Path) -> Store:
    return Store(root, Journal(state_dir(root) / "events.jsonl", client="dashboard"))


def plan_undo(diff: NetDiff, index: int) -> tuple[bytes | None, list[Commit]]:
    """The note with the AI's lines in hunk `index` taken back (the owner's kept), and the AI
    commits whose lines go. ActionError when the owner changed lines the AI wrote there."""
    if not 0 <= index < len(diff.hunks):
        raise ActionError(f"{diff.path} has no hunk {index + 1} (it has {len(diff.hunks)})")
    h = diff.hunks[index]
    undone: dict[str, Commit] = {}
    out: list[str] = []
    for i, e in enumerate(diff._elems):
        inside = h.first <= i < h.end
        if not inside:
            if e.removed is None:
                out.append(e.text)
            continue
        if e.origin is not None and e.origin.is_ai and e.removed is not None:
            if _is_owner(e.removed):
                who = e.removed.short if e.removed.sha != WORKTREE else "your unsaved edit"
                raise ActionError(
                    f"{diff.path}: {who} changed lines the AI wrote in hunk {index + 1} "
                    f"({e.text.strip()[:40]!r}); undo refused, nothing changed. Edit the note "
                    "or revert the commits instead."
                )
            continue  # the AI wrote and removed it: nothing to do
        if e.removed is None:
            if e.origin is not None and e.origin.is_ai:
                undone[e.origin.sha] = e.origin  # the AI's line goes
                continue
            out.append(e.text)  # base or owner line: stays
        elif e.removed.is_ai:
            undone[e.removed.sha] = e.removed
            out.append(e.text)  # a line the AI removed comes back (the owner's too)
    if not undone:
        raise ActionError(f"hunk {index + 1} of {diff.path} has no AI lines to undo")
    data = "".join(out).encode("utf-8", "surrogateescape")
    return (data if data or diff.after is not None else None), list(undone.values())


def hunk_text(h: Hunk) -> str:
    """A hunk as the owner saw it: its lines, who wrote each (to check nothing moved since)."""
    return "".join(f"{ln.kind}{ln.commit.sha if ln.commit else ''}\t{ln.text}" for ln in h.lines)


def undo_hunk(
    root: Path, path: str, index: int, since: str = "last", expected: str | None = None
) -> str:
    """Take back the AI's lines in one hunk of the note's net diff, as one owner commit
    (`Vaultwatch-Action: undo`) through the write path. The owner's lines are never touched;
    refused with the reason, and nothing written, when a later change overlaps the AI's.
    `expected` (`hunk_text` of the hunk the owner was shown): refused when the hunk at `index`
    is no longer that one (a write landed since the screen drew it)."""
    store = _store(root)
    with store.locked():
        recover_first(store)  # before the diff: a dead writer's half-write is no owner edit
        diff = net_diff(root, path, since)  # under the lock: the file as it is now
        if expected is not None and (
            index >= len(diff.hunks) or hunk_text(diff.hunks[index]) != expected
        ):
            raise ActionError(
                f"{path} changed since its diff was shown (hunk {index + 1} is not the one you "
                "saw); undo refused, nothing changed. Look at the new diff and undo again."
            )
        new, commits = plan_undo(diff, index)
        names = ", ".join(c.short for c in commits)
        message = commit_message(
            f"Undo AI lines in {printable(path)}",
            [(ACTION, "undo"), *((UNDOES, c.sha) for c in commits)],
            f"Takes back hunk {index + 1} of the review diff ({names}).",
        )
        sha = owner_commit(root, store, [FileWrite(path, path, diff.after, new)], message, "undo")
    _mark_if_settled(root, path)
    return sha


def _mark_if_settled(root: Path, path: str) -> None:
    """A note whose AI changes are all taken back has nothing left to review: no hunk with an
    AI line, or the note back to its reviewed text (an undone replacement still showed the
    AI's removed line beside the owner's restored one, and stayed listed)."""
    review = summaries(root)
    note = next((n for n in review.notes if n.path == path), None)
    if note is None:
        return
    diff = net_diffs(root, [note])[0]
    if not any(h.ai for h in diff.hunks) or diff.after == diff.before:
        write_marks(root, marks_of(note), {c.sha: c.files for c in note.commits})


def marks_of(note: NoteSummary) -> dict[str, list[str]]:
    """The review marks that settle a note: each of its AI commits, the note under the name
    that commit gave it (an older one when the owner moved it since)."""
    return {c.sha: [note.path_in(c.sha)] for c in note.commits}


def revert_note_changes(root: Path, path: str) -> list[FileChange]:
    """What `revert_note` would change, planned and nothing written: the note as it is now
    against the note with its unreviewed AI changes taken back (the confirm showed the commits
    and not the lines they take back). ActionError, with the reason, when it cannot apply."""
    note = _to_revert(root, path)
    recover(root)  # a dead writer's half-write is no part of what the owner is shown
    return plan_revert(root, [c.sha for c in note.commits], path).changes()


def revert_note(root: Path, path: str) -> str:
    """Revert every unreviewed AI change to this note as one owner commit (only this note's
    part of each commit; the owner's commits stay). The reverted changes count as reviewed."""
    note = _to_revert(root, path)
    sha = revert(root, [c.sha for c in note.commits], path)
    write_marks(root, marks_of(note), {c.sha: c.files for c in note.commits})
    return sha


def _to_revert(root: Path, path: str) -> NoteSummary:
    """The note's unreviewed AI changes, when a revert can take them back."""
    note = next((n for n in summaries(root).notes if n.path == path), None)
    if note is None:
        raise ActionError(f"no unreviewed AI changes to {path}; nothing to revert")
    if note.moved_from is not None:
        # a revert takes back each commit's change to the path it wrote, and the note is no
        # longer there: refused before anything is written, with what works instead
        raise ActionError(
            f"{path} was moved from {note.moved_from} after the AI changed it, and a revert "
            "works on the path each commit wrote; nothing changed. Undo its hunks one by one "
            "(u) or edit the note."
        )
    return note
