"""Write statistics (`S`): a row per ISO week, each measure's weekly sparkline with its total
(the tools under AI commits, what reverts took back, the rejection codes), and each client.
Counted by `app.services.stats` in a thread; kept current as the journal and git change.

Every table is laid out for the terminal's width (again when it changes): the week table
starts with the measures a week is read for and has a column per tool after them (short names
where the full ones do not fit, explained under it; `→` scrolls a column at a time); the trend's
sparklines take what the measure and the total leave (the newest weeks, when not all fit); the
client tables give the names and the tools what the counts leave, a name cut as every screen
cuts clients (`Distinct.clients`)."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.services.recording_trend import RecordingWeek, trend_table, weekly
from app.services.stats import (
    Cell,
    Stats,
    client_table,
    compute,
    describe,
    measure_table,
    week_table,
)
from app.ui.widgets.cells import Distinct, cut_middle, others_width, short_names
from app.ui.widgets.keys import Pane, Table
from app.ui.widgets.table_fill import fill

PERIODS: tuple[str | None, ...] = ("12w", "52w", None)  # `p` goes round them; None: all history
PERIOD_WORDS = {"12w": "12 weeks", "52w": "52 weeks", None: "all history"}
CHECK_SECONDS = 1.0  # how often an open screen looks whether the feed moved
# the week table's first columns, in sight from 80 columns: the tools come after them
HEADLINE = ("week", "AI", "yours", "reverts", "+lines", "−lines", "conflicts", "rejected", "no-ops")
# kept free of columns, always: the body's vertical scrollbar (at 24 rows it always scrolls)
# and a table's own (one taller than the body scrolls inside: its heading stays); one cell each
SCROLLBAR = 1
MARGIN = 2  # a table's margin, a cell on each side (the week table's: on the left only)
WIDE = 150  # from here the trend and the clients sit side by side (HORIZONTAL_BREAKPOINTS)
MEASURE_WIDTH = 24  # a trend measure (a tool's name) cut in the middle past it
NAME_WIDTH = 8  # the least a client's name is cut to
TOOLS_NAME_WIDTH = 16  # ... beside its tools, which take the rest


TREND_HEADING = "trend: weekly, oldest on the left"
WEEKS_HEADING = "per week, newest first"
MORE_COLUMNS = " · more columns to the right: → scrolls"


def tools_text(counts: Counter[str], names: dict[str, str]) -> str:
    """A client's AI commits per tool, most first: "49 append, 21 update"."""
    ranked = sorted(counts, key=lambda k: (-counts[k], k))
    return ", ".join(f"{counts[k]} {names.get(k, k)}" for k in ranked)


def cut_list(text: str, width: int) -> str:
    """A ", "-separated list in `width` cells: whole items and how many are left out (`+3 more`)."""
    if cell_len(text) <= width:
        return text
    items = text.split(", ")
    for keep in range(len(items) - 1, 0, -1):
        cut = ", ".join(items[:keep]) + f", +{len(items) - keep} more"
        if cell_len(cut) <= width:
            return cut
    return cut_middle(text, width)


def legend_text(names: dict[str, str], width: int) -> str:
    """The short names and what they stand for, in lines of `width` cells broken between
    entries ("append = append_section · update = update_frontmatter")."""
    lines = ["tools:"]
    for full, short in names.items():
        entry = cut_middle(f"{short} = {full}", width - 2)
        joined = f"{lines[-1]} · {entry}" if lines[-1] != "tools:" else f"tools: {entry}"
        if cell_len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(entry)
    return "\n".join(lines)


def week_columns(
    stats: Stats, names: dict[str, str] | None = None
) -> tuple[list[str], list[list[Cell]]]:
    """`week_table` (the shell's order: the tools right after AI) with the headline measures
    first and the tools after them, under `names` (short ones) when given."""
    headings, rows = week_table(stats)
    tools = len(stats.total.tools)  # its columns after `week` and `AI`, before `yours`
    order = [0, 1, *range(2 + tools, len(headings)), *range(2, 2 + tools)]
    heads = [headings[i] for i in order]
    if names:
        heads = heads[: len(HEADLINE)] + [names.get(h, h) for h in heads[len(HEADLINE) :]]
    return heads, [[row[i] for i in order] for row in rows]


class StatsTable(Table):
    """A table whose `→` and `←` scroll a column at a time (DataTable's row cursor scrolls a
    cell: the tools of the week table were some 95 presses away), sized by its content
    (`width: auto; height: auto`; keys.Table keeps that size new)."""

    def action_cursor_right(self) -> None:
        self._scroll_column(1)

    def action_cursor_left(self) -> None:
        self._scroll_column(-1)

    def _scroll_column(self, step: int) -> None:
        columns = self.ordered_columns
        fixed = sum(c.get_render_width(self) for c in columns[: self.fixed_columns])
        starts, x = [], fixed
        for column in columns[self.fixed_columns :]:
            starts.append(x - fixed)  # scrolled this far, the column is the first after `fixed`
            x += column.get_render_width(self)
        at = round(self.scroll_x)
        if step > 0:
            to = next((s for s in starts if s > at), self.max_scroll_x)
        else:
            to = next((s for s in reversed(starts) if s < at), 0)
        self.scroll_to(x=min(to, self.max_scroll_x), animate=False)


class StatsScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE, "-wide")]
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
    StatsScreen #stats-body { height: 1fr; scrollbar-size-vertical: 1; }
    StatsScreen .heading { height: 1; margin: 1 1 0 1; text-style: bold; }
    StatsScreen #stats-legend { height: auto; margin: 0 1; color: $text-muted; }
    StatsScreen #stats-client-tools { margin: 1 1 0 1; }
    StatsScreen #stats-no-clients { display: none; color: $text-muted; margin: 1 0 0 0; }
    StatsScreen DataTable {
        height: auto; width: auto; max-width: 100%; margin: 0 1; scrollbar-size-vertical: 1;
    }
    StatsScreen #stats-weeks { margin: 0 0 0 1; }
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
        self.recorded: list[RecordingWeek] = []
        self._seen: object = None  # what the feed looked like at the last count
        self._asked = 0  # counts asked for; only the last one asked is shown
        self.landed = 0  # counts come back from their thread, shown or dropped (tests wait on it)
        self._drawn: dict[str, object] = {}  # what each table shows (see _table)

    def compose(self) -> ComposeResult:
        yield Static(self._counting_title(), id="title")
        with Pane(id="stats-body"):
            yield Static(Content(WEEKS_HEADING), classes="heading", id="weeks-heading")
            yield StatsTable(
                id="stats-weeks", cursor_type="row", fixed_columns=1, zebra_stripes=True
            )
            yield Static(id="stats-legend")
            with Horizontal(id="stats-lower"):
                with Vertical():
                    yield Static(Content(TREND_HEADING), classes="heading")
                    yield StatsTable(id="stats-trend", cursor_type="row", fixed_columns=1)
                with Vertical(id="stats-clients-pane"):
                    yield Static(Content("per client"), classes="heading")
                    yield Static(
                        Content(
                            " no assistant wrote in this period (to connect Claude: esc, then c)"
                        ),
                        id="stats-no-clients",
                    )
                    yield StatsTable(id="stats-clients", cursor_type="row", fixed_columns=1)
                    yield StatsTable(id="stats-client-tools", cursor_type="row", fixed_columns=1)
            # only when a note has a practice recording's figures (vaultwatch transcribe)
            yield Static(
                Content("practice recordings per week"), classes="heading", id="rec-heading"
            )
            yield StatsTable(id="stats-recordings", cursor_type="row", fixed_columns=1)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#stats-legend", Static).display = False
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
        recorded = weekly(self.root, stats.start.date() if stats.start else None)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._show, stats, asked, recorded)

    # -- showing ----------------------------------------------------------------------------------

    def _show(self, stats: Stats, asked: int, recorded: list[RecordingWeek]) -> None:
        self.landed += 1
        if not self.is_attached or asked != self._asked:
            return  # closed meanwhile, or a later count was asked for (`p` pressed again)
        self.stats = stats
        self.recorded = recorded
        with contextlib.suppress(NoMatches):
            self.query_one("#title", Static).update(
                Content.styled(f" Write statistics · {describe(stats)}", "bold")
            )
            self._draw(stats)

    def on_resize(self) -> None:
        if self.stats is not None:
            with contextlib.suppress(NoMatches):
                self._draw(self.stats)

    def _draw(self, stats: Stats) -> None:
        """The tables laid out for the terminal's width: the app's, as a screen spans it (its
        own size is not set before its first layout)."""
        body = self.app.size.width - SCROLLBAR
        room = body - MARGIN - SCROLLBAR  # a table's columns, the whole width
        tools = stats.total.tools
        names = short_names(sorted(tools, key=lambda k: (-tools[k], k)))  # the columns' order
        # the week table: the tools' full names where the whole table fits, else short ones
        full = week_columns(stats)
        weeks = full if others_width(*full) <= room + 1 else week_columns(stats, names)
        self._table("#stats-weeks", *weeks, bold_last=True)
        # a table wider than the screen says so where the eye is, not only by a scrollbar
        cut = others_width(*weeks) > room + 1
        self.query_one("#weeks-heading", Static).update(
            Content(WEEKS_HEADING) + (Content.styled(MORE_COLUMNS, "$text-warning") if cut else "")
        )
        # the trend: as wide as it needs; side by side with the clients, at most half
        wide = self.app.size.width >= WIDE
        trend_room = body // 2 - MARGIN - SCROLLBAR if wide else room
        trend = self._trend(stats, trend_room)
        self._table("#stats-trend", *trend)
        if wide:  # the trend's pane: its table and scrollbar, or its heading
            used = max(others_width(*trend) + SCROLLBAR, cell_len(TREND_HEADING)) + MARGIN
            clients_room = body - min(used, body // 2) - MARGIN - SCROLLBAR
        else:
            clients_room = room
        short = self._clients(stats, clients_room, names)
        shown = {t: n for t, n in names.items() if n != t and (weeks is not full or short)}
        legend = self.query_one("#stats-legend", Static)
        legend.display = bool(shown)
        legend.update(Content(legend_text(shown, body - MARGIN)))
        self._table("#stats-recordings", *trend_table(self.recorded))
        for selector in ("#rec-heading", "#stats-recordings"):
            self.query_one(selector).display = bool(self.recorded)

    def _trend(self, stats: Stats, room: int) -> tuple[list[str], list[list[Cell]]]:
        """`measure_table` in `room` cells: the measure (cut past MEASURE_WIDTH) and the total
        whole, the sparkline what they leave, its newest weeks when not all fit."""
        headings, rows = measure_table(stats)
        rows = [[cut_middle(str(r[0]), MEASURE_WIDTH), r[1], r[2]] for r in rows]
        spark = max(
            1, room - others_width([headings[0], headings[2]], [[r[0], r[2]] for r in rows]) - 2
        )
        weeks = [w.week for w in stats.weeks]
        if len(weeks) <= spark:
            return headings, rows
        first, last = weeks[-spark], weeks[-1]
        heading = next(
            (
                h
                for h in (
                    f"last {spark} weeks, {first} → {last}",
                    f"{first} → {last}",
                    f"last {spark} weeks",
                )
                if cell_len(h) <= spark
            ),
            cut_middle("weekly", spark),
        )
        return [headings[0], heading, headings[2]], [[r[0], str(r[1])[-spark:], r[2]] for r in rows]

    def _clients(self, stats: Stats, room: int, names: dict[str, str]) -> bool:
        """The client tables in `room` cells. The counts: a name gets what they leave, cut as
        every screen cuts clients (`Distinct.clients`: `claude-…`, `…code`). The tools: with their full names where every client's list fits beside
        the name (cut no shorter than TOOLS_NAME_WIDTH), else the short names, else the busiest
        tools and how many more. True when the short names are used."""
        headings, rows = client_table(stats)
        whos = Distinct.clients(stats.clients)  # the timeline's rule: a client reads alike
        counts = headings[1:-1]
        need = max([cell_len(headings[0]), *(cell_len(str(r[0])) for r in rows)])
        left = room - others_width(counts, [r[1:-1] for r in rows]) - 2
        name = min(need, max(NAME_WIDTH, left))
        self._table(
            "#stats-clients",
            headings[:-1],
            [[whos(str(r[0]), name), *r[1:-1]] for r in rows],
        )
        room -= 4  # the name's and the tools' padding
        short = False
        for short in (False, True):
            text = {
                k: tools_text(t.tools, names if short else {}) for k, t in stats.clients.items()
            }
            longest = max(map(cell_len, text.values()), default=0)
            name = min(need, max(TOOLS_NAME_WIDTH, room - longest))
            if name + longest <= room:
                break
        tools = max(1, room - max(name, cell_len("client")))
        self._table(
            "#stats-client-tools",
            ["client", "tools"],
            [[whos(k, name), cut_list(v, tools)] for k, v in text.items()],
        )
        self.query_one("#stats-client-tools", DataTable).display = bool(text)
        # headings over nothing say nothing: say why there is nothing
        self.query_one("#stats-clients", DataTable).display = bool(rows)
        self.query_one("#stats-no-clients", Static).display = not rows
        return short

    def _table(
        self,
        selector: str,
        headings: list[str],
        rows: list[list[Cell]],
        bold_last: bool = False,
    ) -> None:
        table = self.query_one(selector, DataTable)
        drawn = (tuple(headings), tuple(tuple(row) for row in rows), bold_last)
        if self._drawn.get(selector) == drawn and table.row_count == len(rows):
            # the same figures counted again (the history's backfill, a second after the
            # screen opened, changed none of them): refilled, the table jumped back to its
            # first column under the owner's eyes (fresh-clone run 25)
            return
        self._drawn[selector] = drawn
        at, x = table.cursor_row, table.scroll_target_x
        table.clear(columns=True)
        fill(table, headings, rows, bold_last=bold_last)
        if table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1))
        if x:  # new figures: the owner's column kept (scrolled once the new width is known)
            table.call_after_refresh(table.scroll_to, x=x, animate=False)
