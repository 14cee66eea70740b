"""Revert commits as the owner, without `git revert`. No Textual here: the dashboard's screens
and a shell command call the same three functions (`plan_revert`, `revert`, `abort_operation`).

`git revert` works in the shared working tree and index: it can stop half-way (REVERT_HEAD,
after which every AI write is refused), and its commit takes whatever the owner had staged.
Here a revert is computed, not run:

  for each target commit, newest first, and each file it changed:
      a 3-way merge of the file as it is now (ours) with the commit's change taken back
      (base = the file after the commit, theirs = the file before it), `git merge-file` on bytes
  a conflict anywhere: nothing is written; the reason names the later commits whose changed
      lines overlap the lines the revert needs (each one a "blocker" the owner may tick)
  otherwise: the results go through the server's write path (lock, the owner's pending edits
      snapshotted, an intent record for crash recovery, temp file + rename, one commit of
      exactly these paths through a private index, compare-and-swap on the branch), as the
      owner, with `Vaultwatch-Action: revert` and one `Vaultwatch-Reverts: <sha>` per target.

So a revert never leaves git mid-operation, never commits anything but itself, and fails with the
vault unchanged and a reason. A revert is a commit like any other: reverting it brings the change
back, and the "reverted by" marks follow (`history.reverted_by`).
"""

from __future__ import annotations

import posixpath
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from app.services.actions import ActionError
from app.services.history import (
    Commit,
    FileChange,
    cat_blobs,
    is_ancestor,
    read_commits,
    reverted_by,
)
from server.core.git_log import ACTION, REVERTS, REVERTS_PATH, commit_message, printable
from server.core.git_run import GitError, git, human_identity
from server.core.gitrepo import operation_in_progress, write_lock
from server.core.state_files import make_state_dir, state_dir
from server.write.file_write import FileWrite
from server.write.journal import Journal
from server.write.leases import WriteRace
from server.write.recovery import prune_empty_folders
from server.write.store import Store
from server.write.store_errors import StoreError

# What `r` offers: AI commits, and the owner's own dashboard actions (a revert, a move, a new
# note, a delete are undone like any commit). The owner's hand edits are never offered; they are
# reverted only when ticked as a blocker.
UNDOABLE_ACTIONS = ("revert", "move", "create", "remove")


def offered(c: Commit) -> bool:
    return c.is_ai or c.action in UNDOABLE_ACTIONS


class NothingToRevert(ActionError):
    """The vault already lacks the commit's change; `by` is the revert that undid it, if known."""

    def __init__(self, message: str, by: str | None = None) -> None:
        super().__init__(message)
        self.by = by


@dataclass
class RevertConflict(ActionError):
    """The revert does not apply: later changes touch the lines it needs. Nothing was written.
    `blockers` are the later commits in the way, newest first (the owner's among them are
    never reverted unless ticked); `uncommitted` the files whose unsaved edits are in the way."""

    targets: list[Commit]
    blockers: list[Commit]
    paths: list[str] = field(default_factory=list)
    uncommitted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = []
        if self.blockers:
            names = ", ".join(f"{c.short} {c.subject!r} ({c.author})" for c in self.blockers)
            parts.append(f"later commits changed the same lines: {names}")
        if self.uncommitted:
            parts.append(
                f"your unsaved edits to {', '.join(self.uncommitted)} touch the same lines"
            )
        if not parts:
            parts.append(f"{', '.join(self.paths)} changed since in a way the revert cannot undo")
        return "; ".join(parts) + ". Nothing was changed."


@dataclass(frozen=True)
class FileRevert:
    path: str
    before: bytes | None  # the file now (None: absent)
    after: bytes | None  # what the revert leaves (None: the file is deleted)


@dataclass
class RevertPlan:
    targets: list[Commit]  # newest first: undone in the reverse order of making
    files: list[FileRevert]
    path: str | None = None  # only the targets' change to this file is taken back

    def changes(self) -> list[FileChange]:
        """The diff this revert applies (not the diff of the commit it undoes)."""
        out = []
        for f in self.files:
            status = "A" if f.before is None else "D" if f.after is None else "M"
            out.append(FileChange(f.path, status, None, _text(f.before), _text(f.after)))
        return out

    @property
    def message(self) -> str:
        if len(self.targets) == 1:
            t = self.targets[0]
            subject, body = f'Revert "{t.subject}"', f"This reverts commit {t.sha}.\n"
        else:
            subject = f"Revert {len(self.targets)} commits"
            body = "".join(f"This reverts commit {t.sha} ({t.subject}).\n" for t in self.targets)
        # A target whose change to other files stays is not "reverted" (its mark would claim
        # the whole commit undone): it gets the path-restricted trailer instead.
        where = printable(self.path or "")
        trailers = [(ACTION, "revert")] + [
            (REVERTS, t.sha)
            if self.path is None or set(t.files) <= {self.path}
            else (REVERTS_PATH, f"{t.sha} {where}")
            for t in self.targets
        ]
        if self.path is not None:
            subject += f" in {where}"
        return commit_message(subject, trailers, body)


def _text(data: bytes | None) -> str:
    return data.decode("utf-8", "replace") if data is not None else ""


# ------------------------------------------------------------------------------------------------
# planning (nothing written)


def plan_revert(root: Path, shas: list[str], path: str | None = None) -> RevertPlan:
    """What reverting these commits would write, computed against the files as they are now;
    with `path`, only their change to that one file. Raises NothingToRevert, or RevertConflict
    with the blockers; writes nothing."""
    if not shas:
        raise ActionError("nothing to revert")
    try:  # the write path's own checks: a preview says at once what the revert would hit
        _store(root).check_repo()
    except StoreError as exc:
        raise ActionError(exc.for_owner) from None
    history, targets = _history(root, shas)
    undone = reverted_by(history)
    for t in targets:
        if t.sha in undone:
            by = undone[t.sha]
            raise NothingToRevert(
                f"{t.short} is already reverted by {by[:8]}; nothing to undo "
                f"(revert {by[:8]} to bring its change back)",
                by,
            )
    if path is not None:
        for t in targets:
            if path not in t.files:
                raise ActionError(f"{t.short} did not change {path}; nothing to revert there")

    def files_of(t: Commit) -> list[str]:
        return [f for f in t.files if path is None or f == path]

    paths = sorted({f for t in targets for f in files_of(t)})
    now = {p: _read(root, p) for p in paths}
    state = dict(now)
    specs = [s for t in targets for f in files_of(t) for s in (f"{t.sha}^:{f}", f"{t.sha}:{f}")]
    blobs = iter(cat_blobs(root, specs))
    conflicts: list[tuple[Commit, str]] = []
    with tempfile.TemporaryDirectory(dir=_scratch(root)) as tmp:
        for t in targets:
            for f in files_of(t):
                before, after = next(blobs), next(blobs)
                try:
                    state[f] = _take_back(Path(tmp), state[f], after, before)
                except _Conflict:
                    conflicts.append((t, f))
    if conflicts:
        blockers, uncommitted = _blockers(root, history, targets, conflicts)
        raise RevertConflict(targets, blockers, sorted({f for _, f in conflicts}), uncommitted)
    files = [FileRevert(p, now[p], state[p]) for p in paths if state[p] != now[p]]
    if not files:
        later = _mentioned_by(root, targets[0])
        names = ", ".join(t.short for t in targets)
        raise NothingToRevert(
            f"nothing to undo: the vault no longer has the change {names} made"
            + (f" (undone by {later[:8]})" if later else ""),
            later,
        )
    return RevertPlan(targets, files, path)


def _history(root: Path, shas: list[str]) -> tuple[list[Commit], list[Commit]]:
    """(the oldest target and every commit after it, newest first; the targets, newest
    first). Only that part of the history is read: whatever reverted a target, and whatever
    is in its way, came after it (reverting a recent commit reads a few, not the vault's all)."""
    full: list[str] = []
    for s in shas:
        r = git(
            root, "rev-parse", "-q", "--verify", "--end-of-options", f"{s}^{{commit}}", check=False
        )
        sha = r.stdout.decode().strip()
        if r.returncode != 0 or not s or not is_ancestor(root, sha, "HEAD"):
            raise ActionError(f"{s} is not a commit on this branch")
        full.append(sha)
    newer = {
        sha: int(git(root, "rev-list", "--count", f"{sha}..HEAD").stdout.decode()) for sha in full
    }
    oldest = max(full, key=lambda sha: newer[sha])
    history = read_commits(root, rev=f"{oldest}..HEAD") + read_commits(root, limit=1, rev=oldest)
    order = {c.sha: i for i, c in enumerate(history)}  # 0 = newest
    targets = [c for c in history if c.sha in set(full)]
    return history, sorted(targets, key=lambda c: order[c.sha])


def _read(root: Path, rel: str) -> bytes | None:
    try:
        return (root / rel).read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _scratch(root: Path) -> Path:
    """Merge inputs stay inside the vault's .git (a private note's text never goes to /tmp)."""
    return make_state_dir(state_dir(root))  # never a link: the text would go where it points


class _Conflict(Exception):
    pass


def _take_back(
    tmp: Path, ours: bytes | None, base: bytes | None, theirs: bytes | None
) -> bytes | None:
    """The file `ours` with the change base -> theirs taken back; _Conflict if it does not go."""
    if ours == theirs:
        return ours  # already as it was before the commit
    if ours == base:
        return theirs  # untouched since: the old content (or no file) comes back
    if ours is None or base is None or theirs is None:
        raise _Conflict  # created, deleted or recreated since: the owner decides
    if b"\0" in ours or b"\0" in base or b"\0" in theirs:
        raise _Conflict  # not text: no line merge
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        (tmp / name).write_bytes(data)
    r = git(
        tmp,
        "merge-file",
        "-p",
        "--quiet",
        str(tmp / "ours"),
        str(tmp / "base"),
        str(tmp / "theirs"),
        check=False,
    )
    if r.returncode != 0:  # the number of conflicts, or an error
        raise _Conflict
    return r.stdout


# -- blockers: the later commits whose changed lines overlap the lines the revert needs ----------

Range = tuple[int, int]  # half-open, 0-based line positions; (p, p) is the gap before line p
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def _hunks(diff: bytes) -> list[tuple[Range, Range]]:
    """(old range, new range) of each hunk of a `-U0` diff."""
    out = []
    for m in _HUNK.finditer(diff):
        a, b = int(m[1]), int(m[2]) if m[2] is not None else 1
        c, d = int(m[3]), int(m[4]) if m[4] is not None else 1
        out.append(((a - 1, a - 1 + b) if b else (a, a), (c - 1, c - 1 + d) if d else (c, c)))
    return out


def _touch(x: Range, y: Range) -> bool:
    # adjacent counts: git's merge treats changes that touch as one conflict
    return x[0] <= y[1] and y[0] <= x[1]


def _shift(p: int, hunks: list[tuple[Range, Range]]) -> int:
    """Where line position `p` of the old file is in the new one."""
    delta = 0
    for old, new in hunks:
        if p < old[0]:
            break
        if p >= old[1]:
            delta = new[1] - old[1]
        else:
            return new[0]
    return p + delta


def _carry(needed: list[Range], hunks: list[tuple[Range, Range]]) -> tuple[list[Range], bool]:
    """The needed ranges in the next version of the file, and whether this change touched them
    (a changed line the revert needs is in the way, and so is anything later on that line)."""
    touched = False
    out = []
    for r in needed:
        lo, hi = _shift(r[0], hunks), max(_shift(r[0], hunks), _shift(r[1], hunks))
        for old, new in hunks:
            if _touch(r, old):
                touched = True
                lo, hi = min(lo, new[0]), max(hi, new[1])
        out.append((lo, hi))
    return out, touched


def _blockers(
    root: Path, history: list[Commit], targets: list[Commit], conflicts: list[tuple[Commit, str]]
) -> tuple[list[Commit], list[str]]:
    wanted = {t.sha for t in targets}
    found: set[str] = set()
    uncommitted: list[str] = []
    for t, f in conflicts:
        own = git(
            root,
            "diff-tree",
            "-p",
            "-U0",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--root",
            "--no-commit-id",
            t.sha,
            "--",
            f,
        ).stdout
        needed = [new for _, new in _hunks(own)]
        log = git(
            root,
            "log",
            "--reverse",
            "-p",
            "-U0",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--format=%x1e%H",
            f"{t.sha}..HEAD",
            "--",
            f,
        ).stdout
        for rec in log.split(b"\x1e")[1:]:
            sha, _, diff = rec.partition(b"\n")
            needed, touched = _carry(needed, _hunks(diff))
            if touched and sha.decode() not in wanted:
                found.add(sha.decode())
        # diff-index, not `git diff`: the porcelain refreshes (rewrites) git's index on the
        # side, taking .git/index.lock from the owner's git and the server's commits
        pending = git(
            root, "diff-index", "-p", "-U0", "--no-renames", "--no-color", "HEAD", "--", f
        ).stdout
        in_head = git(root, "cat-file", "-e", f"HEAD:{f}", check=False).returncode == 0
        touched = _carry(needed, _hunks(pending))[1] or (not in_head and (root / f).exists())
        if touched and f not in uncommitted:
            uncommitted.append(f)
    # A blocker already reverted cancels out with its revert: neither is in the way any more.
    undone = reverted_by(history)
    cancelled = set(undone) | set(undone.values())
    return [c for c in history if c.sha in found and c.sha not in cancelled], uncommitted


def _mentioned_by(root: Path, target: Commit) -> str | None:
    """The newest later commit whose message names this one (a revert made with git itself)."""
    r = git(
        root,
        "log",
        "-F",
        f"--grep={target.sha}",
        "--format=%H",
        "-n1",
        f"{target.sha}..HEAD",
        check=False,
    )
    return r.stdout.decode().strip() or None


# ------------------------------------------------------------------------------------------------
# applying


def revert(root: Path, shas: list[str], path: str | None = None) -> str:
    """Revert these commits (undone newest first) as one commit by the owner, or with `path`
    only their change to that file. Returns the new commit's sha. Raises NothingToRevert, RevertConflict or ActionError, and then nothing was
    written; the owner's pending edits to the files involved are committed first (as the
    owner), as before any write."""
    store = _store(root)
    with store.locked():
        recover_first(store)  # a dead writer's half-write is put back, not reverted as ours
        plan = plan_revert(root, shas, path)  # again, under the lock: git's state and the files now
        writes = [FileWrite(f.path, f.path, f.before, f.after) for f in plan.files]
        sha = owner_commit(root, store, writes, plan.message, "revert")
        prune_empty_folders(
            root, {posixpath.dirname(f.path) for f in plan.files if f.after is None}
        )
    return sha


def recover_first(store: Store) -> None:
    """What every owner action does first under the lock (Store.begin, the AI's writes' own
    first step): git in a state that allows a commit, and whatever a writer killed half-way
    left (the AI's or an owner action's) rolled back, so it is never taken for the owner's
    pending edit and committed as theirs. Its refusals in the owner's words."""
    try:
        store.begin()
    except StoreError as exc:
        raise ActionError(exc.for_owner) from None
    except GitError as exc:
        raise ActionError(exc.message) from None


def recover(root: Path) -> None:
    """Put right what a dead writer left (Store.recover_locked, under the lock) before an owner
    action is previewed: a killed AI write's half-written lines would otherwise show in the
    preview as the owner's text, and the action that follows be refused as "changed since"."""
    store = _store(root)
    try:
        with store.locked():
            store.recover_locked()
    except (GitError, OSError) as exc:
        why = exc.message if isinstance(exc, GitError) else (exc.strerror or str(exc))
        raise ActionError(
            f"an interrupted write could not be put back ({why}); nothing was changed. "
            "Restart the dashboard or the server to try again."
        ) from None


def owner_commit(root: Path, store: Store, writes: list[FileWrite], message: str, what: str) -> str:
    """One commit as the owner through the server's write path (lock, snapshot, private index,
    compare-and-swap), its failures said as the owner's reasons. `what` names the action."""
    try:
        return store.apply(writes, message=message, author=human_identity(root), tool=what)
    except WriteRace as exc:
        raise ActionError(
            f"{exc.rel} changed while the {what} was written; it was put back and nothing was "
            "committed. Try again."
        ) from None
    except StoreError as exc:
        raise ActionError(exc.for_owner) from None
    except GitError as exc:
        raise ActionError(exc.message) from None


def _store(root: Path) -> Store:
    return Store(root, Journal(state_dir(root) / "events.jsonl", client="dashboard"))


# ------------------------------------------------------------------------------------------------
# a git operation someone else left half-way


def abort_operation(root: Path) -> str:
    """Abort the merge, revert, cherry-pick or rebase the vault's git is in the middle of (as
    `git <op> --abort` would from a terminal). Returns what was aborted."""
    with write_lock(root):
        busy = operation_in_progress(root)
        if busy is None:
            raise ActionError("git is not in the middle of anything; nothing to abort")
        command, what = busy
        r = git(root, command, "--abort", check=False)
        if r.returncode != 0 or operation_in_progress(root) is not None:
            said = (r.stderr or r.stdout).decode(errors="replace").strip()
            raise ActionError(f"git {command} --abort failed: {said or 'it is still in progress'}")
    return what
