"""SVG snapshots of the dashboard (pytest-textual-snapshot): the timeline with a diff, the
revert confirmation, the side-by-side diff and the tags screen, at 80x24, 120x36 and 200x50,
on a vault with a Chinese note at a long path. Everything on screen is pinned: commit dates,
journal times, the vault's path, the terminal size, "today". Each baseline was looked at as an
image before it was committed: a baseline is a promise that the screen is right."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .snapshots import (
    LONG,
    SIZES,
    make_app,
    open_screen,
    pinned_vault,
    select_ai_commit,
    settle,
)

__all__ = ["pinned_vault"]  # the fixture, from the snapshots' shared ground


@pytest.mark.parametrize("size", list(SIZES))
def test_timeline_and_diff(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    """The Chinese note at a long path: its name, who, the +/- counts and the diff's wide
    characters, at each size (stacked below 160 columns, side by side above)."""

    async def run_before(pilot: Any) -> None:
        await select_ai_commit(pilot, f"append_section: {LONG}")

    app = make_app(pinned_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", ["120x36", "200x50"])
def test_side_by_side_diff(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    async def run_before(pilot: Any) -> None:
        await select_ai_commit(pilot, "edit_text")
        await pilot.press("s")
        await settle(pilot)

    app = make_app(pinned_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", ["80x24", "120x36"])
def test_revert_confirmation(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    async def run_before(pilot: Any) -> None:
        # (the append_section's line has the owner's unsaved line right after it: reverting it
        # opens the blockers dialog instead)
        await select_ai_commit(pilot, "edit_text")
        await open_screen(pilot, "r")

    app = make_app(pinned_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("size", list(SIZES))
def test_tags_screen(pinned_vault: Path, snap_compare: Any, size: str) -> None:
    async def run_before(pilot: Any) -> None:
        await select_ai_commit(pilot, "edit_text")
        await open_screen(pilot, "t")

    app = make_app(pinned_vault)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
