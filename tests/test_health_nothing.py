"""The health screen (`H`) with nothing listed: the line under the table says there is nothing
to fix, not "a group: j/k to its findings" over a table with no group and no finding in it
(issue 33)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.widgets.finding_detail import FindingDetail

from .conftest import until
from .health_vault import LATER, open_health

pytestmark = pytest.mark.anyio


def detail_text(app: Dashboard) -> str:
    return str(app.screen.query_one(FindingDetail).render())


async def test_a_vault_with_no_findings_says_nothing_to_fix(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # two notes linking each other: no orphan, no broken link, nothing stale or too big
    root = make_vault({"a.md": "# A\n\nSee [[b]].\n", "b.md": "# B\n\nSee [[a]].\n"})
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        assert screen.report is not None and not screen.report.findings, screen.report
        await until(
            pilot,
            lambda: "nothing to fix" in detail_text(app),
            "the detail line saying there is nothing to fix",
            describe=lambda: detail_text(app),
        )
        assert "j/k" not in detail_text(app), detail_text(app)


async def test_every_finding_ignored_says_they_are_hidden(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One orphan, ignored: the list is empty, and the line says the ignored one is hidden
    and which key shows it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({"lonely.md": "# Lonely\n\nNo links here.\n"})
    app = Dashboard(root, poll_seconds=60)
    app.today = LATER  # the note old enough to be an orphan
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        assert screen.report is not None
        ids = [f.id for f in screen.report.findings]
        assert ids == ["orphan:lonely.md"], ids
        table = screen.query_one("#findings", DataTable)
        keys = [str(k.value) for k in table.rows]
        table.move_cursor(row=keys.index(ids[0]))
        await until(pilot, lambda: screen.selected() is not None, "the orphan selected")
        await pilot.press("i")
        await until(pilot, lambda: ids[0] in screen.ignored, "the orphan ignored")
        await until(
            pilot,
            lambda: "1 ignored finding hidden (a shows it)" in detail_text(app),
            "the detail line naming the hidden finding",
            describe=lambda: detail_text(app),
        )
