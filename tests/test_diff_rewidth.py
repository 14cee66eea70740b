"""A diff laid out for a width follows every new width of its pane: the main screen's side by
side diff (its columns) and the review screen's net diff (its header lines, worded for the
width). Both used to be laid out again from the screen's resize only, which can come before
the pane has its new width: under load the side by side kept the old columns (1 run in 3 with
CPU hogs). Here the pane's own width changes without the terminal's (the deterministic case),
and the terminal is resized with every core busy."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

from app.ui.dashboard import Dashboard
from app.ui.screens.review_screen import ReviewScreen
from app.ui.widgets.diff_pane import DiffPane
from app.ui.widgets.net_diff_pane import NetDiffPane
from app.ui.widgets.review_diff import render_net
from app.ui.widgets.timeline import Timeline

from .conftest import start_hogs, stop_hogs, until

pytestmark = pytest.mark.anyio

NOTE = "# N\n\ntags: [system-design, 面试]\n" + "prose words " * 30 + "\n"


def _at(app: Dashboard, size: tuple[int, int]) -> Callable[[], bool]:
    return lambda: app.screen.size == size


async def _ai_edit(connect: Any, root: Path) -> str:
    async with connect(root) as s:
        res = await s.call("edit_text", path="n.md", old="面试]", new="面试, crdt]")
    return str(res["commit"])


async def _side_by_side(pilot: Any, sha: str) -> DiffPane:
    """The AI's edit selected and shown side by side (`s`)."""
    app = pilot.app
    t = app.query_one("#timeline", Timeline)
    await until(pilot, lambda: t.index_of(f"c:{sha}") is not None, "the AI's row")
    at = t.index_of(f"c:{sha}")
    assert at is not None
    t.move_to(at)
    await pilot.press("s")
    pane = app.query_one("#detail", DiffPane)
    await until(pilot, lambda: "│" in pane.plain, "the side by side")
    return pane


def _columns(pane: DiffPane) -> tuple[int, int]:
    """(the pane's text width, the widest side-by-side row)."""
    rows = [line.cell_length for line in pane.lines if "│" in line.plain]
    return pane.scrollable_content_region.width, max(rows, default=0)


async def _laid_out_for_the_pane(pilot: Any, pane: DiffPane, what: str) -> None:
    """The side by side fits the pane and fills it (its two halves take the width: the widest
    row within a divider and a cell of it)."""
    await until(
        pilot,
        lambda: _columns(pane)[0] - 4 <= _columns(pane)[1] <= _columns(pane)[0],
        what,
        describe=lambda: _columns(pane),
    )


@contextlib.asynccontextmanager
async def _side_by_side_at_200x50(
    connect: Any, make_vault: Any
) -> AsyncIterator[tuple[Any, DiffPane]]:
    """The dashboard at 200x50 with the AI's edit shown side by side, laid out for its pane:
    yields (the pilot, the diff pane)."""
    root = make_vault({"n.md": NOTE})
    sha = await _ai_edit(connect, root)
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(200, 50)) as pilot:
        pane = await _side_by_side(pilot, sha)
        await _laid_out_for_the_pane(pilot, pane, "the side by side at 200x50")
        yield pilot, pane


async def _resized_under_load(
    pilot: Any, sizes: list[tuple[int, int]], laid_out: Callable[[str], Awaitable[None]]
) -> None:
    """The terminal resized to each of `sizes` with every core busy: at each, the screen at
    that size and then `laid_out(what)` (what: the size, for its timeout message)."""
    hogs = start_hogs()
    try:
        for size in sizes:
            await pilot.resize_terminal(*size)
            await until(pilot, _at(pilot.app, size), f"the screen at {size}")
            await laid_out(f"at {size}")
    finally:
        stop_hogs(hogs)


async def test_the_side_by_side_follows_its_panes_width_not_only_the_terminals(
    connect: Any, make_vault: Any
) -> None:
    async with _side_by_side_at_200x50(connect, make_vault) as (pilot, pane):
        app = pilot.app
        before = _columns(pane)
        # the timeline narrower: the pane wider, the terminal as it was (no screen Resize)
        app.query_one("#timeline").styles.width = 40
        await until(pilot, lambda: _columns(pane)[0] > before[0], "the pane wider")
        await _laid_out_for_the_pane(pilot, pane, "the side by side laid out again")
        assert _columns(pane)[1] > before[1]


@pytest.mark.load
async def test_the_side_by_side_follows_terminal_resizes_under_load(
    connect: Any, make_vault: Any
) -> None:
    async with _side_by_side_at_200x50(connect, make_vault) as (pilot, pane):
        await _resized_under_load(
            pilot,
            [(100, 30), (160, 40), (80, 24), (200, 50)],
            lambda at: _laid_out_for_the_pane(pilot, pane, f"the side by side {at}"),
        )


async def _review_open(pilot: Any, connect: Any, root: Path) -> NetDiffPane:
    app = pilot.app
    async with connect(root) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- the AI's line")
    await until(pilot, lambda: app.review_watch.count, "an AI change to review")
    await pilot.press("v")
    await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review screen")
    pane = app.screen.query_one(NetDiffPane)
    await until(pilot, lambda: pane.shown is not None, "the net diff shown")
    return pane


def _header(pane: NetDiffPane) -> list[str]:
    """The note, its figures, what the diff is from: the lines worded for the width."""
    return [ln.plain for ln in pane.lines[:3]]


def _worded_for(pane: NetDiffPane, width: int) -> list[str]:
    """The same lines as the review's renderer words them for `width`."""
    s = pane.shown
    assert s is not None
    return [ln.plain for ln in render_net(s.note, s.diff, pane.host.since, s.hunk, width)[0][:3]]


async def _worded_for_the_pane(pilot: Any, pane: NetDiffPane, what: str) -> None:
    def width() -> int:
        return pane.scrollable_content_region.width

    await until(
        pilot,
        lambda: _header(pane) == _worded_for(pane, width()),
        what,
        describe=lambda: (width(), _header(pane), _worded_for(pane, width())),
    )


@contextlib.asynccontextmanager
async def _review_at(
    connect: Any, make_vault: Any, size: tuple[int, int]
) -> AsyncIterator[tuple[Any, NetDiffPane]]:
    """The review screen at `size` on the AI's appended line, its header worded for the pane:
    yields (the pilot, the net diff pane)."""
    root = make_vault({"w.md": "# W\n\n## Log\n- one\n"})
    app = Dashboard(root, poll_seconds=0.05)
    async with app.run_test(size=size) as pilot:
        pane = await _review_open(pilot, connect, root)
        await _worded_for_the_pane(pilot, pane, f"the header at {size}")
        yield pilot, pane


async def test_the_review_diffs_header_is_worded_for_its_panes_width(
    connect: Any, make_vault: Any
) -> None:
    async with _review_at(connect, make_vault, (120, 36)) as (pilot, pane):
        longest = max(cell_len(line) for line in _header(pane))
        # the pane 40 cells narrower, the terminal as it was (no screen Resize)
        pane.styles.margin = (0, 20)
        await until(
            pilot,
            lambda: pane.scrollable_content_region.width < longest,
            "the pane narrower than its header",
        )
        await _worded_for_the_pane(pilot, pane, "the header worded again")


@pytest.mark.load
async def test_the_review_diffs_header_follows_terminal_resizes_under_load(
    connect: Any, make_vault: Any
) -> None:
    async with _review_at(connect, make_vault, (200, 50)) as (pilot, pane):
        await _resized_under_load(
            pilot,
            [(80, 24), (120, 36), (70, 24), (200, 50)],
            lambda at: _worded_for_the_pane(pilot, pane, f"the header {at}"),
        )
