"""Tag trends (weekly sparklines) and the context cost of what the tools returned."""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from server.vault import Vault

BARS = "▁▂▃▄▅▆▇█"
WEEKS = 12


def sparkline(values: list[int]) -> str:
    top = max(values) or 1
    return "".join(
        BARS[min(len(BARS) - 1, round(v / top * (len(BARS) - 1)))] if v else " " for v in values
    )


def tag_trends(
    root: Path, today: date | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Per tag: weekly counts over 12 weeks, count in the last 30 days, mark; and its notes."""
    today = today or date.today()
    vault = Vault(root)
    try:
        entries = vault.entries()
    finally:
        vault.close()
    weekly: dict[str, list[int]] = defaultdict(lambda: [0] * WEEKS)
    last30: Counter[str] = Counter()
    prev30: Counter[str] = Counter()
    notes: dict[str, list[str]] = defaultdict(list)
    spelled: dict[str, str] = {}
    for e in entries.values():
        for t in e.doc.tags:
            k = t.casefold()
            spelled.setdefault(k, t)
            notes[k].append(e.doc.path)
            age = (today - e.day).days
            if 0 <= age < WEEKS * 7:
                weekly[k][WEEKS - 1 - age // 7] += 1
            if 0 <= age < 30:
                last30[k] += 1
            elif 30 <= age < 60:
                prev30[k] += 1
    rows = []
    for k in notes:
        recent, prev = last30[k], prev30[k]
        mark = (
            "↑ rising"
            if recent >= 2 and recent >= 1.5 * prev + 1
            else "· quiet"
            if recent == 0
            else ""
        )
        rows.append({"tag": spelled[k], "spark": sparkline(weekly[k]), "recent": recent,
                     "total": len(notes[k]), "mark": mark})  # fmt: skip
    rows.sort(key=lambda r: (-r["recent"], -r["total"], r["tag"].casefold()))  # type: ignore[operator,attr-defined]
    return rows, {spelled[k]: sorted(v) for k, v in notes.items()}


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
        t.add_columns("tag", f"weekly ({WEEKS} w)", "30 d", "all", "")
        for r in self.rows:
            t.add_row(Content(r["tag"]), Content(r["spark"]), r["recent"], r["total"], Content(r["mark"]),
                      key=r["tag"])  # fmt: skip
        t.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        tag = str(event.row_key.value)
        paths = self.notes.get(tag, [])
        self.query_one("#tag-notes", Static).update(
            Content.styled(f"#{tag} · {len(paths)} notes\n", "bold")
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


def context_cost(events: list[dict[str, Any]], day: date | None = None) -> dict[str, Any]:
    """Characters and estimated tokens the tools returned today, per tool and per client."""
    day = day or datetime.now(UTC).date()
    per_tool: Counter[str] = Counter()
    per_client: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    biggest = []
    for e in events:
        if e.get("kind") not in ("read", "commit", "noop") or e.get("tool") == "snapshot":
            continue
        if not str(e.get("ts", "")).startswith(day.isoformat()):
            continue
        chars = int(e.get("chars") or 0)
        per_tool[e.get("tool", "?")] += chars
        per_client[str(e.get("client", "?"))] += chars
        calls[e.get("tool", "?")] += 1
        biggest.append((chars, e))
    biggest.sort(key=lambda x: -x[0])
    return {"tools": per_tool, "clients": per_client, "calls": calls, "biggest": biggest[:20],
            "total": sum(per_tool.values())}  # fmt: skip


def tokens(chars: int) -> int:
    return (chars + 3) // 4  # ~4 characters a token: an estimate, said so on screen


class CostScreen(Screen[None]):
    BINDINGS = [Binding("escape,q,dollar_sign", "app.pop_screen", "Back")]

    def __init__(self, events: list[dict[str, Any]]) -> None:
        super().__init__()
        self.cost = context_cost(events)

    def compose(self) -> ComposeResult:
        c = self.cost
        yield Static(Content.styled(f" Context cost today · {c['total']:,} chars ≈ {tokens(c['total']):,} tokens "
                                    "(estimate: 4 chars a token)", "bold"), id="title")  # fmt: skip
        with Horizontal():
            yield DataTable(id="by-tool", cursor_type="row")
            yield DataTable(id="by-client", cursor_type="row")
        yield DataTable(id="biggest", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        c = self.cost
        t = self.query_one("#by-tool", DataTable)
        t.add_columns("tool", "calls", "chars", "≈ tokens")
        for tool, chars in c["tools"].most_common():
            t.add_row(Content(tool), c["calls"][tool], f"{chars:,}", f"{tokens(chars):,}")
        t2 = self.query_one("#by-client", DataTable)
        t2.add_columns("client", "chars", "≈ tokens")
        for client, chars in c["clients"].most_common():
            t2.add_row(Content(client), f"{chars:,}", f"{tokens(chars):,}")
        t3 = self.query_one("#biggest", DataTable)
        t3.add_columns("biggest results", "tool", "client", "chars", "paths")
        for chars, e in c["biggest"]:
            t3.add_row(Content(str(e.get("ts", ""))[11:19]), Content(e.get("tool", "")),
                       Content(str(e.get("client", ""))), f"{chars:,}", Content(", ".join(e.get("paths") or [])))  # fmt: skip
