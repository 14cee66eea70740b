"""SVG snapshots of the owner's feedback where the owner reviews: above the net diff in review
(an open comment on the AI's hunk) and above the note's text in the note view (one open, one
answered by an AI write that named it), at 80x24 and 120x36, on the pinned vault of the
dashboard snapshots. Ids and dates are pinned. Each baseline was looked at as an image."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from app.services.feedback import add_feedback
from app.ui.screens.feedback_screen import FeedbackScreen
from app.ui.screens.note_screen import NoteScreen
from server.write import feedback as store

from .conftest import git, until
from .snapshots import LONG, SIZES, WHEN, make_app, open_screen, review, settle
from .snapshots import pinned_vault as pinned_vault  # the fixture


@pytest.fixture
def feedback_vault(pinned_vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ids = (f"{n:06x}" for n in itertools.count(0xA1B2C3))
    monkeypatch.setattr(store, "secrets", SimpleNamespace(token_hex=lambda _n: next(ids)))
    monkeypatch.setattr(store, "_now", lambda: "2026-01-15T10:30:00.000000Z")
    root = pinned_vault
    ai = git(root, "log", "-1", "--format=%H", "--", "weeks/w49.md").strip()
    add_feedback(root, "weeks/w49.md", "Which mock? Link the session note", line=9, commit=ai)
    answered = add_feedback(root, LONG, "Add one line in English for the search")
    add_feedback(root, LONG, "向量时钟那部分写得太长，压缩成三点")
    monkeypatch.setenv("GIT_AUTHOR_DATE", WHEN.format(40))
    monkeypatch.setenv("GIT_COMMITTER_DATE", WHEN.format(40))

    async def answer() -> None:
        from mcp import Client

        from server.protocol.tools import build_server
        from server.vault import Vault

        vault = Vault(root)
        async with Client(build_server(vault)) as c:
            r = await c.call_tool(
                "append_section",
                {
                    "path": LONG,
                    "heading": "日志",
                    "content": "- In English: offline sync, CRDTs vs last-writer-wins",
                    "answers": [answered.id],
                },
            )
            assert not r.is_error, r
        vault.close()

    anyio.run(answer)
    return root


@pytest.mark.parametrize("size", ["80x24", "120x36"])
def test_review_shows_feedback_on_the_hunk(
    feedback_vault: Path, snap_compare: Any, size: str
) -> None:
    """The week note's net diff with the owner's open comment on the AI's line above it."""

    async def run_before(pilot: Any) -> None:
        screen = await review(pilot, "weeks/w49.md")
        await until(pilot, lambda: bool(screen.feedback), "the feedback on the review screen")
        assert screen.feedback
        await settle(pilot)

    assert snap_compare(make_app(feedback_vault), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", ["80x24", "120x36"])
def test_note_view_shows_open_and_answered_feedback(
    feedback_vault: Path, snap_compare: Any, size: str
) -> None:
    """The Chinese note: one comment open, one answered by the AI's commit, above its text."""

    async def run_before(pilot: Any) -> None:
        await review(pilot, LONG)
        await open_screen(pilot, "o")
        screen = pilot.app.screen
        assert isinstance(screen, NoteScreen)
        await until(
            pilot,
            lambda: screen.view is not None and bool(screen.feedback),
            "the note and its feedback",
            describe=lambda: (screen.view is not None, len(screen.feedback)),
        )
        assert len(screen.feedback) == 2
        await settle(pilot)

    assert snap_compare(make_app(feedback_vault), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", ["80x24", "120x36"])
def test_feedback_screen_shows_the_answer(
    feedback_vault: Path, snap_compare: Any, size: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F: the open and answered items, the answered one selected with its answering diff."""
    monkeypatch.setenv("TZ", "UTC")  # the item's time is shown in local time
    time.tzset()

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await open_screen(pilot, "F")
        screen = pilot.app.screen
        assert isinstance(screen, FeedbackScreen)
        await until(
            pilot,
            lambda: len(screen.items) == 3,
            "the three feedback items",
            describe=lambda: [i.text for i in screen.items],
        )
        await pilot.press("j")
        selected = screen.current()
        assert selected is not None and selected.status == "answered"
        await settle(pilot)

    try:
        assert snap_compare(
            make_app(feedback_vault), terminal_size=SIZES[size], run_before=run_before
        )
    finally:
        monkeypatch.undo()
        time.tzset()
