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
from rich.style import Style as RichStyle
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
from .cells import Cell as TableCell

PERIODS: tuple[str | None, ...] = ("12w", "52w", None)  # `p` goes round them; None: all history
PERIOD_WORDS = {"12w": "12 weeks", "52w": "52 weeks", None: "all history"}
CHECK_SECONDS = 1.0  # how often an open screen looks whether the feed moved


BOLD = RichStyle(bold=True)


def put(
    table: DataTable[Any],
    headings: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    bold_last: bool = False,
) -> None:
    """Fill a table: columns as wide as their widest cell in terminal cells (a Chinese
    character takes two), counts right-aligned under their headings, text as it is (the
    indent of a tool under its measure kept), the last row in bold when it is a total.
    Each cell is plain text already padded to its column (`cells.Cell`): a rich Text cell is
    wrapped, split and justified again at every draw, most of the screen's drawing time.
    (`insights.fill` gives Content cells, which wrap and so drop leading spaces.)"""
    counts = [bool(rows) and isinstance(rows[0][i], int) for i in range(len(headings))]
    texts = [[f"{c:,}" if isinstance(c, int) else c for c in r] for r in rows]
    widths = []
    for i, heading in enumerate(headings):
        width = max([cell_len(heading), *(cell_len(r[i]) for r in texts)])
        label = Text(heading, justify="right" if counts[i] else "left")
        table.add_column(label, width=width)
        widths.append(width)
    for n, row in enumerate(texts):
        style = BOLD if bold_last and n == len(texts) - 1 else None
        table.add_row(*(_cell(c, widths[i], counts[i], style) for i, c in enumerate(row)))


def _cell(text: str, width: int, right: bool, style: RichStyle | None) -> TableCell:
    """`text` padded to `width` cells, on the left when it is a count (right-aligned)."""
    pad = " " * (width - cell_len(text))
    return TableCell((pad + text if right else text + pad, style))


class StatsScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]
    AUTO_FOCUS = "#stats-weeks"
    BINDINGS = [
        Binding("escape,q,S", "app.pop_screen", "Back"),
        Binding("p", "period", "Period", tooltip="the last 12 weeks, 52 weeks, or all history"),
        Binding("r", "refresh", "Refresh", tooltip="count again now (it also follows the vault)"),
    ]
    DEFAULT_CSS = """
    StatsScreen #title {
        height: auto; background: $panel; text-wrap: nowrap; text-overflow: ellipsis;
    }
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
        self._asked = 0  # counts asked for; only the last one asked is shown

    def compose(self) -> ComposeResult:
        yield Static(self._counting_title(), id="title")
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
            self.count(quietly=True)

    def action_refresh(self) -> None:
        self.count()

    def action_period(self) -> None:
        at = PERIODS.index(self.since) if self.since in PERIODS else -1
        self.since = PERIODS[(at + 1) % len(PERIODS)]
        self.count()

    def count(self, *, quietly: bool = False) -> None:
        """Count the period in a thread; the screen is drawn meanwhile. Unless `quietly` (the
        vault moved while the screen is open), the title says so until the count lands: the
        figures below are still the last period's."""
        self._asked += 1
        if not quietly:
            with contextlib.suppress(NoMatches):
                self.query_one("#title", Static).update(self._counting_title())
        self._count(self._asked, self.since)

    def _counting_title(self) -> Content:
        title = Content.styled(
            f" Write statistics · counting {PERIOD_WORDS.get(self.since)}…", "bold"
        )
        if self.stats is None:
            return title
        return title + Content.styled(f"  (shown: {describe(self.stats)})", "$text-muted")

    @work(thread=True, exclusive=True, group="stats")
    def _count(self, asked: int, since: str | None) -> None:
        events = self.events() if self.events is not None else None
        stats = compute(self.root, since, now=self.now, events=events)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._show, stats, asked)

    # -- showing ----------------------------------------------------------------------------------

    def _show(self, stats: Stats, asked: int) -> None:
        if not self.is_attached or asked != self._asked:
            return  # closed meanwhile, or a later count was asked for (`p` pressed again)
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
