"""Vaults whose write statistics are known, for the stats tests (`test_stats.py`, the stats
screen's and its snapshots'): a scripted vault written through the real server by two clients,
and the interview-prep owner's 17 days as real commits. A helper module, not a test module:
test modules import from here, never from each other."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Implementation

from app.services.revert import revert
from app.services.review_undo import undo_hunk
from app.ui.dashboard import Dashboard
from app.ui.screens.stats_screen import StatsScreen
from bench.fastimport import fast_import
from server.core.git_log import commit_message
from server.core.gitrepo import ensure_repo

from .conftest import git, until, write_files
from .named_clients import as_client
from .settling import settled
from .templates import copy_of

CODE = Implementation(name="claude-code", version="2.1.0")
DESKTOP = Implementation(name="claude-ai", version="0.9.1")


def numstat(root: Path, sha: str) -> tuple[int, int]:
    """Lines a commit added and removed, as `git diff-tree` counts them (the test's oracle)."""
    added = removed = 0
    for line in git(root, "diff-tree", "--root", "--numstat", "--no-commit-id", sha).splitlines():
        a, r, _ = line.split("\t", 2)
        added, removed = added + int(a), removed + int(r)
    return added, removed


_SCRIPTED: dict[str, Any] = {}  # what the script did to the template, in this process


@pytest.fixture
def scripted(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A vault where every count is known; returns the vault and what was done to it. A copy
    of one built once per test process (its commits, journal and state folder included)."""

    def build(root: Path) -> None:
        _SCRIPTED.update(script_vault(root))

    root = copy_of(tmp_path_factory, "stats-scripted", tmp_path / "v", build)
    return {**_SCRIPTED, "root": root, "ai": dict(_SCRIPTED["ai"])}


def script_vault(root: Path) -> dict[str, Any]:
    """Two clients' writes, rejections and no-ops, then the owner's commit, a revert and an
    undo, in the empty folder `root`; returns what was done."""
    import anyio

    write_files(
        root,
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- crdt\n- 面试\n",
            "notes/a.md": "---\ntags: [crdt]\n---\n# A\n\n## Log\n- start\n",
            "notes/b.md": "---\nstatus: open\n---\n# B\n\nSome text.\n",
        },
    )
    ensure_repo(root)
    done: dict[str, Any] = {"root": root, "ai": {}}

    async def script() -> None:
        async with as_client(root, CODE) as s:
            r = await s.call("create_doc", path="notes/c.md", body="# C\n\nline one\nline two\n")
            done["ai"][r["commit"]] = ("claude-code", "create_doc")
            for text in ("- first", "- second"):
                r = await s.call("append_section", path="notes/a.md", heading="Log", content=text)
                done["ai"][r["commit"]] = ("claude-code", "append_section")
            done["reverted"] = r["commit"]  # the second append: the owner reverts it
            r = await s.call("edit_text", path="notes/a.md", old="- start", new="- begun")
            done["ai"][r["commit"]] = ("claude-code", "edit_text")
            await s.error("create_doc", path="notes/d.md", body="# D\n", tags=["made-up"])
            await s.error("edit_text", path="notes/a.md", old="not in the note", new="x")
            r = await s.call("update_frontmatter", path="notes/a.md", add_tags=["crdt"])
            assert r.get("noop") or "commit" not in r, r
        async with as_client(root, DESKTOP) as s:
            ops = [
                {
                    "tool": "append_section",
                    "args": {"path": "notes/b.md", "heading": "Log", "content": "- x"},
                },
                {"tool": "create_doc", "args": {"path": "notes/e.md", "body": "# E\n"}},
            ]
            r = await s.call("batch", ops=ops)
            done["ai"][r["commit"]] = ("claude-ai", "batch")
            r = await s.call("update_frontmatter", path="notes/b.md", set={"status": "done"})
            done["ai"][r["commit"]] = ("claude-ai", "update_frontmatter")
            read = await s.call("read_doc", path="notes/b.md")
            await s.error("replace_doc", path="notes/b.md", content="# B\n", hash="0" * 16)
            await s.error("create_doc", path="notes/f.md", body="# F\n", tags=["nope"])
            same = (root / "notes/b.md").read_text()
            r = await s.call("replace_doc", path="notes/b.md", content=same, hash=read["hash"])
            assert r.get("noop"), r

    anyio.run(script)
    # the owner: a plain commit, a revert of one AI commit, an undo of another one's hunk
    (root / "notes/mine.md").write_text("# Mine\n")
    git(root, "add", "notes/mine.md")
    git(root, "commit", "-qm", "my own note")
    revert(root, [done["reverted"]])
    undo_hunk(root, "notes/b.md", 0)
    return done


AI_WHO = "Claude <claude@vaultwatch.local>"
OWNER_WHO = "Test Owner <owner@example.test>"

# The owner's 17 days: 272 AI commits and 3 of his; his busiest week (the second) was 52
# append_section, 47 batch, 25 edit_text, 23 create_doc, 15 update_frontmatter, 3 replace_doc;
# the AI added 3,908 lines and removed 153.
OWNERS_WEEK = {
    "append_section": 52,
    "batch": 47,
    "edit_text": 25,
    "create_doc": 23,
    "update_frontmatter": 15,
    "replace_doc": 3,
}
START = datetime(2026, 11, 16, 9, 0).astimezone()  # Monday of 2026-W47, local time


def owners_history(root: Path) -> None:
    """17 days from Monday 2026-11-16: 54 AI commits in W47, the week above in W48, 53 in W49
    up to Wednesday; 3 owner commits. Every AI commit writes lines to one note; added and
    removed add up to the owner's 3,908 and 153. Messages by the server's `commit_message`."""
    tools = (
        ["append_section"] * 30 + ["create_doc"] * 24,  # W47: 54
        [t for t, n in OWNERS_WEEK.items() for _ in range(n)],  # W48: 165
        ["append_section"] * 40 + ["edit_text"] * 13,  # W49: 53
    )
    plan: list[tuple[datetime, str]] = []
    for week, names in enumerate(tools):
        days = 7 if week < 2 else 3  # 7 + 7 + 3 = 17 days
        for i, tool in enumerate(names):
            at = START + timedelta(days=7 * week + i % days, minutes=i)
            plan.append((at, tool))
    assert len(plan) == 272
    plan.sort()  # each note's text grows in the order of the commits
    # lines: the first 100 commits add 15, the other 172 add 14 (1,500 + 2,408 = 3,908); 153
    # of them (from the 21st on, when every note has lines) also take out a note's first line
    files: dict[str, list[str]] = {}
    commits = []
    for n, (at, tool) in enumerate(plan):
        path = f"notes/n{n % 20}.md"
        lines = files.setdefault(path, [])
        if 20 <= n < 20 + 153:
            lines.pop(0)
        lines += [f"line {n}.{k}\n" for k in range(15 if n < 100 else 14)]
        msg = commit_message(
            f"{tool}: {path}", {"Vaultwatch-Tool": tool, "Vaultwatch-Client": "claude-ai/0.9.1"}
        )
        commits.append((int(at.timestamp()), AI_WHO, msg, path, "".join(lines)))
    for day in (1, 8, 15):  # the owner's three
        at = START + timedelta(days=day, hours=10)
        commits.append((int(at.timestamp()), OWNER_WHO, "my edit\n", "mine.md", f"day {day}\n"))
    commits.sort(key=lambda c: c[0])
    fast_import(root, commits)


POLL = ("poll",)  # the dashboard's poll worker group


async def open_stats(app: Dashboard, pilot: Any) -> StatsScreen:
    await until(pilot, lambda: bool(app.feed.rows))
    await pilot.press("S")
    await until(pilot, lambda: isinstance(app.screen, StatsScreen))
    screen = app.screen
    assert isinstance(screen, StatsScreen)
    await until(pilot, lambda: screen.stats is not None)
    # the figures drawn after the stats land (a dashboard polling every 0.1 s always has a
    # poll worker about: not waited for)
    await settled(pilot, "the figures drawn", ignore=POLL)
    return screen
