"""The crash matrix (issue 27): every path that writes, killed at every step it takes.

SQLite's crash tests are the model: run the operation once and list every step it reaches (the
fault hooks' `trace`), then for each step run it again in a fresh copy of the vault and kill the
process (SIGKILL, no clean-up of any kind) exactly there. After each kill: restart (the next
server start, or the next owner action, taking turns), check the invariants, make one more
write, check them again. The invariants, each checked by code:

- `git fsck --strict` is clean;
- nothing is staged (`git diff --cached` is empty), no lock, intent or temp file is left;
- every path the run touched has HEAD's blob on disk (the owner's uncommitted edit excepted,
  which stays on disk by design), and the owner's unsaved line is never lost;
- the killed operation happened whole or not at all: its files are all as before or all as
  after the uninterrupted run;
- each new commit changes exactly the paths the same commit (by its message) changed in the
  uninterrupted run, or the one path of the write after the restart; no commit by the owner
  carries a line the AI wrote in the killed operation;
- the journal has one `recovered` event for each write a kill left half-done, naming only its
  paths, and none when nothing was left.

The late-save merge (an append meeting an owner's save) has entries of its own: an editor wrapped
around the writer's fault hooks saves the note at a fixed step of every run, so the merge is
taken each time and the kills land inside it too; the owner's late line is checked besides.

The killed writer is a fork of the test process (the real write path, no import cost), so the
whole matrix stays within CI's budget.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.services.create_action import NewNote, apply_create
from app.services.move_action import apply_move, plan_move
from app.services.remove_action import apply_remove, plan_remove
from app.services.revert import revert
from app.services.review import mark_reviewed
from app.services.review_undo import revert_note, undo_hunk
from server.core.gitrepo import ensure_repo
from server.notes.note import content_hash
from server.vault import Vault
from server.write.journal import read_all

from .conftest import no_lease, write_files
from .crashes import ai_write, run_child

OWNER_LINE = "- the owner's unsaved line"
AI_MARK = "AI-MARK"  # in every line the AI writes here: an owner commit must never carry one
FILES = {
    "notes/n0.md": "# N0\n\n## Log\n- before\n",
    "notes/n1.md": "# N1\n\n## Log\n- before\n",
    "notes/n2.md": "# N2\n\n## Log\n- before\n",
    "notes/n3.md": "---\nstatus: open\n---\n# N3\n\n## Log\n- before\n",
    "folder/f0.md": "# F0\n\nSee [F1](f1.md).\n",
    "folder/f1.md": "# F1\n",
    "index.md": "# Index\n\n- [F0](folder/f0.md)\n",
    "other.md": "# Other\n\n## Log\n",
}


def _replace(root: Path) -> None:
    data = (root / "notes/n2.md").read_bytes()
    content = f"# N2\n\n## Log\n- {AI_MARK} replaced\n"
    args = {"path": "notes/n2.md", "content": content, "hash": content_hash(data)}
    ai_write(root, "replace_doc", [("replace_doc", args)])


def _append(path: str, line: str) -> tuple[str, dict[str, Any]]:
    return ("append_section", {"path": path, "heading": "Log", "content": f"- {AI_MARK} {line}"})


AI_SHA: dict[str, str] = {}  # the template's AI commit (the same sha in every copy)

ACTIONS: dict[str, Callable[[Path], object]] = {
    # the AI's writes
    "create_doc": lambda r: ai_write(
        r,
        "create_doc",
        [("create_doc", {"path": "notes/ai-new.md", "body": f"# AI new\n\n- {AI_MARK} created\n"})],
    ),
    # the owner's pending edit to n0 is committed first, as theirs (the snapshot)
    "append_section+snapshot": lambda r: ai_write(
        r, "append_section", [_append("notes/n0.md", "x")]
    ),
    "edit_text": lambda r: ai_write(
        r,
        "edit_text",
        [("edit_text", {"path": "notes/n2.md", "old": "- before", "new": f"- {AI_MARK} edited"})],
    ),
    "update_frontmatter": lambda r: ai_write(
        r,
        "update_frontmatter",
        [("update_frontmatter", {"path": "notes/n3.md", "set": {"status": AI_MARK}})],
    ),
    "replace_doc": _replace,
    "batch": lambda r: ai_write(
        r,
        "batch",
        [
            _append("notes/n1.md", "b1"),
            _append("notes/n2.md", "b2"),
            _append("notes/n1.md", "b3"),
            ("create_doc", {"path": "notes/batch-new.md", "body": f"# B\n\n- {AI_MARK} b\n"}),
        ],
        "a batch",
    ),
    # the owner's actions
    "revert": lambda r: revert(r, [AI_SHA["sha"]]),
    "undo_hunk": lambda r: undo_hunk(r, "notes/n1.md", 0),
    "revert_note": lambda r: revert_note(r, "notes/n1.md"),
    "move_folder": lambda r: apply_move(r, plan_move(r, "folder", "moved")),
    "move_pending_note": lambda r: apply_move(r, plan_move(r, "notes/n0.md", "archive/n0.md")),
    "create": lambda r: apply_create(r, NewNote("notes/owner-new.md", "# Owner new\n")),
    "remove": lambda r: apply_remove(r, plan_remove(r, "notes/n3.md")),
    "mark_reviewed": lambda r: mark_reviewed(r),
}


def blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def run_git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True)


def disk_state(root: Path) -> dict[str, bytes]:
    """Every file in the vault outside .git: path -> bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def head_state(root: Path) -> dict[str, str]:
    out = run_git(root, "ls-tree", "-r", "-z", "HEAD").stdout.decode()
    tree = {}
    for entry in filter(None, out.split("\0")):
        meta, _, path = entry.partition("\t")
        tree[path] = meta.split()[2]
    return tree


def new_commits(root: Path, since: str) -> list[tuple[str, str, bool, frozenset[str]]]:
    """(sha, subject, by the AI, paths changed) of each commit after `since`, oldest first."""
    out = []
    shas = run_git(root, "rev-list", "--reverse", f"{since}..HEAD").stdout.decode().split()
    for sha in shas:
        info = run_git(root, "log", "-1", "--format=%s%x00%(trailers:key=Vaultwatch-Tool)", sha)
        subject, _, tool = info.stdout.decode().partition("\0")
        names = run_git(root, "diff-tree", "-r", "-z", "--no-commit-id", "--name-only", sha)
        paths = frozenset(p for p in names.stdout.decode().split("\0") if p)
        out.append((sha, subject, bool(tool.strip()), paths))
    return out


def added_lines(root: Path, sha: str) -> list[str]:
    diff = run_git(root, "show", "--format=", "--no-renames", sha).stdout.decode()
    return [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


@dataclass
class Reference:
    """What the uninterrupted run did: the steps it reached, the files before and after,
    and each commit's subject with the paths it changed."""

    steps: list[str]
    before: dict[str, bytes]
    after: dict[str, bytes]
    commits: dict[str, frozenset[str]]
    touched: set[str] = field(default_factory=set)
    # what else a kill may leave, by design: whole states of the touched paths (the owner's
    # save with the write rolled back), and texts that are the owner's uncommitted edit
    states: list[dict[str, bytes | None]] = field(default_factory=list)
    pending: set[bytes] = field(default_factory=set)


def make_template(base: Path) -> tuple[Path, str]:
    root = base / "template"
    root.mkdir()
    write_files(root, FILES)
    ensure_repo(root)
    ai_write(root, "append_section", [_append("notes/n1.md", "template line")])  # the one to revert
    sha = run_git(root, "rev-parse", "HEAD").stdout.decode().strip()
    with (root / "notes/n0.md").open("a", encoding="utf-8") as fh:
        fh.write(OWNER_LINE + "\n")  # the owner's pending edit, never committed by hand
    return root, sha


def fresh_copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest


def reference(template: Path, base: Path, name: str) -> Reference:
    root = fresh_copy(template, base / "reference")
    trace = base / "trace.txt"
    start = run_git(root, "rev-parse", "HEAD").stdout.decode().strip()
    before = disk_state(root)
    status = run_child(root, f"trace:{trace}", ACTIONS[name])
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"{name} failed: {status}"
    after = disk_state(root)
    commits = {subject: paths for _, subject, _, paths in new_commits(root, start)}
    assert commits or name == "mark_reviewed", f"{name} committed nothing"
    steps = trace.read_text().split() if trace.exists() else []
    ref = Reference(steps, before, after, commits)
    ref.touched = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    ref.touched |= {p for paths in commits.values() for p in paths}
    return ref


def check(
    root: Path,
    ref: Reference,
    start: str,
    extra: dict[str, str],
    left: int,
    events_before: int,
    where: str,
) -> None:
    """The invariants. `extra`: subject fragment -> the one path a later write commits;
    `left`: how many intents the kill left (each must be journaled as recovered)."""
    fsck = run_git(root, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0, f"{where}: git fsck: {fsck.stderr.decode()}"
    staged = run_git(root, "diff", "--cached", "--name-only").stdout.decode()
    assert staged == "", f"{where}: staged: {staged}"
    state = root / ".git/vaultwatch"
    leftovers = [
        *(root / ".git").glob("index.lock"),
        *state.glob("intent*.json"),
        *state.glob("commit.index.lock"),
        *state.glob("index.next*"),
        *state.glob("index.lock"),
        *state.glob("merge/*"),  # a merge's inputs (merge3.merge_lines)
        *root.rglob("*.vaultwatch-tmp"),
    ]
    assert not leftovers, f"{where}: left behind: {leftovers}"
    disk = disk_state(root)
    tree = head_state(root)
    paths = ref.touched | set(extra.values())
    for p in sorted(paths):
        on_disk = disk.get(p)
        owners_edit = on_disk == ref.before["notes/n0.md"] or on_disk in ref.pending
        if owners_edit and on_disk is not None and tree.get(p) != blob(on_disk):
            continue  # the owner's uncommitted edit, exactly: on disk by design
        assert tree.get(p) == (blob(on_disk) if on_disk is not None else None), (
            f"{where}: {p} on disk differs from HEAD"
        )
    owners = [p for p, d in disk.items() if OWNER_LINE in d.decode()]
    assert owners, f"{where}: the owner's unsaved line is lost"
    # whole or not at all (the owner's snapshot of n0 aside, which may land on its own)
    action = sorted(ref.touched)
    now = [disk.get(p) for p in action]
    was = [ref.before.get(p) for p in action]
    done = [ref.after.get(p) for p in action]
    differ = [p for p, n, b in zip(action, now, was, strict=True) if n != b]
    also = [[s.get(p, ref.before.get(p)) for p in action] for s in ref.states]
    assert now in (was, done, *also), f"{where}: half done: {differ} of {action} changed"
    for sha, subject, by_ai, changed in new_commits(root, start):
        later = [p for frag, p in extra.items() if frag in subject]
        if later:
            assert changed == {later[0]}, f"{where}: {subject!r} changed {sorted(changed)}"
        else:
            assert subject in ref.commits, f"{where}: unexpected commit {subject!r}"
            assert changed == ref.commits[subject], (
                f"{where}: {subject!r} changed {sorted(changed)}, "
                f"not {sorted(ref.commits[subject])}"
            )
        if not by_ai:
            carried = [ln for ln in added_lines(root, sha) if AI_MARK in ln]
            assert not carried, f"{where}: owner commit {subject!r} carries the AI's {carried}"
    events = read_all(state / "events.jsonl")[events_before:]
    recovered = [e for e in events if e["kind"] == "recovered"]
    assert len(recovered) == left, f"{where}: {left} intents left, recovered: {recovered}"
    for e in recovered:
        assert set(e["paths"]) <= ref.touched, f"{where}: recovered {e['paths']}"


@dataclass
class Killed:
    """A fresh copy of the template killed at one step and restarted: what `check` needs."""

    root: Path
    start: str  # HEAD before the kill
    events: int  # journal events before the kill
    left: int  # intents the kill left
    extra: dict[str, str]  # commits the restart made: a fragment of the subject -> its path
    how: str  # "server start" or "owner action"


def killed_and_restarted(
    template: Path, case: Path, i: int, fault: str, action: Callable[[Path], object], where: str
) -> Killed:
    """`action` run on a fresh copy of `template` at `case` and SIGKILLed at `fault`, then the
    restart: the next server start (its recovery, as the server runs it) for even `i`, the
    next owner action (which must put right what the dead writer left before it acts) for
    odd, so both entry points meet every step."""
    root = fresh_copy(template, case)
    start = run_git(root, "rev-parse", "HEAD").stdout.decode().strip()
    events = len(read_all(root / ".git/vaultwatch/events.jsonl"))
    status = run_child(root, fault, action)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9, (
        f"{where}: not killed there (status {status})"
    )
    left = len(list((root / ".git/vaultwatch").glob("intent*.json")))
    extra: dict[str, str] = {}
    if i % 2 == 0:
        vault = Vault(root)
        try:
            vault.store.recover()
        finally:
            vault.close()
        how = "server start"
    else:
        apply_create(root, NewNote("after-owner.md", "# After\n"))
        extra["after-owner.md"] = "after-owner.md"
        how = "owner action"
    return Killed(root, start, events, left, extra, how)


# (action, restart by) -> one test each; the restart takes turns between the two entry points
@pytest.mark.slow
@pytest.mark.parametrize("name", list(ACTIONS))
def test_killed_at_every_step(tmp_path: Path, name: str) -> None:
    template, AI_SHA["sha"] = make_template(tmp_path)
    ref = reference(template, tmp_path, name)
    assert ref.steps, f"{name} reached no fault hook"
    seen: Counter[str] = Counter()
    for i, step in enumerate(ref.steps):
        seen[step] += 1
        fault = f"kill:{step}:{seen[step]}"
        where = f"{name} killed at {fault}"
        k = killed_and_restarted(template, tmp_path / f"case{i}", i, fault, ACTIONS[name], where)
        root, start, events, left, extra = k.root, k.start, k.events, k.left, k.extra
        check(root, ref, start, extra, left, events, f"{where}, after the {k.how}")
        ai_write(root, "append_section", [("append_section", {
            "path": "other.md", "heading": "Log", "content": "- the next write"})])  # fmt: skip
        extra["other.md"] = "other.md"
        check(root, ref, start, extra, left, events, f"{where}, after the next write")


# ------------------------------------------------------------------------------------------------
# the late-save merge (late_saves.LateSaves), killed at each of its own steps: an editor saves the
# note the AI appends to at a fixed step of every run (reference and killed alike), so the merge
# is taken every time, and the kill lands at every hook the run then reaches

OWNER_LATE = "- the owner's late line"
KEYSTROKE = "- the owner's keystroke by the path"
N2 = FILES["notes/n2.md"]
SAVED = N2.replace("# N2\n", f"# N2\n{OWNER_LATE}\n")  # not where the AI appends: git merges
AI_LINE = f"- {AI_MARK} merged\n"
MERGE = {
    # saved by the path between the plan and the rename: `_replace` merges onto the save
    "by_the_path": {"merge_inputs", "merge_taken", "merge_sealed", "merge_temp", "merge_rebuilt"},
    # saved into the old copy just after the rename, then a keystroke by the path into the AI's
    # copy: `_take_late_saves` folds the save in, `_land` merges the keystroke, `_seal_intent`
    "into_the_old_copy": {
        "merge_inputs",
        "late_taken",
        "late_back_stored",
        "land_temp",
        "land_renamed",
        "merge_rebuilt",
        "merge_sealed",
    },
    # saved into the old copy once the branch moved: `_keep_saves_since` lands it
    "after_the_commit": {"since_taken", "merge_inputs", "land_temp", "land_renamed", "kept_since"},
}
# the step at which the editor saves (its hook saves, then the kill there): killed before it,
# there is no late line to keep
SAVED_AT = {
    "by_the_path": "temps",
    "into_the_old_copy": "renamed",
    "after_the_commit": "branch_moved",
}
# A save into the old copy is in a file that is no longer the note: killed after the save and
# before the writer names it in the intent (TAKEN), no process can read it any more (the editor
# still has it in its buffer, and saves it again by the path).
TAKEN = {"into_the_old_copy": "late_taken", "after_the_commit": "since_taken"}


def _merging_append(kind: str) -> Callable[[Path], object]:
    """The AI's append to n2 with an editor saving n2 at a fixed step (see MERGE). Runs in the
    forked writer: the editor is a wrapper of its fault hooks, gone with the process."""

    def action(root: Path) -> None:
        from server.write import commits, late_saves, store

        note = root / "notes/n2.md"
        held: list[int] = []
        reached: Counter[str] = Counter()
        into_old = {"into_the_old_copy": "renamed", "after_the_commit": "branch_moved"}

        def hooked(real: Callable[[str], None]) -> Callable[[str], None]:
            def hook(step: str) -> None:
                reached[step] += 1
                first = reached[step] == 1
                if step == "temps" and first and kind == "by_the_path":
                    fd = os.open(note, os.O_WRONLY | os.O_TRUNC)  # truncate-then-write
                    os.write(fd, SAVED.encode())
                    os.close(fd)
                elif step == "temps" and first:
                    held.append(os.open(note, os.O_WRONLY))  # the editor's file, opened now
                elif step == into_old.get(kind) and held:
                    fd = held.pop()
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, SAVED.encode(), 0)  # into the old copy
                    os.close(fd)
                    if kind == "into_the_old_copy":
                        with note.open("ab") as fh:  # by the path: into the AI's copy
                            fh.write(f"{KEYSTROKE}\n".encode())
                real(step)

            return hook

        for module in (store, commits, late_saves):
            module.crash_point = hooked(module.crash_point)  # type: ignore[attr-defined]
        with no_lease():
            ai_write(root, "append_section", [_append("notes/n2.md", "merged")])

    return action


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(MERGE))
def test_killed_at_every_step_of_the_late_save_merge(tmp_path: Path, kind: str) -> None:
    """The matrix for the merge: the reference run must reach the merge's own hooks (else this
    kills nowhere new); after each kill, the restart, and the next write (an append to the same
    note, so the owner's save left on disk is snapshotted and checked as theirs): invariants
    1-6, and the owner's late line is on disk, except where only the old copy had it."""
    template, AI_SHA["sha"] = make_template(tmp_path)
    ACTIONS[f"merge:{kind}"] = _merging_append(kind)
    try:
        ref = reference(template, tmp_path, f"merge:{kind}")
    finally:
        del ACTIONS[f"merge:{kind}"]
    missing = MERGE[kind] - set(ref.steps)
    assert not missing, f"{kind}: the merge's hooks not reached: {missing} in {ref.steps}"
    after = ref.after["notes/n2.md"].decode()
    assert OWNER_LATE in after and AI_LINE in after, f"{kind}: no merge: {after!r}"
    saved = SAVED + (f"{KEYSTROKE}\n" if kind == "into_the_old_copy" else "")
    saved_at = ref.steps.index(SAVED_AT[kind])
    kept_at = ref.steps.index(TAKEN[kind], saved_at) if kind in TAKEN else saved_at
    assert kept_at <= saved_at + 1, f"{kind}: the save not named at once: {ref.steps}"
    # rolled back with the owner's save kept, or (once committed) the save left on disk
    ref.states = [{"notes/n2.md": saved.encode()}]
    ref.pending = {saved.encode()}
    if kind == "into_the_old_copy":  # killed before the save in the old copy was read
        ref.states.append({"notes/n2.md": (N2 + f"{KEYSTROKE}\n").encode()})
        ref.pending.add((N2 + f"{KEYSTROKE}\n").encode())
    if kind in TAKEN:  # what landed after the commit was made: the owner's, uncommitted
        ref.pending.add(ref.after["notes/n2.md"])
    if kind == "after_the_commit":
        ref.states.append({"notes/n2.md": (N2 + AI_LINE).encode()})  # committed, save unread
    action = _merging_append(kind)
    seen: Counter[str] = Counter()
    for i, step in enumerate(ref.steps):
        seen[step] += 1
        fault = f"kill:{step}:{seen[step]}"
        where = f"merge {kind} killed at {fault}"
        k = killed_and_restarted(template, tmp_path / f"case{i}", i, fault, action, where)
        root, start, events, left, extra = k.root, k.start, k.events, k.left, k.extra
        check(root, ref, start, extra, left, events, f"{where}, after the {k.how}")
        reached = i >= kept_at  # the late line on disk, or in a commit, from here on
        n2 = (root / "notes/n2.md").read_text()
        assert not reached or OWNER_LATE in n2, f"{where}: the late line lost: {n2!r}"
        ai_write(root, "append_section", [("append_section", {
            "path": "notes/n2.md", "heading": "Log", "content": "- the next write"})])  # fmt: skip
        extra["the next write"] = "notes/n2.md"
        extra["snapshot: notes/n2.md"] = "notes/n2.md"  # the owner's save, taken in first
        # whole or absent, then the next write's line appended (Log is n2's last section)
        ref_next = Reference(ref.steps, ref.before, ref.after, ref.commits, ref.touched)
        ends = [ref.before["notes/n2.md"], ref.after["notes/n2.md"]]
        ends += [st["notes/n2.md"] or b"" for st in ref.states]
        ref_next.states = [{"notes/n2.md": e + b"- the next write\n"} for e in ends]
        check(root, ref_next, start, extra, left, events, f"{where}, after the next write")
        n2 = (root / "notes/n2.md").read_text()
        assert not reached or OWNER_LATE in n2, f"{where}: the late line lost: {n2!r}"
        assert n2.count("- the next write\n") == 1, f"{where}: {n2!r}"
