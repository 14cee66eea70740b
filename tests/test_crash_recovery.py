"""A write killed while it held git's index lock, through the real server process: the next
write commits only its own change (issue 27: it also carried the killed batch's lines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import LATEST_PROTOCOL_VERSION

from server.write.journal import read_all

from .conftest import REPO, git, head
from .test_git_setups import child_env


def _rpc(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def call_until_killed(root: Path, fault: str, calls: list[tuple[str, dict[str, Any]]]) -> int:
    """Start the real stdio server with VAULTWATCH_FAULT=`fault`, make `calls` in turn (plain
    JSON-RPC: the server is expected to die in the last one, and a client library may wait
    forever for that answer) and return how the server ended."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.protocol.cli", "--vault", str(root)],
        cwd=REPO,
        env=child_env(VAULTWATCH_FAULT=fault),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        hello = {"name": "crash-test", "version": "1"}
        params = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}}
        _rpc(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {**params, "clientInfo": hello}})  # fmt: skip
        line = proc.stdout.readline()
        assert b'"id":0' in line.replace(b" ", b""), line
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n, (tool, args) in enumerate(calls, 1):
            _rpc(proc, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                        "params": {"name": tool, "arguments": args}})  # fmt: skip
            if n < len(calls):
                line = proc.stdout.readline()
                assert b'"isError":false' in line.replace(b" ", b""), line
        answer = proc.stdout.read()  # until the server's end closes its stdout
        assert b'"id":%d' % len(calls) not in answer.replace(b" ", b""), answer
        return proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


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
        env=child_env(),
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
        apply(vault, vault.store, "append_section", "t", [
            ("append_section", {"path": "a.md", "heading": "Log", "content": "- one"})])  # fmt: skip
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
        apply(vault, vault.store, "append_section", "t", [
            ("append_section", {"path": "a.md", "heading": "Log", "content": "- two"})])  # fmt: skip
    finally:
        vault.close()
    assert changed_in(root, head(root)) == {"a.md"}
    assert "not on disk" not in git(root, "show", "HEAD:b.md")
    assert git(root, "status", "--porcelain") == ""
