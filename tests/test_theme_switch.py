"""A theme switched while a list is on screen (ctrl+p → theme): every coloured cell follows it at
once. The review list's +/− counts kept the colours of the theme they were filled under (their
styles were resolved to colours when the rows were made) and read at 1.0-1.5:1 in a light theme
until the list was filled again (issue 33)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.settings import READABLE

from .colours import segment_contrast
from .review_desk import open_review
from .settling import settled

pytestmark = pytest.mark.anyio

# from a dark theme to a light one first: the colours a dark theme gives read worst on light rows
THEMES = ("vaultwatch-light", "textual-light", "textual-dark", "vaultwatch-dark")
COUNT = re.compile(r"^[+−]\d")


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({f"{n}.md": f"# {n.title()}\n\n## Log\n- one\n" for n in "abcde"})


def counts_drawn(table: DataTable[Any]) -> list[tuple[str, float]]:
    """Each drawn +/− count in the table's rows in sight but the cursor's, with its contrast on
    its row. The cursor's row is drawn in the theme's own cursor colours, whatever the cells'
    styles (`+2 −1` as one segment): the theme's to keep readable, not the cells'."""
    return [
        (word, round(segment_contrast(seg), 2))
        for y in range(1, table.size.height)  # under the header line
        if y - 1 + round(table.scroll_y) != table.cursor_row
        for seg in table.render_line(y)
        for word in seg.text.split()
        if COUNT.match(word)
    ]


async def test_the_review_counts_follow_a_theme_switch(connect: Any, vault: Path) -> None:
    """The review list opened in the dark theme, then each theme chosen in turn: the +/− counts
    of every row off the cursor (both stripes) at READABLE or more on their row, drawn
    in the theme on screen, not the one the list was filled under."""
    async with connect(vault) as s:
        for n in "abcde":
            await s.call("edit_text", path=f"{n}.md", old="- one", new=f"- {n} by the ai\n- two")
    app = Dashboard(vault, poll_seconds=60, theme="vaultwatch-dark")
    low: dict[str, list[tuple[str, float]]] = {}
    async with app.run_test(size=(120, 36)) as pilot:
        review = await open_review(pilot)
        table = review.query_one("#review-notes", DataTable)
        assert table.row_count == 5, table.row_count
        await settled(pilot, "the review list drawn in vaultwatch-dark")
        for theme in THEMES:
            app.theme = theme
            await settled(pilot, f"the review list drawn in {theme}")
            seen = counts_drawn(table)
            assert len(seen) == 8, (theme, seen)  # +N and −N on each row off the cursor
            low[theme] = [s for s in seen if s[1] < READABLE]
    bad = {k: v for k, v in low.items() if v}
    assert not bad, f"+/− counts drawn below {READABLE}:1 after a theme switch: {bad}"
