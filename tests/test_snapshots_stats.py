"""SVG snapshots of the write statistics screen (`S`) at 80x24, 120x36 and 200x50, on the
owner's 17 days (272 AI commits, his week of 52/47/25/23/15/3) plus a second client with a
Chinese name, an owner revert, a hash conflict, rejections with two codes and no-ops. Everything
on screen is pinned: commit dates, journal times, the vault's path, "today". Each baseline was
looked at as an image before it was committed."""

from __future__ import annotations

import json
import subprocess
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widget import Widget
from textual.widgets import DataTable

from app.services.revert import revert
from app.ui.dashboard import Dashboard
from app.ui.screens.stats_screen import StatsScreen
from server.core.git_log import commit_message
from server.core.state_files import state_dir
from server.write.journal import Conflict, Journal, Noop, Rejected

from .conftest import until
from .snapshots import SIZES, open_screen, settle
from .stats_history import AI_WHO, START, fast_import, owners_history

HELPER = "笔记助手"  # a client whose name is wider on screen than its length


@pytest.fixture
def pinned_stats_vault(monkeypatch: pytest.MonkeyPatch, pinned_root: Path) -> Path:
    root = pinned_root
    subprocess.run(["git", "init", "-q", "-b", "master", str(root)], check=True)
    owners_history(root)
    # the second client: four writes on Wednesday of W49
    later = []
    for i, tool in enumerate(["append_section", "append_section", "create_doc", "edit_text"]):
        at = START + timedelta(days=16, hours=3, minutes=i)
        msg = commit_message(
            f"{tool}: 项目/笔记{i}.md",
            {"Vaultwatch-Tool": tool, "Vaultwatch-Client": f"{HELPER}/1.0"},
        )
        later.append(
            (int(at.timestamp()), AI_WHO, msg, f"项目/笔记{i}.md", f"# 笔记 {i}\n\n- 一\n")
        )
    _fast_import_on_top(root, later)
    # the owner reverts one of the helper's appends (Wednesday evening)
    target = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%H", "--grep=笔记1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    when = (START + timedelta(days=16, hours=9)).isoformat()
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)
    revert(root, [target])
    # the journal: written by the real Journal, then its clock and pids pinned
    for client in (f"{HELPER}/1.0", "claude-ai/0.9.1"):
        j = Journal(state_dir(root) / "events.jsonl", client=client)
        j.append(Conflict("replace_doc", "notes/n1.md", "a" * 16, "b" * 16))
        j.append(Rejected("create_doc", ["x.md"], "unknown_tag", "m", "h", ""))
        j.append(Noop("update_frontmatter", ["notes/n2.md"], 10, 3))
    j.append(Rejected("edit_text", ["y.md"], "no_match", "m", "h", ""))
    journal = state_dir(root) / "events.jsonl"
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    for i, e in enumerate(events):
        day = 9 if i < 4 else 2  # two in W48 (Nov 25), the rest in W49 (Dec 2)
        e["ts"] = (
            f"2026-{'11' if day == 9 else '12'}-{25 if day == 9 else 2:02d}T12:{i:02d}:00.000Z"
        )
        e["pid"] = 4242
    journal.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    return root


def _fast_import_on_top(root: Path, commits: list[tuple[int, str, str, str, str]]) -> None:
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    fast_import(root, commits, parent=head)


def make_app(root: Path) -> Dashboard:
    app = Dashboard(root, poll_seconds=60)  # one poll at start; the picture must not move
    app.today = date(2026, 12, 3)
    return app


def _table_state(app: Any, table: DataTable[Any]) -> dict[str, object]:
    """What a table stuck unlaid-out looks like from inside: its sizes, the compositor's
    idea of it, and what Textual still has to do."""
    screen = app.screen
    placed = screen._compositor._full_map.get(table)
    return {
        "display": table.display,
        "size": table.size,
        "region": table.region,
        "virtual": table.virtual_size,
        "rows": table.row_count,
        "cols": len(table.columns),
        "dims_pending": table._require_update_dimensions,
        "placed": placed.region if placed else None,
        "visible_map": screen._compositor._visible_map is not None,
        "layout_pending": screen._layout_required,
        "parent": table.parent.region if isinstance(table.parent, Widget) else None,
    }


@pytest.mark.parametrize("size", list(SIZES))
def test_stats_screen(pinned_stats_vault: Path, snap_compare: Any, size: str) -> None:
    async def run_before(pilot: Any) -> None:
        # the whole history read (the screen counts the feed's events, and recounts when the
        # feed grows: a picture taken mid-recount showed other figures under load)
        await until(pilot, lambda: bool(pilot.app.feed.rows) and pilot.app.feed.complete)
        await open_screen(pilot, "S")
        await settle(pilot)
        # every table filled (on a loaded CI machine the picture was once taken with the
        # per-client table still empty): the pinned vault has two clients
        clients = pilot.app.screen.query_one("#stats-clients", DataTable)
        await until(pilot, lambda: bool(clients.row_count), "the per-client table filled")
        await settle(pilot)
        # and laid out: it once stayed filled and 0x0 under "per client" (Textual's box model
        # cached for the empty table; StatsTable.watch_virtual_size), 2 runs in 6 of this file
        try:
            await laid_out(pilot, clients)
        except AssertionError as exc:
            stuck.append(str(exc))
        await settle(pilot)

    stuck: list[str] = []
    app = make_app(pinned_stats_vault)
    same = snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
    assert not stuck, stuck[0]
    assert same


async def laid_out(pilot: Any, table: DataTable[Any], timeout: float = 30) -> None:
    """`table` shown and given the rows' height, its header's and a row more at least."""
    await until(
        pilot,
        lambda: table.display and table.size.height > table.row_count,
        f"{table.id} laid out",
        timeout=timeout,
        describe=lambda: _table_state(pilot.app, table),
    )


@pytest.mark.anyio
async def test_the_client_table_filled_while_a_reflow_waits_is_laid_out(
    pinned_stats_vault: Path,
) -> None:
    """The order that left the per-client table 0x0 for good, forced instead of waited for:
    a layout pending on the table (as `_draw` setting its display or styles leaves), then a
    sibling's layout run first (the client tools' table under the same heading: its idle
    clears and bumps the ancestors, the screen reflows, measuring the table as it is, empty),
    then the rows, measured at the table's own idle. Textual's internals are touched here
    only to put the steps in that order; the screen and its tables are the real ones."""
    app = make_app(pinned_stats_vault)
    async with app.run_test(size=SIZES["120x36"]) as pilot:
        await until(pilot, lambda: bool(app.feed.rows) and app.feed.complete)
        await open_screen(pilot, "S")
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        clients = screen.query_one("#stats-clients", DataTable)
        await until(pilot, lambda: bool(clients.row_count), "the per-client table filled")
        await laid_out(pilot, clients)
        stats = screen.stats
        assert stats is not None
        # emptied and laid out empty (the table as the screen first composes it)
        clients.clear(columns=True)
        await until(
            pilot,
            lambda: clients.size.height <= 1,
            "the emptied table laid out",
            describe=lambda: _table_state(app, clients),
        )
        # one turn of the loop, no await: the order the scheduler gives now and then
        clients.refresh(layout=True)  # a layout pending on the table
        tools = screen.query_one("#stats-client-tools", DataTable)
        tools.refresh(layout=True)
        tools._check_refresh()  # the sibling's idle: its ancestors cleared and bumped
        screen._refresh_layout()  # the reflow its Layout asks for: the table measured empty
        screen._draw(stats)  # the rows; their size is measured at the table's idle
        await laid_out(pilot, clients, timeout=10)
        await settle(pilot)
        assert clients.row_count == 2
