"""The dashboard under Pilot: real git repos, writes through real MCP clients, a real server
child, revert from the keyboard."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from textual.widgets import Footer, Static

from app.supervisor import ServerSupervisor
from app.ui.dashboard import Dashboard
from app.ui.insights import TagsScreen
from app.ui.modals import ConfirmModal
from app.ui.revert_dialog import BlockersModal
from app.ui.timeline import Timeline

from .conftest import git

pytestmark = pytest.mark.anyio


async def until(pilot: Any, check: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the dashboard")
        await pilot.pause(0.05)


def kinds(app: Dashboard) -> list[str]:
    return [r.kind for r in app.visible_rows()]


@pytest.fixture
def settings_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({
        "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
        "tags.yaml": "- crdt\n",
        "w.md": "# W\n\n## Log\n- one\n",
    })  # fmt: skip


@pytest.mark.slow
async def test_ai_writes_rejections_and_conflicts_show_up_live(
    vault: Path, settings_home: Path
) -> None:
    sup = ServerSupervisor(vault)
    url = sup.start()
    app = Dashboard(vault, supervisor=sup, poll_seconds=0.1)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(pilot, lambda: "import" in kinds(app))
            headers = {"Authorization": f"Bearer {sup.token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http),
                       client_info=Implementation(name="pilot-ai", version="1")) as c,
            ):  # fmt: skip
                read = (await c.call_tool("read_doc", {"path": "w.md"})).structured_content
                await c.call_tool(
                    "append_section", {"path": "w.md", "heading": "Log", "content": "- two"}
                )
                await c.call_tool(
                    "replace_doc", {"path": "w.md", "content": "# x\n", "hash": read["hash"]}
                )
                await c.call_tool("create_doc", {"path": "n.md", "body": "# N\n", "tags": ["nope"]})
            await until(pilot, lambda: kinds(app)[:3] == ["rejected", "conflict", "ai"])
            ai = next(r for r in app.visible_rows() if r.kind == "ai")
            assert ai.who.startswith("pilot-ai") and ai.paths == ("w.md",)
            assert "clients: pilot-ai" in str(app.query_one("#header", Static).render())
            await pilot.press("e")  # conflicts and rejections only
            assert kinds(app) == ["rejected", "conflict"]
            await pilot.press("e", "a")
            assert kinds(app) == ["ai"]
            await pilot.press("a", "slash")
            await pilot.press("n", "full_stop", "m", "d", "enter")
            assert kinds(app) == ["rejected"]
            await pilot.press("slash", "escape")
            assert "import" in kinds(app)
    finally:
        sup.stop()


@pytest.mark.slow
async def test_the_server_child_is_restarted_when_it_dies(vault: Path, settings_home: Path) -> None:
    sup = ServerSupervisor(vault)
    sup.start()
    app = Dashboard(vault, supervisor=sup, poll_seconds=0.1)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: bool(app.feed.rows))
            assert sup.proc is not None
            os.kill(sup.proc.pid, signal.SIGKILL)
            await until(pilot, lambda: sup.restarts == 1 and sup.alive)
            await until(
                pilot, lambda: "restarted 1×" in str(app.query_one("#header", Static).render())
            )
    finally:
        sup.stop()


async def _select(pilot: Any, app: Dashboard, key: str) -> None:
    t = app.query_one("#timeline", Timeline)
    await until(pilot, lambda: t.index_of(key) is not None)
    t.move_to(t.index_of(key))
    await pilot.pause(0.1)


async def test_revert_from_the_keyboard(connect: Any, vault: Path, settings_home: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    (vault / "w.md").write_text(
        (vault / "w.md").read_text().replace("# W\n", "# W, mine\n")
    )  # pending
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        await _select(pilot, app, f"c:{res['commit']}")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: "revert" in kinds(app))
    text = (vault / "w.md").read_text()
    assert "ai line" not in text and "# W, mine" in text
    assert (
        git(vault, "log", "-1", "--format=%(trailers:key=Vaultwatch-Action,valueonly)").strip()
        == "revert"
    )


async def test_conflicting_revert_leaves_the_vault_unchanged(
    connect: Any, vault: Path, settings_home: Path
) -> None:
    async with connect(vault) as s:
        first = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, edited")
    before = (vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        await _select(pilot, app, f"c:{first['commit']}")
        await pilot.press("r")  # the later commit is in the way: named before anything is done
        await until(pilot, lambda: isinstance(app.screen, BlockersModal))
        assert ((vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")) == before
        await pilot.press("n")  # decline reverting the later commit too
        await pilot.pause(0.2)
    assert ((vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")) == before


async def test_keys_screens_and_theme(connect: Any, vault: Path, settings_home: Path) -> None:
    async with connect(vault) as s:
        await s.call("update_frontmatter", path="w.md", add_tags=["crdt"])
    app = Dashboard(vault, poll_seconds=0.1, theme="vaultwatch-light")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: bool(app.feed.rows))
        assert app.theme == "vaultwatch-light"
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))
        assert [r["tag"] for r in app.screen.rows] == ["crdt"]
        await pilot.press("escape", "dollar_sign")
        await until(pilot, lambda: type(app.screen).__name__ == "CostScreen")
        assert app.screen.cost["tools"]["update_frontmatter"] > 0
        await pilot.press("escape", "c")
        await until(pilot, lambda: type(app.screen).__name__ == "ConnectModal")
        await pilot.press("escape", "question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpModal")
    assert (
        '"theme": "vaultwatch-light"'
        in (settings_home / "vaultwatch" / "settings.json").read_text()
    )


async def test_each_screen_owns_its_keys(connect: Any, vault: Path, settings_home: Path) -> None:
    """On Tags the main screen's keys do nothing to the hidden timeline (x, r, j, a)."""
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.call("append_section", path="w.md", heading="Log", content="- ai line 2")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: kinds(app)[:2] == ["ai", "ai"])
        t = app.query_one("#timeline", Timeline)
        t.move_to(0)
        await pilot.pause(0.1)
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))
        await pilot.press("x", "r", "j", "j", "a", "m")
        await pilot.pause(0.2)
        assert isinstance(app.screen, TagsScreen) and len(app.screen_stack) == 2
        assert t.cursor == 0 and app.main.group is None
        footer = app.screen.query_one(Footer)
        shown = {
            b.binding.description for b in app.screen.active_bindings.values() if b.binding.show
        }
        assert footer is not None and "Revert" not in shown and "Delete" not in shown
