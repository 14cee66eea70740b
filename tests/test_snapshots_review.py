"""SVG snapshots of the review screens (pytest-textual-snapshot) at 80x24, 120x36 and 200x50, on
the pinned vault of the dashboard snapshots: a Chinese note at a long path, the owner's unsaved
line beside the AI's, every date pinned. The launch prompt (a toast) is cleared before the
screens it would cover; it has its own snapshot. Each baseline was looked at as an image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.ui.screens.note_screen import NoteScreen

from .conftest import until
from .snapshots import LONG, SIZES, make_app, open_screen, pinned_vault, review, settle

__all__ = ["pinned_vault"]  # the fixture, imported from the dashboard's snapshots


@pytest.mark.parametrize("size", list(SIZES))
def test_review_screen(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    """The three notes, newest first, the Chinese one at a long path cut in the middle; its
    net diff under the AI commit that wrote it."""

    async def run_before(pilot: Any) -> None:
        await review(pilot)

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", ["80x24", "120x36"])
def test_review_owner_lines_set_apart(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    """The week note: the AI's line, and the owner's unsaved line under YOU."""

    async def run_before(pilot: Any) -> None:
        await review(pilot, "weeks/w49.md")

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZES[size], run_before=run_before)


def test_review_period_view(pinned_vault: Path, snap_compare: Any) -> None:
    """A period typed in (`d`): every AI change since then, reviewed (✓) or not (•)."""

    async def run_before(pilot: Any) -> None:
        screen = await review(pilot)
        screen.query_one("#review-notes").focus()
        await pilot.press("space")  # one note reviewed, so the ✓ column has both marks
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        for ch in "2026-01-01":
            await pilot.press(ch)
        await pilot.press("enter")
        await settle(pilot)
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(
        make_app(pinned_vault), terminal_size=SIZES["120x36"], run_before=run_before
    )


@pytest.mark.parametrize("size", list(SIZES))
def test_note_view(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    """The Chinese note as it is now, the AI's line marked, its history and the AI's share."""

    async def run_before(pilot: Any) -> None:
        await review(pilot, LONG)
        await open_screen(pilot, "o")
        assert isinstance(pilot.app.screen, NoteScreen)
        await settle(pilot)

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZES[size], run_before=run_before)


def test_undo_hunk_confirmation(pinned_vault: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await review(pilot, "study/cache.md")
        await open_screen(pilot, "u")

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZES["80x24"], run_before=run_before)


def test_launch_prompt(pinned_vault: Path, snap_compare: Any) -> None:
    """At launch, with AI changes to review: the header's count and the prompt naming `v`."""

    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await until(pilot, lambda: bool(app._notifications), "the launch prompt")
        await settle(pilot, toasts=True)

    assert snap_compare(make_app(pinned_vault), terminal_size=SIZES["80x24"], run_before=run_before)
