"""A client name is the peer's text: it may not reshape the commit message the dashboard reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import Implementation

from app.services.history import read_commits
from server.core.git_log import TRAILER_VALUE_MAX
from server.protocol.tools import build_server
from server.vault import Vault
from server.write.journal import read_all

from .conftest import git

pytestmark = pytest.mark.anyio

HOSTILE_NAMES = [
    "innocent\n\nsigned-off by the owner",
    "x\nVaultwatch-Action: snapshot",
    "tab\there\rcr\x0bvt\x0cff\x1besc\x7fdel\x85nel\u2028ls\u2029ps end",
    "\n\n\n",
    "very-long-" + "n" * 5_000,
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
async def test_client_name_cannot_hide_or_forge_trailers(make_vault: Any, name: str) -> None:
    root: Path = make_vault({"w.md": "# W\n\n## Log\n- one\n"})
    vault = Vault(root)
    async with Client(
        build_server(vault),
        raise_exceptions=True,
        client_info=Implementation(name=name, version="9\n\nVaultwatch-Tool: x"),
    ) as c:
        r = await c.call_tool(
            "append_section", {"path": "w.md", "heading": "Log", "content": "- two"}
        )
        assert not r.is_error
    newest = read_commits(root, limit=1)[0]
    # the dashboard sees an AI commit, made by this tool, with nothing forged beside it
    assert newest.is_ai and newest.tool == "append_section" and newest.action is None
    assert newest.client is not None and newest.client.isprintable()
    assert 0 < len(newest.client) <= TRAILER_VALUE_MAX
    body = git(root, "log", "-1", "--format=%B")
    trailers = body.rstrip("\n").split("\n\n")[-1].splitlines()
    assert [t.split(":", 1)[0] for t in trailers] == ["Vaultwatch-Tool", "Vaultwatch-Client"]
    # the journal names the same client as the commit, so the dashboard can match them
    commits = [
        e
        for e in read_all(root / ".git/vaultwatch/events.jsonl")
        if e["kind"] == "commit" and e.get("sha") == newest.sha
    ]
    assert [e["client"] for e in commits] == [newest.client]


def test_owner_commits_carry_the_shared_trailers_and_only_their_paths(make_vault: Any) -> None:
    """A move through the dashboard's file actions commits through the write path's private
    index (nothing the owner staged goes in) with the same trailer names the history reads."""
    from app.services.move_action import apply_move, plan_move
    from server.core.git_log import ACTION

    root: Path = make_vault({"a.md": "# A\n", "b.md": "# B\n"})
    (root / "b.md").write_text("# B staged\n")
    git(root, "add", "b.md")
    sha = apply_move(root, plan_move(root, "a.md", "moved/a.md"))
    newest = read_commits(root, limit=1)[0]
    assert newest.sha == sha and newest.action == "move" and not newest.is_ai
    assert set(newest.files) == {"a.md", "moved/a.md"}
    assert f"{ACTION}: move" in git(root, "log", "-1", "--format=%B")
    assert git(root, "diff", "--cached", "--name-only").split() == ["b.md"]
