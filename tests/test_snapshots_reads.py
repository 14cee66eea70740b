"""SVG snapshots of the Reads screen (`$`): today's cost with the last 30 days per tool and
per client, the notes read most, the notes not read, and the get_context preview, at 80x24,
120x36 and 200x50, on the dashboard snapshots' pinned vault (a Chinese note at a long path,
commit and journal times pinned, "today" pinned to 2026-01-20) in UTC. Each baseline was looked
at as an image before it was kept."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.services.context_preview import REVIEWED, mark_reviewed, preview

from .conftest import until
from .snapshots import (
    LONG,
    SIZES,
    make_app,
    open_screen,
    pinned_vault,
    settle,
)

__all__ = ["pinned_vault"]  # the fixture, imported for use here


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Times on screen are local: pin the zone too."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def read_vault(pinned_vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pinned vault after two clients read it over four days, and the owner reviewed the
    context before the AI's last write: real tool calls, their journal times pinned after."""
    import anyio
    from mcp import Client
    from mcp.types import Implementation

    from server.protocol.tools import build_server
    from server.vault import Vault

    root = pinned_vault
    journal = root / ".git/vaultwatch/events.jsonl"
    before = len(journal.read_text().splitlines())
    mark_reviewed(root, preview(root).text)
    when = "2026-01-16T09:00:00+00:00"
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)

    async def reads() -> None:
        for name, calls in (
            (
                "claude-code",
                [
                    ("get_context", {}),
                    ("search_text", {"query": "CRDT"}),
                    ("read_doc", {"path": LONG}),
                    ("read_doc", {"path": LONG}),
                    (
                        "append_section",
                        {"path": LONG, "heading": "日志", "content": "- 周五：复盘"},
                    ),
                ],
            ),
            (
                "claude-desktop",
                [("get_context", {}), ("list_docs", {}), ("read_doc", {"path": "study/cache.md"})],
            ),
        ):
            vault = Vault(root)
            async with Client(
                build_server(vault), client_info=Implementation(name=name, version="1")
            ) as c:
                for tool, args in calls:
                    await c.call_tool(tool, args)
            vault.close()

    anyio.run(reads)
    lines = journal.read_text().splitlines()
    for i in range(before, len(lines)):
        e = json.loads(lines[i])
        n = i - before
        e["ts"] = f"2026-01-{16 + n % 4:02d}T12:{n:02d}:00.000Z"
        e["pid"] = 4242
        lines[i] = json.dumps(e, ensure_ascii=False)
    journal.write_text("\n".join(lines) + "\n")
    state = root / ".git/vaultwatch" / REVIEWED
    data = json.loads(state.read_text())
    data["at"] = "2026-01-15T12:00:00.000Z"
    state.write_text(json.dumps(data, ensure_ascii=False))
    return root


def open_reads(tab: str) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.clear_notifications()  # the launch's "to review" toast is not this screen
        await open_screen(pilot, "dollar_sign")
        screen = pilot.app.screen
        # the vault's lists and the preview are read in a thread
        await until(
            pilot, lambda: getattr(screen, "preview", None) is not None, "the reads and preview"
        )
        if tab:
            await pilot.press(tab)
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", list(SIZES))
def test_reads_cost(read_vault: Path, snap_compare: Any, size: str) -> None:
    app = make_app(read_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_reads(""))


@pytest.mark.parametrize("size", list(SIZES))
def test_reads_most_read(read_vault: Path, snap_compare: Any, size: str) -> None:
    app = make_app(read_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_reads("2"))


@pytest.mark.parametrize("size", ["80x24"])
def test_reads_not_read(read_vault: Path, snap_compare: Any, size: str) -> None:
    app = make_app(read_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_reads("3"))


@pytest.mark.parametrize("size", list(SIZES))
def test_reads_context(read_vault: Path, snap_compare: Any, size: str) -> None:
    app = make_app(read_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_reads("4"))
