"""The owner's file actions from the keyboard, under Pilot on real repos: move with the preview
of link edits, new note from a type's form, delete with its backlinks, and revert of that
delete from the timeline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from app.ui.dashboard import Dashboard
from app.ui.dialogs.file_dialogs import DestinationPrompt, NewNoteForm, rank
from app.ui.dialogs.modals import ConfirmModal
from app.ui.widgets.lines import LinesView
from app.ui.widgets.timeline import Timeline

from .conftest import diff_shown, git, screen_is, until
from .desk import find

pytestmark = pytest.mark.anyio

CONFIG = """types:
  session:
    folder: sessions
    filename: "{date}-{slug}.md"
    required: [date, kind]
    dates: [date]
"""


@pytest.fixture
def vault(make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return make_vault(
        {
            "vault.config.yaml": CONFIG,
            "inbox/2026-12-01-mock.md": "---\ndate: 2026-12-01\nkind: mock\n---\n# Mock\n",
            "index.md": "- [[2026-12-01-mock]]\n- [m](inbox/2026-12-01-mock.md)\n",
        }
    )


async def move_to(pilot: Any, dest: str) -> None:
    """In the destination prompt: replace the path with `dest` and ask for the preview."""
    await screen_is(pilot, DestinationPrompt)
    await pilot.press("ctrl+u", *dest, "enter")


def on_top(app: Dashboard) -> Callable[[], bool]:
    return lambda: len(app.screen_stack) == 1


def test_the_finder_ranks_fuzzy_matches_best_first() -> None:
    files = ["inbox/2026-12-01-mock.md", "index.md", "sessions/mock-interview.md"]
    assert rank("interview", files) == ["sessions/mock-interview.md"]
    assert rank("inbox mock", files) == ["inbox/2026-12-01-mock.md"]
    assert rank("", files) == files


async def test_move_from_the_keyboard_previews_then_commits(vault: Path) -> None:
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(app.feed.rows))
        await find(pilot, "m", "inbox mock")
        await screen_is(pilot, DestinationPrompt)
        prompt = app.screen
        assert isinstance(prompt, DestinationPrompt) and prompt.suggested == "sessions"
        await move_to(pilot, "sessions/")
        await screen_is(pilot, ConfirmModal)
        preview = app.screen.query_one("#dialog-body", LinesView).plain
        assert "inbox/2026-12-01-mock.md  →  sessions/2026-12-01-mock.md" in preview
        assert (
            "Links change in 1 note" in preview
            and "+ - [m](sessions/2026-12-01-mock.md)" in preview
        )
        await pilot.press("y")
        await until(pilot, lambda: any(r.kind == "move" for r in app.visible_rows()))
    assert (vault / "sessions/2026-12-01-mock.md").exists() and not (vault / "inbox").exists()
    assert "[m](sessions/2026-12-01-mock.md)" in (vault / "index.md").read_text()


async def test_move_refused_and_cancelled_changes_nothing(vault: Path) -> None:
    head = git(vault, "rev-parse", "HEAD")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await find(pilot, "m", "inbox mock")
        await move_to(pilot, "index.md")  # taken
        await until(pilot, on_top(app))
        await find(pilot, "m", "inbox mock")
        await move_to(pilot, "sessions/")
        await screen_is(pilot, ConfirmModal)
        await pilot.press("n")
        await until(pilot, on_top(app))
    assert git(vault, "rev-parse", "HEAD") == head and git(vault, "status", "--porcelain") == ""


async def test_new_note_form_checks_dates_then_creates(vault: Path) -> None:
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n")
        await screen_is(pilot, NewNoteForm)
        form = app.screen
        assert isinstance(form, NewNoteForm)
        form.query_one("#f-title", Input).value = "Second mock"
        form.field("date").value = "2026-02-30"
        form.field("kind").value = "mock"
        await pilot.press("ctrl+s")

        def error() -> str:
            return str(form.query_one("#form-error").render())

        await until(pilot, lambda: "not a date" in error(), "the form's answer", describe=error)
        assert isinstance(app.screen, NewNoteForm)
        assert "not a date" in str(app.screen.query_one("#form-error").render())
        form.field("date").value = "2026-12-02"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any(r.kind == "create" for r in app.visible_rows()))
    assert (
        (vault / "sessions/2026-12-02-second-mock.md")
        .read_text()
        .startswith("---\ndate: 2026-12-02\nkind: mock\n")
    )


async def test_new_note_form_takes_chinese_field_names_and_a_field_called_title(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `n` closed the dashboard: a widget id was built from the field's name (`f-日期`)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    config = (
        "types:\n  会议:\n    folder: 项目\n    required: [日期, 地点 名称, title, status]\n"
        "    dates: [日期]\n    values: {status: [open, closed]}\n"
    )
    root = make_vault({"vault.config.yaml": config, "a.md": "# A\n"})
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("n")
        await screen_is(pilot, NewNoteForm)
        form = app.screen
        assert isinstance(form, NewNoteForm)
        form.query_one("#f-title", Input).value = "周会"
        form.field("日期").value = "2026-12-02"
        form.field("地点 名称").value = "北京"
        form.field("title").value = "周会记录"
        form.field("status").value = "open"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any(r.kind == "create" for r in app.visible_rows()))
    [note] = (root / "项目").iterdir()
    text = note.read_text()
    assert "日期: 2026-12-02" in text and "地点 名称: 北京" in text and "title: 周会记录" in text


async def test_delete_shows_backlinks_and_the_timeline_reverts_it(vault: Path) -> None:
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await find(pilot, "x", "inbox mock")
        await screen_is(pilot, ConfirmModal)
        body = app.screen.query_one("#dialog-body", LinesView).plain
        assert "2 links to it will break" in body and "index.md:1  [[2026-12-01-mock]]" in body
        await pilot.press("y")
        await until(pilot, lambda: any(r.kind == "remove" for r in app.visible_rows()))
        assert not (vault / "inbox/2026-12-01-mock.md").exists()
        t = app.query_one("#timeline", Timeline)
        # the feed has the row before the timeline is filled from it
        await until(
            pilot,
            lambda: any(r.kind == "remove" for r in t.rows),
            "the delete's row in the timeline",
            describe=lambda: [r.kind for r in t.rows],
        )
        at = next(i for i, r in enumerate(t.rows) if r.kind == "remove")
        t.move_to(at)
        await diff_shown(pilot, t.rows[at])
        await pilot.press("r")
        await screen_is(pilot, ConfirmModal)
        await pilot.press("y")
        await until(pilot, lambda: (vault / "inbox/2026-12-01-mock.md").exists())
