"""Tag trends (weekly sparklines) and the context cost of what the tools returned."""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from server.journal import TOKEN_RULE, estimate_tokens
from server.tags import tally
from server.vault import Vault

from ..stats import sparkline
from .timeline import note_cell

WEEKS = 12
DAYS = 14  # earlier days on the cost screen
Cell = Content | int | str


def fill(
    table: DataTable[Any],
    headings: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    keys: Sequence[str] | None = None,
    most: int = 60,
) -> None:
    """Columns as wide as their widest cell, measured in terminal cells (a Chinese character
    takes two). DataTable measures a Content cell as one cell wide, so without explicit widths
    every column was cut to its heading (`sys` for system-design). `most` caps one column."""
    cells = [
        [
            c if isinstance(c, Content) else Content(f"{c:,}" if isinstance(c, int) else c)
            for c in row
        ]
        for row in rows
    ]
    for i, heading in enumerate(headings):
        width = max([Content(heading).cell_length, *(r[i].cell_length for r in cells)])
        table.add_column(Text(heading), width=min(most, width))
    for n, row in enumerate(cells):
        table.add_row(*row, key=keys[n] if keys else None)


MARKS = {"rising": "↑ rising", "steady": "", "quiet": "· quiet"}
TREND_DAYS = 30  # the window the trend mark compares (list_tags' default)


def tag_trends(
    root: Path, today: date | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Per tag: weekly counts over 12 weeks, count in the last 30 days, mark; and its notes.
    Counts, trend and order are the server's own (`server.tags`, as list_tags gives them);
    only the weekly buckets are the dashboard's."""
    today = today or date.today()
    vault = Vault(root)
    try:
        entries = list(vault.entries().values())
        config = vault.config
    finally:
        vault.close()
    weekly: dict[str, list[int]] = defaultdict(lambda: [0] * WEEKS)
    for e in entries:
        age = (today - e.day).days
        if 0 <= age < WEEKS * 7:
            for t in e.doc.tags:
                weekly[t.casefold()][WEEKS - 1 - age // 7] += 1
    tallies = tally(entries, config, TREND_DAYS, today)
    rows: list[dict[str, Any]] = [
        {
            "tag": s.tag,
            "spark": sparkline(weekly[s.key]),
            "recent": s.recent,
            "total": s.count,
            "mark": MARKS[s.trend],
        }
        for s in tallies
    ]
    return rows, {s.tag: sorted(s.paths) for s in tallies}


class TagsScreen(Screen[tuple[str, list[str]] | None]):
    """Enter on a tag closes it with (the tag, its notes): the timeline then shows those."""

    BINDINGS = [Binding("escape,q,g", "app.pop_screen", "Back")]

    def __init__(self, root: Path, today: date | None = None) -> None:
        super().__init__()
        self.root = root
        self.today = today
        self.rows, self.notes = tag_trends(root, today)

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled(f" Tag trends · last {WEEKS} weeks, newest on the right", "bold"),
            id="title",
        )
        with Horizontal():
            yield DataTable(id="tags", cursor_type="row", zebra_stripes=True)
            with Vertical(id="tag-notes-pane"):
                yield Static(id="tag-notes")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#tags", DataTable)
        fill(
            t,
            ["tag", f"weekly ({WEEKS} w)", "30 d", "all", "trend"],
            [[r["tag"], r["spark"], r["recent"], r["total"], r["mark"]] for r in self.rows],
            keys=[r["tag"] for r in self.rows],
        )
        t.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        tag = str(event.row_key.value)
        paths = self.notes.get(tag, [])
        self.query_one("#tag-notes", Static).update(
            Content.styled(f"#{tag} · {len(paths)} note{'' if len(paths) == 1 else 's'}\n", "bold")
            + Content.styled("enter shows them in the timeline\n", "$text-muted")
            + Content("\n".join(paths))
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        tag = str(event.row_key.value)
        self.dismiss((tag, self.notes.get(tag, [])))

    def reload(self) -> None:
        """The vault changed while this is open: the same table from the notes as they are now."""
        self._reload()

    @work(thread=True, exclusive=True, group="tags")
    def _reload(self) -> None:
        rows, notes = tag_trends(self.root, self.today)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._refill, rows, notes)

    def _refill(self, rows: list[dict[str, Any]], notes: dict[str, list[str]]) -> None:
        if (rows, notes) == (self.rows, self.notes) or not self.is_attached:
            return  # nothing new, or the screen has closed meanwhile
        table = self.query_one("#tags", DataTable)
        at = table.cursor_row
        self.rows, self.notes = rows, notes
        table.clear(columns=True)
        self.on_mount()  # fills the table from self.rows, as when the screen opened
        table.move_cursor(row=min(at, max(0, table.row_count - 1)))


def local_time(event: dict[str, Any]) -> datetime | None:
    """An event's time in the owner's time zone (the journal keeps UTC)."""
    try:
        return datetime.fromisoformat(str(event["ts"]).replace("Z", "+00:00")).astimezone()
    except (KeyError, ValueError):
        return None


def event_tokens(event: dict[str, Any]) -> int:
    """The server's estimate for the text it returned; events from before it journaled one
    are estimated from their length as Latin text."""
    if isinstance(event.get("tokens"), int):
        return int(event["tokens"])
    return estimate_tokens("x" * int(event.get("chars") or 0))


def context_cost(events: list[dict[str, Any]], day: date | None = None) -> dict[str, Any]:
    """Characters and estimated tokens the tools returned on the owner's `day` (today, local
    time), per tool and per client, and the totals of the DAYS days before it."""
    day = day or datetime.now().astimezone().date()
    per_tool: Counter[str] = Counter()
    per_tool_tokens: Counter[str] = Counter()
    per_client: Counter[str] = Counter()
    per_client_tokens: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    days: dict[date, list[int]] = {day - timedelta(days=n): [0, 0, 0] for n in range(DAYS + 1)}
    biggest = []
    for e in events:
        if e.get("kind") not in ("read", "commit", "noop") or e.get("tool") == "snapshot":
            continue
        at = local_time(e)
        when = at.date() if at is not None else None
        if when not in days:
            continue
        chars, toks = int(e.get("chars") or 0), event_tokens(e)
        totals = days[when]
        totals[0], totals[1], totals[2] = totals[0] + 1, totals[1] + chars, totals[2] + toks
        if when != day:
            continue
        tool, client = str(e.get("tool", "?")), str(e.get("client", "?"))
        per_tool[tool] += chars
        per_tool_tokens[tool] += toks
        per_client[client] += chars
        per_client_tokens[client] += toks
        calls[tool] += 1
        biggest.append((chars, e))
    biggest.sort(key=lambda x: -x[0])
    return {
        "day": day,
        "tools": per_tool,
        "tool_tokens": per_tool_tokens,
        "clients": per_client,
        "client_tokens": per_client_tokens,
        "calls": calls,
        "biggest": biggest[:20],
        "total": sum(per_tool.values()),
        "tokens": sum(per_tool_tokens.values()),
        "days": days,
    }


def clock(event: dict[str, Any]) -> str:
    at = local_time(event)
    return f"{at:%H:%M:%S}" if at is not None else ""


class CostScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [Binding("escape,q,dollar_sign", "app.pop_screen", "Back")]
    AUTO_FOCUS = "#by-tool"

    def __init__(self, events: list[dict[str, Any]], day: date | None = None) -> None:
        super().__init__()
        self.cost = context_cost(events, day)

    def compose(self) -> ComposeResult:
        c = self.cost
        yield Static(
            Content.styled(
                f" Context cost today ({c['day']:%a %Y-%m-%d}, local time) · "
                f"{c['total']:,} chars ≈ {c['tokens']:,} tokens",
                "bold",
            ),
            id="title",
        )
        yield Static(Content(f" {TOKEN_RULE}"), classes="hint")
        # one scrolling page: side by side where there is room, stacked on a small terminal
        with VerticalScroll(id="cost-body"):
            with Horizontal(id="cost-tables"):
                yield DataTable(id="by-tool", cursor_type="row")
                yield DataTable(id="by-client", cursor_type="row")
            yield DataTable(id="biggest", cursor_type="row")
            yield DataTable(id="by-day", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        c = self.cost
        fill(
            self.query_one("#by-tool", DataTable),
            ["tool", "calls", "chars", "≈ tokens"],
            [[t, c["calls"][t], n, c["tool_tokens"][t]] for t, n in c["tools"].most_common()],
        )
        fill(
            self.query_one("#by-client", DataTable),
            ["client", "chars", "≈ tokens"],
            [[k, n, c["client_tokens"][k]] for k, n in c["clients"].most_common()],
        )
        fill(
            self.query_one("#by-day", DataTable),
            [f"day (last {DAYS})", "calls", "chars", "≈ tokens"],
            [
                [f"{d:%a %m-%d}", *v]
                for d, v in sorted(c["days"].items(), reverse=True)
                if v[0] or d == c["day"]  # days without calls would push the rest off screen
            ],
        )
        fill(
            self.query_one("#biggest", DataTable),
            ["biggest", "tool", "chars", "≈ tokens", "notes", "client"],
            [
                [
                    clock(e),
                    str(e.get("tool", "")),
                    n,
                    event_tokens(e),
                    note_cell(e.get("paths") or []),
                    str(e.get("client", "")),
                ]
                for n, e in c["biggest"]
            ],
            most=200,
        )
