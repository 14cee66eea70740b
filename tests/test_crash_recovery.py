"""A write killed while it held git's index lock, through the real server process: the next
write commits only its own change (issue 27: it also carried the killed batch's lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from app.services.move_action import apply_move, plan_move
from app.services.review_undo import undo_hunk
from server.vault import Vault
from server.write.journal import read_all

from .conftest import REPO, git, head, vaultwatch_cli
from .crashes import ai_write, call_until_killed, run_child
from .servers import client_env


def git_bytes(root: Path, spec: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(root), "show", spec], capture_output=True, check=True
    ).stdout


def changed_in(root: Path, sha: str) -> set[str]:
    out = git(root, "diff-tree", "-r", "--no-commit-id", "--name-only", "-z", "--root", sha)
    return {p for p in out.split("\0") if p}


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_batch_killed_holding_the_index_lock_leaves_nothing_for_the_next_commit(
    make_vault: Any,
) -> None:
    notes = {f"n{i}.md": f"# N{i}\n\n## Log\n- before\n" for i in range(6)}
    root = make_vault(notes)
    ops = [
        {
            "tool": "append_section",
            "args": {"path": f"n{k % 5}.md", "heading": "Log", "content": f"- batch line {k}"},
        }
        for k in range(100)
    ]
    first = {"path": "n0.md", "heading": "Log", "content": "- an earlier write"}
    # the server's second commit is killed: the first left the private index cached
    rc = call_until_killed(
        root, "kill:index_locked:2", [("append_section", first), ("batch", {"ops": ops})]
    )
    assert rc == -9  # SIGKILL, at the fault hook: the batch's commit built, git's index locked
    assert (root / ".git/index.lock").exists()  # what the repro saw
    assert "batch line" in (root / "n0.md").read_text()  # renamed in place, not committed
    base = head(root)

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server.protocol.cli", "--vault", str(root)],
        cwd=str(REPO),
        env=client_env(),
    )
    async with Client(params) as c:
        r = await c.call_tool(
            "append_section", {"path": "n5.md", "heading": "Log", "content": "- the next write"}
        )
        assert not r.is_error, r.content
    sha = head(root)
    assert git(root, "rev-parse", f"{sha}^").strip() == base  # one commit: the next write
    assert changed_in(root, sha) == {"n5.md"}  # not the killed batch's five notes
    for i in range(5):
        assert "batch line" not in git(root, "show", f"HEAD:n{i}.md")
        assert (root / f"n{i}.md").read_bytes() == git_bytes(root, f"HEAD:n{i}.md")  # rolled back
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(root, "diff", "--cached", "--name-only") == ""
    assert not (root / ".git/index.lock").exists()
    recovered = [
        e for e in read_all(root / ".git/vaultwatch/events.jsonl") if e["kind"] == "recovered"
    ]
    assert len(recovered) == 1 and sorted(recovered[0]["paths"]) == [f"n{i}.md" for i in range(5)]


def test_a_private_index_holding_other_paths_never_reaches_a_commit(make_vault: Any) -> None:
    """The safety net under the marker: whatever left the private commit index holding a path
    the commit does not name (with a marker saying it is HEAD's), the commit holds only its
    own paths, and the index is rebuilt."""
    from server.services.writes import apply
    from server.vault import Vault

    root = make_vault({"a.md": "# A\n\n## Log\n", "b.md": "# B\n\n## Log\n"})
    vault = Vault(root)
    try:
        apply(
            vault,
            vault.store,
            "append_section",
            "t",
            [("append_section", {"path": "a.md", "heading": "Log", "content": "- one"})],
        )
        state = root / ".git/vaultwatch"
        assert (state / "commit.index.head").read_text() == head(root)  # the cache is in use
        blob = (
            subprocess.run(
                ["git", "-C", str(root), "hash-object", "-w", "--stdin"],
                input=b"# B\nnot on disk\n",
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        subprocess.run(
            ["git", "-C", str(root), "update-index", "--index-info"],
            input=f"100644 {blob}\tb.md\n".encode(),
            env={**os.environ, "GIT_INDEX_FILE": str(state / "commit.index")},
            check=True,
        )
        apply(
            vault,
            vault.store,
            "append_section",
            "t",
            [("append_section", {"path": "a.md", "heading": "Log", "content": "- two"})],
        )
    finally:
        vault.close()
    assert changed_in(root, head(root)) == {"a.md"}
    assert "not on disk" not in git(root, "show", "HEAD:b.md")
    assert git(root, "status", "--porcelain") == ""


# ------------------------------------------------------------------------------------------------
# the owner's actions after a killed write (adversarial-3 N4), and owner actions killed half-way

BATCH_LINE = "- AI batch line"


def _killed_batch(root: Path) -> None:
    """A batch over n0..n3 killed after two of its four files were renamed in place."""
    ops = [
        ("append_section", {"path": f"n{i}.md", "heading": "Log", "content": BATCH_LINE})
        for i in range(4)
    ]
    status = run_child(root, "kill:renamed:2", lambda r: ai_write(r, "batch", ops, "tidy"))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    assert BATCH_LINE in (root / "n1.md").read_text()  # half-written, uncommitted


def _undo(root: Path) -> None:
    undo_hunk(root, "n0.md", 0)


@pytest.mark.slow
@pytest.mark.parametrize("action", ["mv", "rm", "revert", "undo"])
def test_an_owner_action_after_a_killed_write_rolls_it_back_first(
    make_vault: Any, action: str
) -> None:
    root = make_vault({f"n{i}.md": f"# N{i}\n\n## Log\n- before\n" for i in range(4)})
    ai_write(
        root,
        "append_section",
        [
            (
                "append_section",
                {"path": "n0.md", "heading": "Log", "content": "- an earlier AI line"},
            )
        ],
    )
    earlier = head(root)
    _killed_batch(root)
    if action == "undo":  # the dashboard's undo of a hunk (no shell command for it)
        _undo(root)
    else:
        args = {
            "mv": ["mv", "n1.md", "moved/n1.md"],
            "rm": ["rm", "n1.md", "--yes"],
            "revert": ["revert", earlier],
        }[action]
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 0, r.stdout + r.stderr
    for sha in git(root, "rev-list", f"{earlier}..HEAD").split():
        assert "AI batch line" not in git(root, "show", sha), f"{action} committed the AI's line"
    for p in root.rglob("*.md"):
        assert BATCH_LINE not in p.read_text(), f"{p.name} keeps the dead batch's line"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    recovered = [
        e for e in read_all(root / ".git/vaultwatch/events.jsonl") if e["kind"] == "recovered"
    ]
    assert [sorted(e["paths"]) for e in recovered] == [["n0.md", "n1.md"]]


@pytest.mark.slow
def test_a_folder_move_killed_half_way_is_rolled_back_by_the_next_start(make_vault: Any) -> None:
    """adversarial-3 row 24: a killed `mv` of a big folder left every file moved and nothing
    committed, and neither a restart nor the next write put it right."""
    files = {f"big/n{i:03}.md": f"# N{i}\n\nSee [next](n{i + 1:03}.md).\n" for i in range(200)}
    files["index.md"] = "# Index\n\n" + "".join(f"- [n{i}](big/n{i:03}.md)\n" for i in range(200))
    root = make_vault(files)
    before = head(root)
    status = run_child(
        root, "kill:tree_step:150", lambda r: apply_move(r, plan_move(r, "big", "moved"))
    )
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    assert (root / "moved").is_dir() and git(root, "status", "--porcelain") != ""
    vault = Vault(root)
    try:
        restored = vault.store.recover()  # what the next server start does
    finally:
        vault.close()
    assert len(restored) == 150 * 2  # 150 notes moved: each new name gone, each old one back
    assert head(root) == before
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (root / "moved").exists()  # the folders the move made are gone too
    assert {p.relative_to(root).as_posix() for p in root.rglob("*.md")} == set(files)


@pytest.mark.slow
def test_recovery_killed_half_way_is_finished_by_the_next(make_vault: Any) -> None:
    """Recovery writes files too: killed after putting back one of them, the next start puts
    back the rest, and journals it."""
    root = make_vault({f"n{i}.md": f"# N{i}\n\n## Log\n- before\n" for i in range(4)})
    ops = [
        ("append_section", {"path": f"n{i}.md", "heading": "Log", "content": BATCH_LINE})
        for i in range(4)
    ]
    status = run_child(root, "kill:renamed:3", lambda r: ai_write(r, "batch", ops, "tidy"))
    assert os.WIFSIGNALED(status)

    def recover(r: Path) -> None:
        vault = Vault(r)
        vault.store.recover()

    status = run_child(root, "kill:recovered_file:1", recover)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    assert sum(BATCH_LINE in (root / f"n{i}.md").read_text() for i in range(4)) == 2
    vault = Vault(root)
    try:
        vault.store.recover()
    finally:
        vault.close()
    assert all(BATCH_LINE not in (root / f"n{i}.md").read_text() for i in range(4))
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    recovered = [
        e for e in read_all(root / ".git/vaultwatch/events.jsonl") if e["kind"] == "recovered"
    ]
    # the killed recovery had put n0 back and journaled nothing; the next names what it did,
    # and says it finished one cut short
    assert len(recovered) == 1 and sorted(recovered[0]["paths"]) == ["n1.md", "n2.md"]
    assert "cut short" in recovered[0]["message"]


def test_locks_a_killed_git_child_left_on_our_own_indexes_are_cleared(make_vault: Any) -> None:
    """A server killed with its whole process group takes its git children with it: their
    locks on our private indexes stay. Only our git children take them, under the write lock,
    so the next writer removes them; git's own index.lock of another program is left alone."""
    root = make_vault({"a.md": "# A\n\n## Log\n"})
    state = root / ".git/vaultwatch"
    ai_write(
        root,
        "append_section",
        [("append_section", {"path": "a.md", "heading": "Log", "content": "- one"})],
    )
    for name in ("commit.index.lock", "index.next.lock"):
        (state / name).write_bytes(b"")
    ai_write(
        root,
        "append_section",
        [("append_section", {"path": "a.md", "heading": "Log", "content": "- two"})],
    )
    assert "- two" in git(root, "show", "HEAD:a.md")
    assert not (state / "commit.index.lock").exists() and not (state / "index.next.lock").exists()
    assert git(root, "status", "--porcelain") == ""
