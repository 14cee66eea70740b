"""Write statistics (`S`): a row per ISO week, each measure's weekly sparkline with its total
(the tools under AI commits, what reverts took back, the rejection codes), and each client.
Counted by `app.stats` in a thread; kept current as the journal and git change."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ..stats import Cell, Stats, client_table, compute, describe, measure_table, week_table

PERIODS: tuple[str | None, ...] = ("12w", "52w", None)  # `p` goes round them; None: all history
CHECK_SECONDS = 1.0  # how often an open screen looks whether the feed moved


def put(
    table: DataTable[Any],
    headings: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    bold_last: bool = False,
) -> None:
    """Fill a table: columns as wide as their widest cell in terminal cells (a Chinese
    character takes two), counts right-aligned under their headings, text as it is (the
    indent of a tool under its measure kept), the last row in bold when it is a total.
    (`insights.fill` gives Content cells, which wrap and so drop leading spaces.)"""
    counts = [bool(rows) and isinstance(rows[0][i], int) for i in range(len(headings))]
    texts = [[f"{c:,}" if isinstance(c, int) else c for c in r] for r in rows]
    for i, heading in enumerate(headings):
        width = max([cell_len(heading), *(cell_len(r[i]) for r in texts)])
        label = Text(heading, justify="right" if counts[i] else "left")
        table.add_column(label, width=width)
    for n, row in enumerate(texts):
        style = "bold" if bold_last and n == len(texts) - 1 else ""
        table.add_row(
            *(
                Text(c, style=style, no_wrap=True, justify="right" if counts[i] else "left")
                for i, c in enumerate(row)
            )
        )


class StatsScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]
    AUTO_FOCUS = "#stats-weeks"
    BINDINGS = [
        Binding("escape,q,S", "app.pop_screen", "Back"),
        Binding("p", "period", "Period", tooltip="the last 12 weeks, 52 weeks, or all history"),
        Binding("r", "refresh", "Refresh", tooltip="count again now (it also follows the vault)"),
    ]
    DEFAULT_CSS = """
    StatsScreen #title { height: auto; background: $panel; }
    StatsScreen #stats-body { height: 1fr; }
    StatsScreen .heading { height: 1; margin: 1 1 0 1; text-style: bold; }
    StatsScreen DataTable { height: auto; width: auto; max-width: 100%; margin: 0 1; }
    StatsScreen #stats-lower { height: auto; }
    /* side by side: the trend as wide as it needs, the clients (their tools) the rest */
    StatsScreen #stats-lower > Vertical { height: auto; width: auto; max-width: 50%; }
    StatsScreen #stats-lower > #stats-clients-pane { width: 1fr; max-width: 100%; }
    StatsScreen.-narrow #stats-lower { layout: vertical; }
    StatsScreen.-narrow #stats-lower > Vertical { width: 1fr; max-width: 100%; }
    """

    def __init__(
        self,
        root: Path,
        *,
        events: Callable[[], list[dict[str, Any]]] | None = None,
        now: datetime | None = None,
        since: str | None = PERIODS[0],
    ) -> None:
        super().__init__()
        self.root = root
        self.events = events  # the journal as the app has read it (None: read it here)
        self.now = now  # pinned by tests; else the clock at each count
        self.since = since
        self.stats: Stats | None = None
        self._seen: object = None  # what the feed looked like at the last count

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(" Write statistics · counting…", "bold"), id="title")
        with VerticalScroll(id="stats-body"):
            yield Static(Content("per week, newest first"), classes="heading")
            yield DataTable(
                id="stats-weeks", cursor_type="row", fixed_columns=1, zebra_stripes=True
            )
            with Horizontal(id="stats-lower"):
                with Vertical():
                    yield Static(Content("trend: weekly, oldest on the left"), classes="heading")
                    yield DataTable(id="stats-trend", cursor_type="row", fixed_columns=1)
                with Vertical(id="stats-clients-pane"):
                    yield Static(Content("per client"), classes="heading")
                    yield DataTable(id="stats-clients", cursor_type="row", fixed_columns=1)
        yield Footer()

    def on_mount(self) -> None:
        self._seen = self._feed_state()
        self.count()
        self.set_interval(CHECK_SECONDS, self._follow)

    # -- counting ---------------------------------------------------------------------------------

    def _feed_state(self) -> object:
        """The dashboard's feed (rows and events) as it is now: a new commit or journal event
        changes it. Without a dashboard (the screen alone), nothing to follow."""
        feed = getattr(self.app, "feed", None)
        return None if feed is None else (id(feed.rows), len(feed.events))

    def _follow(self) -> None:
        state = self._feed_state()
        if state is not None and state != self._seen:
            self._seen = state
            self.count()

    def action_refresh(self) -> None:
        self.count()

    def action_period(self) -> None:
        at = PERIODS.index(self.since) if self.since in PERIODS else -1
        self.since = PERIODS[(at + 1) % len(PERIODS)]
        self.count()

    @work(thread=True, exclusive=True, group="stats")
    def count(self) -> None:
        events = self.events() if self.events is not None else None
        stats = compute(self.root, self.since, now=self.now, events=events)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._show, stats)

    # -- showing ----------------------------------------------------------------------------------

    def _show(self, stats: Stats) -> None:
        if not self.is_attached:
            return
        self.stats = stats
        with contextlib.suppress(NoMatches):
            self.query_one("#title", Static).update(
                Content.styled(f" Write statistics · {describe(stats)}", "bold")
            )
            self._table("#stats-weeks", *week_table(stats), bold_last=True)
            self._table("#stats-trend", *measure_table(stats))
            self._table("#stats-clients", *client_table(stats))

    def _table(
        self,
        selector: str,
        headings: list[str],
        rows: list[list[Cell]],
        bold_last: bool = False,
    ) -> None:
        table = self.query_one(selector, DataTable)
        at = table.cursor_row
        table.clear(columns=True)
        put(table, headings, rows, bold_last)
        if table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1))
