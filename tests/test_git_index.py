"""git's own index (.git/index) beside vaultwatch: our reads never take its lock, and a commit
never leaves the owner's index showing the AI's change staged for removal.

After an AI commit the branch holds the new text; if git's index still held the old one,
`git status` would show `MM note.md` with the AI's line staged for removal, and the owner's
next plain `git commit` would undo the AI's commit. That happened when another git command held
.git/index.lock at the moment the server updated the index (audit finding 6)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from server.core.git_run import git as run_git
from server.core.gitrepo import write_lock
from server.vault import Vault
from server.write import store_errors
from server.write.journal import read_all

from .conftest import git

SERVER = str(Path(sys.executable).parent / "vaultwatch-server")

# The owner's side: `git status` in a loop, as a shell prompt or an editor's git plugin runs
# it. Each run takes .git/index.lock for a moment (git's optional lock, to refresh stat data).
OWNER_STATUS = """
import subprocess, sys, time
root, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
while time.monotonic() < end and not __import__("os").path.exists(root + "/.git/STOP"):
    subprocess.run(["git", "-C", root, "status", "--porcelain"], capture_output=True)
"""


def _staged(root: Path) -> str:
    """What the owner's `git commit` would commit now (nothing, when the index is HEAD's)."""
    return git(root, "--no-optional-locks", "diff", "--cached", "--name-status")


def _index_stamp(root: Path) -> tuple[int, int]:
    st = os.stat(root / ".git" / "index")
    return st.st_ino, st.st_mtime_ns


@pytest.mark.anyio
async def test_two_processes_on_git_never_leave_the_ai_change_staged_for_removal(
    connect: Any, make_vault: Any
) -> None:
    """A real server writing and reading while a second process runs git status and a second
    server (stdio, its own process) writes too: after every write nothing is staged (the index
    is HEAD's), and every write either committed or changed nothing."""
    notes = {f"n{j}.md": f"# N{j}\n\n## Log\n" for j in range(3)}
    root = make_vault({**notes, "other.md": "# Other\n\n## Log\n"})
    owner = subprocess.Popen([sys.executable, "-c", OWNER_STATUS, str(root), "60"])
    failures: list[str] = []
    staged_seen: list[str] = []
    try:
        params = StdioServerParameters(
            command=SERVER,
            args=["--vault", str(root)],
            env={**os.environ, "VAULTWATCH_SEMANTIC": "off"},
        )

        async def second_server() -> None:
            async with Client(params) as c:
                for i in range(15):
                    r = await c.call_tool(
                        "append_section",
                        {"path": "other.md", "heading": "Log", "content": f"- other {i}"},
                    )
                    if r.is_error:
                        failures.append(f"second server: {r.content[0]}")
                    await c.call_tool("list_docs", {})

        deadline = time.monotonic() + 90
        async with anyio.create_task_group() as tg, connect(root) as s:
            tg.start_soon(second_server)
            for i in range(30):
                assert time.monotonic() < deadline, "bounded: the loop took too long"
                path = f"n{i % 3}.md"
                r = await s.client.call_tool(
                    "append_section", {"path": path, "heading": "Log", "content": f"- ai {i}"}
                )
                if r.is_error:
                    failures.append(f"write {i}: {r.content[0]}")
                await s.call("list_docs")
                await s.call("read_doc", path=path)
                # Between no writes (a write in flight holds .git/index.lock until its index
                # is in place, so no `git commit` of the owner's can run on it meanwhile)
                with write_lock(root):
                    staged = _staged(root)
                if staged:
                    staged_seen.append(f"write {i}: {staged!r}")
    finally:
        (root / ".git" / "STOP").touch()
        owner.wait(30)
    assert staged_seen == [], "the owner's index staged the AI's change for removal"
    assert failures == []
    assert _staged(root) == ""
    assert git(root, "--no-optional-locks", "status", "--porcelain") == ""
    for j in range(3):
        text = (root / f"n{j}.md").read_text()
        assert all(f"- ai {i}\n" in text for i in range(j, 30, 3))
    assert all(f"- other {i}\n" in (root / "other.md").read_text() for i in range(15))


def test_read_only_git_commands_never_rewrite_the_index(make_vault: Any) -> None:
    """Every git the server runs to read (here the full `git status` behind a note's modified
    date) leaves .git/index alone: with its stat data out of date, a plain `git status` would
    take .git/index.lock and rewrite the index."""
    root = make_vault({f"n{j}.md": f"# N{j}\n" for j in range(5)})
    time.sleep(0.01)
    for j in range(5):  # same bytes, new stat data: git status would refresh the index
        os.utime(root / f"n{j}.md", ns=(time.time_ns() + 5_000_000_000,) * 2)
    before = _index_stamp(root)
    vault = Vault(root)
    try:
        assert set(vault.entries()) >= {f"n{j}.md" for j in range(5)}
        run_git(root, "status", "--porcelain")
    finally:
        vault.close()
    assert _index_stamp(root) == before
    # the control: git itself, with its optional lock, does rewrite it
    git(root, "status", "--porcelain")
    assert _index_stamp(root) != before


@pytest.mark.anyio
async def test_a_lock_held_for_a_moment_by_another_git_does_not_fail_a_write(
    connect: Any, make_vault: Any
) -> None:
    """.git/index.lock held for half a second (another git command at work): the write waits
    for it and commits, and the owner's index is HEAD's afterwards."""
    root = make_vault({"a.md": "# A\n\n## Log\n"})
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")

    async def release() -> None:
        await anyio.sleep(0.5)
        lock.unlink()

    async with anyio.create_task_group() as tg, connect(root) as s:
        tg.start_soon(release)
        r = await s.call("append_section", path="a.md", heading="Log", content="- x")
    assert r["commit"]
    assert _staged(root) == ""
    assert git(root, "--no-optional-locks", "status", "--porcelain") == ""


@pytest.mark.anyio
async def test_a_lock_that_stays_refuses_the_write_and_changes_nothing(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """.git/index.lock that does not go away (a `git commit` waiting in its editor, or a crashed
    git): the write is refused before anything is committed: the note, the branch and the
    owner's index are exactly as they were, and the message does not tell anyone to delete a
    lock that may be in use without saying how to tell."""
    # the lock never goes: the write's wait for git (20 s) shortened, the refusal is the same
    monkeypatch.setattr(store_errors, "GIT_WAIT_S", 1.0)
    root = make_vault({"a.md": "# A\n\n## Log\n"})
    head = git(root, "rev-parse", "HEAD")
    index = (root / ".git" / "index").read_bytes()
    (root / ".git" / "index.lock").write_bytes(b"")
    async with connect(root) as s:
        msg = await s.error("append_section", path="a.md", heading="Log", content="- x")
    assert "nothing was written" in msg and "if no git command is running" in msg
    assert (root / "a.md").read_text() == "# A\n\n## Log\n"
    assert git(root, "rev-parse", "HEAD") == head
    assert (root / ".git" / "index").read_bytes() == index
    assert read_all(root / ".git/vaultwatch/events.jsonl")[-1]["code"] == "git_busy"


@pytest.mark.anyio
async def test_the_dashboards_revert_preview_never_rewrites_the_index(
    connect: Any, make_vault: Any
) -> None:
    """The dashboard's revert preview compares the note on disk with HEAD: with its stat data
    out of date, `git diff` would take .git/index.lock and rewrite the index on the side."""
    from app.services.revert import RevertConflict, plan_revert

    root = make_vault({"a.md": "# A\n\n## Log\n"})
    async with connect(root) as s:
        r = await s.call("append_section", path="a.md", heading="Log", content="- ai")
        await s.call("edit_text", path="a.md", old="- ai", new="- ai, later")
    # a later commit on the same lines: the preview looks for what is in the way, the note on
    # disk against HEAD included (same bytes, stat data git has not recorded)
    os.utime(root / "a.md", ns=(time.time_ns() + 5_000_000_000,) * 2)
    before = _index_stamp(root)
    with pytest.raises(RevertConflict):
        plan_revert(root, [r["commit"]])
    assert _index_stamp(root) == before


def test_an_index_lock_left_by_a_killed_writer_is_released(make_vault: Any) -> None:
    """A writer killed while it holds .git/index.lock (between moving the branch and putting
    the new index in place) leaves it; the next writer knows it for its own and removes it,
    while a lock another git command holds is never touched."""
    root = make_vault({"a.md": "# A\n"})
    killer = (
        "import os, sys, signal\n"
        "from pathlib import Path\n"
        "from server.core.git_index import owner_index\n"
        "from server.core.gitrepo import write_lock\n"
        "root = Path(sys.argv[1])\n"
        "with write_lock(root), owner_index(root):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", killer, str(root)], cwd=Path(__file__).parent.parent)
    assert (root / ".git" / "index.lock").exists()  # what the killed writer left
    vault = Vault(root)
    try:
        vault.store.recover()
        assert not (root / ".git" / "index.lock").exists()
        (root / ".git" / "index.lock").write_bytes(b"")  # the owner's git, at work
        vault.store.recover()
        assert (root / ".git" / "index.lock").exists()
    finally:
        vault.close()
