"""The Reads screen's Cost tab: today's cost per tool and per client, the last 30 days as a
sparkline per tool and per client and as the days with calls, and today's biggest results
with the notes they named. It is drawn from the dashboard's events, in the screen's first frame;
the biggest results' notes are named once the private rules are known. Clients are named as
Stats names them (server.core.clients.client_name, without version); counts are right-aligned
under their headings, as on the Stats screen."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import DataTable, Static

from app.ui.widgets.cells import Distinct, cut_middle, fit, others_width
from app.ui.widgets.keys import Table
from app.ui.widgets.read_cells import (
    CLIENT_WIDTH,
    big_notes,
    big_notes_width,
    clock,
    share,
    sparkline,
)
from app.ui.widgets.table_fill import refill
from server.services.reads import BigRead, DailyCost

NARROW = 100  # below it, today's biggest results leave out their chars (the tokens say the size)


class CostPane(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static(Content(""), classes="caption", id="cost-caption")
        with Horizontal(classes="pair"):
            yield Table(id="by-tool", cursor_type="row")
            yield Table(id="by-client", cursor_type="row")
        # a 30-cell sparkline each: stacked, so both fit from 80 columns up
        yield Table(id="tool-days", cursor_type="row")
        yield Table(id="client-days", cursor_type="row")
        yield Table(id="by-day", cursor_type="row")
        yield Table(id="biggest", cursor_type="row")

    def draw(self, c: dict[str, Any], daily: DailyCost) -> None:
        """Today per tool and client (`context_cost`), the biggest results, the 30 days."""
        quiet = not c["calls"]
        caption = self.query_one("#cost-caption", Static)
        caption.update(
            Content("\n No tool results yet today; the days before are below.")
            if any(daily.calls)
            else Content(
                "\n No tool results in the last 30 days: no assistant has read this vault "
                "through vaultwatch yet. To connect Claude: esc, then c."
            )
        )
        caption.display = quiet
        for id_ in ("#by-tool", "#by-client", "#biggest"):  # headings over nothing say nothing
            self.query_one(id_, DataTable).display = not quiet
        refill(
            self.query_one("#by-tool", DataTable),
            ["tool", "calls", "chars", "≈ tokens"],
            [[t, c["calls"][t], n, c["tool_tokens"][t]] for t, n in c["tools"].most_common()],
        )
        whos = Distinct.clients(c["clients"])  # past CLIENT_WIDTH, cut as every screen does
        refill(
            self.query_one("#by-client", DataTable),
            ["client", "chars", "≈ tokens"],
            [
                [whos(k, CLIENT_WIDTH), n, c["client_tokens"][k]]
                for k, n in c["clients"].most_common()
            ],
        )
        self.draw_biggest(c["biggest"])
        self.draw_per_day(daily)

    def draw_biggest(self, big: list[BigRead]) -> None:
        """Today's biggest results, most tokens first (the service's order). The notes and the
        client share what the other columns leave; below NARROW columns the chars are left
        out, so that every column fits 80."""
        narrow = self.app.size.width < NARROW
        headings = ["biggest today", "tool", *([] if narrow else ["chars"]), "≈ tokens"]
        rows: list[list[Any]] = [
            [clock(b.event), str(b.event.get("tool", ""))]
            + ([] if narrow else [b.chars])
            + [b.tokens]
            for b in big
        ]
        # as every screen cuts clients, two never alike (`Distinct.clients`)
        cut = Distinct.clients(b.client for b in big)
        clients = [cut(b.client, CLIENT_WIDTH) for b in big]
        # the table's margin 3, the scroll's bar 2
        note, client = share(
            self.app.size.width,
            others_width(headings, rows) + 5,
            max(map(big_notes_width, big), default=0),
            clients,
        )
        names = Distinct.notes(b.paths[0] for b in big if b.paths)
        refill(
            self.query_one("#biggest", DataTable),
            [*headings, "notes", "client"],
            [
                # padded to its cells: cut at the end, a wide character that does not fit
                # leaves the last cell blank, and the column would give it up to no one
                [*row, big_notes(b, note, names), fit(Content(cut(b.client, client)), client)]
                for row, b in zip(rows, big, strict=True)
            ],
            most=200,
        )

    def draw_per_day(self, per: DailyCost) -> None:
        """The last 30 days: a sparkline per tool and per client, and the days with calls
        (none of it over 30 empty days: the caption says why there is nothing)."""
        for id_ in ("#tool-days", "#client-days", "#by-day"):
            self.query_one(id_, DataTable).display = any(per.calls)
        span = f"{len(per.days)} d to {per.days[-1]:%m-%d}"
        for id_, name, series in (
            ("#tool-days", "tool", per.tools),
            ("#client-days", "client", per.clients),
        ):
            # a client cut as every screen cuts clients, never as another is (`Distinct.clients`)
            cut = Distinct.clients(series) if name == "client" else cut_middle
            refill(
                self.query_one(id_, DataTable),
                [name, f"≈ tokens a day, {span}", "≈ tokens"],
                [[cut(k, 30), sparkline(v), sum(v)] for k, v in series.items()],
                most=max(len(per.days), 30),
            )
        refill(
            self.query_one("#by-day", DataTable),
            ["day", "calls", "chars", "≈ tokens"],
            [
                [f"{d:%a %m-%d}", per.calls[i], per.chars[i], per.tokens[i]]
                for i, d in reversed(list(enumerate(per.days)))
                if per.calls[i] or d == per.days[-1]  # empty days would push the rest away
            ],
        )
