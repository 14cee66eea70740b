"""Snapshots of the library health screen (`H`) at 80x24, 120x36 and 200x50, on a vault with
Chinese note names, long paths and one finding of every kind but near-duplicates (recall is off
in these tests, and the screen says so)."""

from __future__ import annotations

import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from app.ui.dashboard import Dashboard
from app.ui.screens.health_screen import HealthScreen

from .conftest import until, write_files
from .snapshots import SIZES, open_screen, settle

LONG = "项目笔记/二零二六年第四季度/系统设计面试准备/关于离线同步与冲突解决的学习笔记.md"

FILES: dict[str, str | bytes] = {
    "vault.config.yaml": (
        'private: ["private/**"]\n'
        "types:\n  improvement:\n    folder: improvements\n    required: [status, opened]\n"
        "limits: {result_chars: 2000}\n"
        "health: {orphan_days: 30, types: {improvement: {stale_days: 14}}}\n"
    ),
    LONG: "# 离线同步与冲突解决\n\n参见 [[不存在的笔记]] 和 ![[架构图-最终版.png]]。\n\n[[cache]]\n",
    "study/cache.md": "# Cache invalidation\n\nTTL expiry. See [[cache#No such heading]].\n",
    "improvements/先画架构图.md": "---\nstatus: open\nopened: 2026-01-02\n---\n# 先画架构图\n\n"
    "[[cache]]\n",
    "improvements/big-o.md": "---\nstatus: open\n---\n# Big O under pressure\n\n[[cache]]\n",
    "inbox/孤立的想法.md": "# 孤立的想法\n\n没有链接。\n",
    "notes/table.md": "[[cache]]\n\n| a | b |\n| - | - |\n| x | [[missing note\\|别名]] |\n"
    "\n[spec](../docs/missing%20file.md)\n",
    "study/big-log.md": "# Log\n\n[[cache]]\n" + "a line of a long log\n" * 150,
    "private/秘密.md": "# 秘密\n\n[[孤立的想法]] [[nowhere]]\n",
}


@pytest.fixture
def health_vault(monkeypatch: pytest.MonkeyPatch, pinned_root: Path) -> Path:
    root = pinned_root
    write_files(root, FILES)
    when = "2026-01-15T10:00:00+00:00"
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "import"], check=True)
    return root


def make_app(root: Path) -> Dashboard:
    app = Dashboard(root, poll_seconds=60)
    app.today = date(2026, 3, 1)
    return app


async def open_health(pilot: Any) -> None:
    await settle(pilot)
    await open_screen(pilot, "H")
    screen = pilot.app.screen
    assert isinstance(screen, HealthScreen)
    await until(pilot, lambda: screen.report is not None, "the health report")
    await settle(pilot)


@pytest.mark.parametrize("size", list(SIZES))
def test_health_screen(health_vault: Path, snap_compare: Any, size: str) -> None:
    app = make_app(health_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_health)


@pytest.mark.parametrize("size", ["80x24", "120x36"])
def test_health_open_at_a_broken_link(health_vault: Path, snap_compare: Any, size: str) -> None:
    async def run_before(pilot: Any) -> None:
        await open_health(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, HealthScreen)
        await pilot.press("j")  # the first broken link (j skips the group rows)
        await open_screen(pilot, "o")

    app = make_app(health_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
