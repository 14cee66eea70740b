"""Other git processes on the vault at the worst moments of an AI write, each placed exactly:
the Obsidian Git plugin's `git add -A` + commit between our rename and our commit, and a
rebase the owner has open while the AI writes (see test_obsidian_git.py for the whole loop)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from server.core.git_run import RefUpdate
from server.write import leases

from .conftest import git

pytestmark = pytest.mark.anyio

NOTE = "# A\n\n## Log\n"


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


async def test_a_backup_in_the_write_window_never_takes_the_ai_line(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin's backup (`git add -A`, `git commit`) run at the moment our temp file is
    renamed over the note, before our commit: it cannot stage the AI's line (git's index is
    ours until the commit is made), and it never sees a temp file of ours."""
    root = make_vault({"a.md": NOTE})
    seen: list[tuple[str, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]] = []
    real_replace = leases.replace_if_same  # the rename over the note (swap.py)

    def replace_then_backup(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        real_replace(src, dst, *a, **kw)
        if str(dst) == str(root / "a.md"):
            # the plugin's backup, a real git, at the worst moment
            add = _run(root, "add", "-A")
            commit = _run(root, "commit", "-m", "vault backup: now")
            seen.append((str(src), add, commit))

    monkeypatch.setattr(leases, "replace_if_same", replace_then_backup)
    async with connect(root) as s:
        r = await s.call("append_section", path="a.md", heading="Log", content="- ai line")
    monkeypatch.setattr(leases, "replace_if_same", real_replace)
    [(tmp, add, commit)] = seen
    # our temp file was never in the working tree
    assert Path(tmp).parent == root / ".git/vaultwatch/tmp", tmp
    # the backup could not touch the index meanwhile; it said so, as git does
    assert add.returncode != 0 and "index.lock" in add.stderr, add
    assert commit.returncode != 0
    # the AI commit holds the AI line; no other commit does
    assert "+- ai line" in git(root, "show", "--format=", r["commit"])
    for sha in git(root, "log", "--format=%H", "--author=Test Owner").split():
        assert "ai line" not in git(root, "show", "--format=", sha), sha
    assert git(root, "status", "--porcelain") == ""
    assert not [p for p in root.rglob("*.vaultwatch-tmp")]


def _write_lock_held(root: Path) -> bool:
    fd = os.open(root / ".git/vaultwatch/write.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


async def test_an_ai_write_waits_out_a_rebase_and_lands_after_the_abort(
    connect: Any, make_vault: Any
) -> None:
    """A rebase stopped on a conflict (HEAD detached, .git/rebase-merge): the AI's write
    neither fails nor commits onto the detached HEAD (where `git rebase --abort` would drop
    it): it waits, and once the owner aborts, lands on the branch."""
    root = make_vault({"a.md": NOTE, "c.md": "base\n"})
    git(root, "checkout", "-q", "-b", "up")
    (root / "c.md").write_text("theirs\n")
    git(root, "commit", "-qam", "upstream edit")
    git(root, "checkout", "-q", "-")
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    (root / "c.md").write_text("mine\n")
    git(root, "commit", "-qam", "local edit")
    stopped = _run(root, "rebase", "up")
    assert stopped.returncode != 0 and (root / ".git/rebase-merge").is_dir(), stopped
    aborted: list[subprocess.CompletedProcess[str]] = []

    def owner() -> None:  # aborts once the AI's write is inside the write path, waiting
        end = time.monotonic() + 60
        while not _write_lock_held(root):
            assert time.monotonic() < end, "the AI write never started"
            time.sleep(0.01)
        aborted.append(_run(root, "rebase", "--abort"))

    t = threading.Thread(target=owner)
    (root / ".git/vaultwatch").mkdir(exist_ok=True)
    (root / ".git/vaultwatch/write.lock").touch()
    t.start()
    try:
        async with connect(root) as s:
            r = await s.call("append_section", path="a.md", heading="Log", content="- ai line")
    finally:
        t.join(60)
    assert aborted and aborted[0].returncode == 0, aborted
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch
    assert git(root, "rev-parse", "HEAD").strip() == r["commit"]  # on the branch, kept
    assert "- ai line" in git(root, "show", f"{branch}:a.md")
    assert (root / "c.md").read_text() == "mine\n"


async def test_a_branch_moved_by_another_git_mid_write_is_written_again_not_failed(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git that moves the branch without the index lock (a merge or rebase finishing its
    ref update) at the moment we commit: our compare-and-swap fails, nothing of ours is
    committed, and the write is made again on the new branch instead of failing the call."""
    root = make_vault({"a.md": NOTE})
    branch = git(root, "symbolic-ref", "HEAD").strip()
    moved: list[str] = []
    real_move = RefUpdate.move

    def move_after_a_move(self: RefUpdate, ref: str, new: str, old: str) -> None:
        # just before our compare-and-swap on the branch
        if ref == branch and not moved:
            tree = _run(root, "rev-parse", "HEAD^{tree}").stdout.strip()
            made = _run(root, "commit-tree", tree, "-p", "HEAD", "-m", "merge done")
            moved.append(made.stdout.strip())
            git(root, "update-ref", branch, moved[0])
        real_move(self, ref, new, old)

    monkeypatch.setattr(RefUpdate, "move", move_after_a_move)
    async with connect(root) as s:
        r = await s.call("append_section", path="a.md", heading="Log", content="- ai line")
    monkeypatch.setattr(RefUpdate, "move", real_move)
    assert moved and git(root, "rev-parse", f"{r['commit']}^").strip() == moved[0]
    assert "+- ai line" in git(root, "show", "--format=", r["commit"])
    assert git(root, "status", "--porcelain") == ""


# The owner's rebase held at its todo list: its state folder (.git/rebase-merge) is written,
# the branch it will move at its end is read, and its first step that needs git's index
# (checking out its base) is still to come. The plugin's rebase passes the same point, just
# without stopping there.
HELD_EDITOR = """#!/bin/sh
touch "{dir}/reached"
i=0
while [ ! -e "{dir}/go" ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done
"""


async def test_a_rebase_begun_inside_our_commit_fails_before_it_starts_never_half_way(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A rebase that begins while our write holds git's index lock (after our last look for
    one, before our commit moves the branch) read the branch as it was. Let go on, it
    rebased the old branch and, at its very end, could not move a branch that had moved
    ("could not update refs/heads/…"): left half-way, HEAD detached, AI writes refused until
    the owner acted, and the owner's `git rebase --abort` then dropped the AI's commit. Now
    the write keeps the lock until the rebase's first step that needs it, where it fails
    before it has changed anything; the plugin's next sync rebases the new branch."""
    root = make_vault({"a.md": NOTE, "c.md": "base\n"})
    git(root, "checkout", "-q", "-b", "up")
    (root / "u.md").write_text("upstream\n")
    git(root, "add", "u.md")
    git(root, "commit", "-qm", "upstream note")
    git(root, "checkout", "-q", "-")
    branch = git(root, "symbolic-ref", "HEAD").strip()
    (root / "c.md").write_text("mine\n")
    git(root, "commit", "-qam", "local edit")
    before = git(root, "rev-parse", "HEAD").strip()
    editor = tmp_path / "editor.sh"
    editor.write_text(HELD_EDITOR.format(dir=tmp_path))
    editor.chmod(0o755)
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": str(editor)}
    rebase: list[subprocess.Popen[str]] = []
    real_replace = leases.replace_if_same  # the rename over the note (swap.py)

    def rebase_then_replace(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        if str(dst) == str(root / "a.md") and not rebase:
            # our write holds git's index lock, its commit not yet made: the rebase begins
            rebase.append(
                subprocess.Popen(
                    ["git", "-C", str(root), "rebase", "-i", "up"],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            end = time.monotonic() + 60
            while not (tmp_path / "reached").exists():
                assert rebase[0].poll() is None, rebase[0].communicate()
                assert time.monotonic() < end, "the rebase never reached its todo list"
                time.sleep(0.01)
            assert (root / ".git/rebase-merge").is_dir()
        real_replace(src, dst, *a, **kw)

    def go_once_the_branch_moved() -> None:
        end = time.monotonic() + 60
        while _run(root, "rev-parse", branch).stdout.strip() == before:
            if time.monotonic() > end:
                break
            time.sleep(0.01)
        # the plugin's `git status` (it refreshes git's index when it can take the lock: the
        # entries our commit put there carry no file times yet, and a checkout would take
        # them for changes of the owner's)
        _run(root, "status", "--porcelain")
        (tmp_path / "go").touch()

    monkeypatch.setattr(leases, "replace_if_same", rebase_then_replace)
    t = threading.Thread(target=go_once_the_branch_moved)
    t.start()
    try:
        async with connect(root) as s:
            r = await s.call("append_section", path="a.md", heading="Log", content="- ai line")
    finally:
        (tmp_path / "go").touch()
        t.join(60)
        monkeypatch.setattr(leases, "replace_if_same", real_replace)
    out, err = rebase[0].communicate(timeout=60)
    # the rebase stopped before it began: nothing of it is left, the branch is the AI's commit
    assert not (root / ".git/rebase-merge").exists(), (out, err, _run(root, "status").stdout)
    assert rebase[0].returncode != 0 and "index.lock" in err, err
    assert git(root, "symbolic-ref", "HEAD").strip() == branch
    assert git(root, "rev-parse", "HEAD").strip() == r["commit"]
    assert git(root, "status", "--porcelain") == ""
    # the next sync rebases the branch as it is now, the AI's commit with it
    again = _run(root, "rebase", "up")
    assert again.returncode == 0, again
    assert "- ai line" in (root / "a.md").read_text()
    log = git(root, "log", "--format=%an %s", "up..")
    assert "Claude append_section: a.md § Log" in log, log


async def test_a_merge_our_lock_stopped_before_it_merged_is_cleared_not_committed(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git merge` (the plugin's sync in merge mode) refreshes git's index before it merges
    anything. Meeting our index lock there it stops, "Unable to write index.", yet leaves
    MERGE_HEAD with nothing merged; the plugin's next backup (`git add -A`, `git commit`)
    then recorded a merge whose tree left the other side's notes out (seen in
    test_obsidian_git.py[merge]: another machine's AI lines gone from the vault). The write
    that stopped it clears that state, as `git merge --abort` would; the next sync merges."""
    root = make_vault({"a.md": NOTE, "c.md": "base\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "o.md").write_text("theirs\n")
    git(root, "add", "o.md")
    git(root, "commit", "-qm", "the other machine's note")
    git(root, "checkout", "-q", "-")
    (root / "c.md").write_text("mine\n")
    git(root, "commit", "-qam", "local edit")
    merged: list[subprocess.CompletedProcess[str]] = []
    real_replace = leases.replace_if_same  # the rename over the note (swap.py)

    def merge_then_replace(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        if str(dst) == str(root / "a.md") and not merged:
            merged.append(_run(root, "merge", "other", "-m", "sync"))  # our lock is held
        real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(leases, "replace_if_same", merge_then_replace)
    async with connect(root) as s:
        r = await s.call("append_section", path="a.md", heading="Log", content="- ai line")
    monkeypatch.setattr(leases, "replace_if_same", real_replace)
    [stopped] = merged
    assert stopped.returncode != 0 and "Unable to write index" in stopped.stderr, stopped
    assert not (root / ".git/MERGE_HEAD").exists()  # cleared: nothing was merged
    assert git(root, "rev-parse", "HEAD").strip() == r["commit"]
    # the plugin's next backup and sync: a real merge, the other side's note in the tree
    _run(root, "add", "-A")
    _run(root, "commit", "-m", "vault backup")
    again = _run(root, "merge", "other", "-m", "sync")
    assert again.returncode == 0, again
    assert (root / "o.md").read_text() == "theirs\n"
    assert "- ai line" in (root / "a.md").read_text()
    assert git(root, "status", "--porcelain") == ""


def _stopped_pid(trace: Path, tracer: subprocess.Popen[str]) -> int | None:
    """The pid of the git strace stopped (its log says so; its only child), or None yet."""
    if "stopped by SIGSTOP" not in (trace.read_text() if trace.exists() else ""):
        return None
    kids = Path(f"/proc/{tracer.pid}/task/{tracer.pid}/children").read_text().split()
    return int(kids[0]) if kids else None


# The plugin's sync in rebase mode, and where strace stops it, just after it read the branch
# (git 2.39): at the open of the ref it rebases onto, read after the branch and before git's
# index. (A merge stopped there or at its index lock fails cleanly, "stash failed", on the old
# code too: it sees our change staged against the branch it read.)
SYNCS = {"rebase": (["git", "rebase", "--onto", "synced", "up"], ".git/refs/heads/synced")}


@pytest.mark.parametrize("mode", ["rebase"])
async def test_a_sync_that_read_the_branch_before_our_commit_never_ends_half_way(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str
) -> None:
    """The window the Obsidian Git rebase met 1 run in 10 under load: `git rebase` reads the
    branch (its orig-head) first, then git's index and the branch again for its clean-tree
    check, then writes its state folder. One that read the branch before our commit moved it
    and the index after we swapped it saw a clean tree, wrote its state after we let git's
    lock go, rebased the branch as it was and failed at its very end ("cannot lock ref"):
    half-way, HEAD detached, and the owner's `git rebase --abort` would take the branch back
    from our commit. A merge likewise failed at its end ("cannot lock ref 'HEAD'") with the
    merged notes left in the tree and index for the next backup to commit as the owner's.
    Here the sync is stopped exactly there (strace stops it as it opens the ref of its base,
    the step after reading the branch) while our commit moves the branch, and let go once our
    index is in place. Now the write sees it running, keeps git's lock while it runs, and it
    fails at its first step that needs the lock, before it has changed anything."""
    strace = shutil.which("strace")
    if strace is None or not sys.platform.startswith("linux"):
        pytest.skip("needs strace on Linux to stop a real rebase at an exact step")
    root = make_vault({"a.md": NOTE, "c.md": "base\n"})
    git(root, "checkout", "-q", "-b", "up")
    (root / "u.md").write_text("upstream\n")
    git(root, "add", "u.md")
    git(root, "commit", "-qm", "upstream note")
    git(root, "branch", "synced")  # the base, named apart: its ref is read after the branch
    git(root, "checkout", "-q", "-")
    branch = git(root, "symbolic-ref", "HEAD").strip()
    (root / "c.md").write_text("mine\n")
    git(root, "commit", "-qam", "local edit")
    before = git(root, "rev-parse", "HEAD").strip()
    index_before = os.stat(root / ".git/index").st_ino
    trace = tmp_path / "strace.log"
    command, ref = SYNCS[mode]
    rebase: list[subprocess.Popen[str]] = []
    real_move = RefUpdate.move

    def rebase_then_move(self: RefUpdate, ref_name: str, new: str, old: str) -> None:
        if ref_name == branch and not rebase:
            # a rebase that has read the branch, stopped before it reads git's index
            rebase.append(
                subprocess.Popen(
                    [
                        *(strace, "-qq", "-o", str(trace), "-e", "trace=openat"),
                        *("-P", ref, "-P", str(root / ref)),
                        *("-e", "inject=openat:signal=SIGSTOP:when=1"),
                        *command,
                    ],
                    cwd=root,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            end = time.monotonic() + 60
            while _stopped_pid(trace, rebase[0]) is None:
                assert rebase[0].poll() is None, rebase[0].communicate()
                assert time.monotonic() < end, f"strace never stopped the rebase: {trace}"
                time.sleep(0.01)
        real_move(self, ref_name, new, old)

    def go_once_our_index_is_in() -> None:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            moved = _run(root, "rev-parse", branch).stdout.strip() != before
            with contextlib.suppress(FileNotFoundError):
                if moved and os.stat(root / ".git/index").st_ino != index_before:
                    break
            time.sleep(0.005)
        pid = _stopped_pid(trace, rebase[0])
        if pid is not None:
            os.kill(pid, signal.SIGCONT)

    monkeypatch.setattr(RefUpdate, "move", rebase_then_move)
    t = threading.Thread(target=go_once_our_index_is_in)
    t.start()
    try:
        async with connect(root) as s:
            r = await s.call("append_section", path="a.md", heading="Log", content="- ai line")
    finally:
        t.join(60)
        monkeypatch.setattr(RefUpdate, "move", real_move)
        pid = _stopped_pid(trace, rebase[0])
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    _, err = rebase[0].communicate(timeout=60)
    said = f"rebase said: {err[-600:]}\n{_run(root, 'status').stdout}"
    # never half-way: no rebase or merge state left, HEAD on the branch, the AI's commit on it
    assert not (root / ".git/rebase-merge").exists(), said
    assert not (root / ".git/MERGE_HEAD").exists(), said
    assert git(root, "symbolic-ref", "HEAD").strip() == branch, said
    assert git(root, "rev-parse", "HEAD").strip() == r["commit"], said
    assert git(root, "status", "--porcelain") == "", said  # no merged note left uncommitted
    assert rebase[0].returncode != 0, said
    # stopped at its first step that needs git's index (a merge that saw our change staged
    # against the branch it read tries to stash it first, and that fails the same way)
    assert any(m in err for m in ("index.lock", "Unable to write index", "stash failed")), said
    # the next sync takes the branch as it is now, the AI's commit with it
    again = _run(root, *command[1:])
    assert again.returncode == 0, again
    assert "- ai line" in (root / "a.md").read_text()
    assert (root / "u.md").read_text() == "upstream\n"
    assert "Claude append_section: a.md § Log" in git(root, "log", "--format=%an %s", "synced..")
