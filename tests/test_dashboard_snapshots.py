"""SVG snapshots of the dashboard (pytest-textual-snapshot): the timeline with a diff, the
revert confirmation, the side-by-side diff and the tags screen. Everything on screen is pinned:
commit dates, journal times, the vault's path, the terminal size, "today"."""

from __future__ import annotations

import json
import os
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from app.ui.dashboard import Dashboard
from app.ui.timeline import Timeline
from server.gitrepo import ensure_repo

ROOT = Path("/tmp/vaultwatch-snapshot/vault")
WHEN = "2026-01-15T10:{:02d}:00+00:00"
SIZE = (120, 32)


@pytest.fixture
def pinned_vault(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import anyio
    from mcp import Client

    from server.tools import build_server
    from server.vault import Vault

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shutil.rmtree(ROOT.parent, ignore_errors=True)
    ROOT.mkdir(parents=True)
    (ROOT / "vault.config.yaml").write_text("tags: {vocabulary: tags.yaml, unknown: reject}\n")
    (ROOT / "tags.yaml").write_text("- crdt\n- caching\n- 同步\n")
    (ROOT / "weeks").mkdir()
    (ROOT / "weeks/w49.md").write_text(
        "---\nstart: 2026-01-12\ntags: [crdt]\n---\n# Week 49\n\n## Log\n- Mon: read about CRDT tombstones\n"
    )
    (ROOT / "study").mkdir()
    (ROOT / "study/cache.md").write_text(
        "---\ndate: 2026-01-05\ntags: [caching]\n---\n# Cache invalidation\n\nTTL expiry and the thundering herd.\n"
    )
    step = iter(range(60))

    def tick() -> None:
        t = WHEN.format(next(step))
        monkeypatch.setenv("GIT_AUTHOR_DATE", t)
        monkeypatch.setenv("GIT_COMMITTER_DATE", t)

    tick()
    ensure_repo(ROOT)

    async def writes() -> None:
        vault = Vault(ROOT)
        async with Client(build_server(vault)) as c:
            tick()
            await c.call_tool("append_section", {"path": "weeks/w49.md", "heading": "Log",
                                                 "content": "- Tue: mock interview, drew the architecture first"})  # fmt: skip
            tick()
            await c.call_tool("edit_text", {"path": "study/cache.md", "old": "TTL expiry and the thundering herd.",
                                            "new": "TTL expiry, write-through, and the thundering herd."})  # fmt: skip
            tick()
            await c.call_tool(
                "create_doc", {"path": "inbox/idea.md", "body": "# Idea\n", "tags": ["made-up"]}
            )
            read = (await c.call_tool("read_doc", {"path": "weeks/w49.md"})).structured_content
            (ROOT / "weeks/w49.md").write_text(
                (ROOT / "weeks/w49.md").read_text() + "- owner typed this\n"
            )
            await c.call_tool(
                "replace_doc",
                {"path": "weeks/w49.md", "content": "# stale\n", "hash": read["hash"]},
            )
        vault.close()

    anyio.run(writes)
    # the journal's clock and pids are not pinned by git's dates: pin them here
    journal = ROOT / ".git/vaultwatch/events.jsonl"
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    for i, e in enumerate(events):
        e["ts"] = f"2026-01-15T11:{i:02d}:00.000Z"
        e["pid"] = 4242
    journal.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    pinned = 1_768_471_200  # 2026-01-15 10:00 UTC
    os.utime(ROOT / "vault.config.yaml", (pinned, pinned))
    return ROOT


def make_app(root: Path) -> Dashboard:
    app = Dashboard(root, poll_seconds=60)  # one poll at start; the picture must not move
    app.today = date(2026, 1, 20)
    return app


async def select_ai_commit(pilot: Any, subject_start: str) -> None:
    app: Dashboard = pilot.app
    for _ in range(100):
        if app.feed.rows:
            break
        await pilot.pause(0.05)
    row = next(
        r for r in app.visible_rows() if r.commit and r.commit.subject.startswith(subject_start)
    )
    t = app.query_one("#timeline", Timeline)
    t.move_to(t.index_of(row.key))
    await pilot.pause(0.3)
    await app.workers.wait_for_complete()
    await pilot.pause(0.1)


def test_timeline_and_diff(pinned_vault: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await select_ai_commit(pilot, "edit_text")

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZE, run_before=run_before)


def test_side_by_side_diff(pinned_vault: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await select_ai_commit(pilot, "edit_text")
        await pilot.press("s")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.2)

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZE, run_before=run_before)


def test_revert_confirmation(pinned_vault: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        # (the append_section's line has the owner's unsaved line right after it: reverting it
        # opens the blockers dialog instead)
        await select_ai_commit(pilot, "edit_text")
        await pilot.press("r")
        await pilot.pause(0.5)

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZE, run_before=run_before)


def test_tags_screen(pinned_vault: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await select_ai_commit(pilot, "append_section")
        await pilot.press("g")
        await pilot.pause(0.3)

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZE, run_before=run_before)
