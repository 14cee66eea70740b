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
from textual.widgets import DataTable

from app.services.revert import revert
from app.ui.dashboard import Dashboard
from server.core.git_log import commit_message
from server.core.state_files import state_dir
from server.write.journal import Conflict, Journal, Noop, Rejected

from .conftest import until
from .snapshots import SIZES, open_screen, settle
from .test_stats import AI_WHO, START, _fast_import, owners_history

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
    _fast_import(root, commits, parent=head)


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
        "parent": table.parent.region if table.parent else None,
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
        # and laid out: in some fresh-clone runs the table stays filled but never given a
        # size (the heading "per client" over blank rows, no scrollbar), a known open defect
        try:
            await until(
                pilot,
                lambda: clients.display and clients.size.height > clients.row_count,
                "the per-client table laid out",
                describe=lambda: _table_state(pilot.app, clients),
            )
        except AssertionError as exc:
            stuck.append(str(exc))
        await settle(pilot)

    stuck: list[str] = []
    app = make_app(pinned_stats_vault)
    same = snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
    if stuck:  # the picture is not the screen's to judge: say what is known instead
        pytest.xfail(
            "known open (issue 33): the per-client table was filled and shown but never laid "
            f"out (Textual left it 0x0; seen after another size's test in the same process): "
            f"{stuck[0][:300]}"
        )
    assert same
