"""The Reads screen (`$`): what the AI reads and what it costs. Four tabs: today's cost with
the last 30 days per client and per tool, the notes read most, the notes not read in N days,
and the get_context preview with its changes since the owner last marked it reviewed.

It only draws: the figures come from server.services.reads and app.services.context_preview. The cost
tab (today and the last 30 days) is drawn from the dashboard's events at once, in the screen's
first frame. What needs the vault is computed in a thread after that frame, and again whenever
new events arrive: first the private rules, which name the notes of today's biggest results
(never named before they are known), then the note lists and the preview.

A tab's widgets are made when it is first shown (the cost tab at open): laying out and filling
every tab's tables at once (thousands of rows of notes) kept the screen from opening for
seconds on a big vault. A tab once made is kept current like the shown one.

The owner edits notes in other programs, which write no journal event: while the Context tab
shows, the files its preview was built from (the config, the rules file, the notes it
includes and their folders) are looked at with `stat` every half second, and the preview is
built again when one of them changed.

Clients are named as Stats names them (server.core.clients.client_name, without version);
counts are right-aligned under their headings, as on the Stats screen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from app.services.context_files import Stamp, context_files, files_stamp
from app.services.context_preview import Preview, mark_reviewed, preview
from app.ui.navigation import desk
from app.ui.widgets.cells import cut_middle, note_label, others_width, plural
from app.ui.widgets.keys import Table
from app.ui.widgets.lines import LinesView
from app.ui.widgets.read_cells import (
    CLIENT_WIDTH,
    big_notes,
    big_notes_width,
    clients_cell,
    clock,
    label_width,
    sparkline,
    when,
)
from app.ui.widgets.table_fill import fill
from server.services.reads import (
    BigRead,
    DailyCost,
    Reads,
    context_cost,
    cost_per_day,
    reads_report,
)
from server.vault import Vault
from server.write.journal import TOKEN_RULE

UNREAD_DAYS = (7, 14, 30, 60, 90, 180, 365)
NOTE_WIDTH = 24  # the least the Not read tab's note column takes
NARROW = 100  # below it, today's biggest results leave out their chars (the tokens say the size)
TABS = ("cost", "most", "unread", "context")


class ReadsScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("escape,q,dollar_sign", "app.pop_screen", "Back"),
        # the tab bar names 1-4 already; in the footer too they pushed "? Keys" off at 80 columns
        Binding(
            "1", "tab('cost')", "Cost", show=False, tooltip="context cost: today, the last 30 days"
        ),
        Binding("2", "tab('most')", "Most read", show=False, tooltip="the notes the AI reads most"),
        Binding("3", "tab('unread')", "Not read", show=False, tooltip="notes not read in N days"),
        Binding(
            "4",
            "tab('context')",
            "Context",
            show=False,
            tooltip="what get_context gives the AI now",
        ),
        Binding("plus,equals_sign", "days(1)", "More days", show=False, tooltip="N days: more"),
        Binding("minus", "days(-1)", "Fewer days", show=False, tooltip="N days: fewer"),
        Binding("m", "mark_reviewed", "Reviewed", tooltip="mark the context preview reviewed"),
    ]
    SCOPED_CSS = False  # the rules name ReadsScreen themselves (and its -narrow class)
    DEFAULT_CSS = """
    ReadsScreen #title { height: auto; background: $panel; }
    ReadsScreen .hint { height: 1; color: $text-muted; text-overflow: ellipsis; }
    ReadsScreen TabbedContent { height: 1fr; }
    ReadsScreen TabPane { padding: 0; height: 1fr; }
    ReadsScreen VerticalScroll { height: 1fr; }
    ReadsScreen .pair { height: auto; }
    ReadsScreen DataTable { height: auto; width: auto; margin: 1 2 0 1; }
    ReadsScreen #most, ReadsScreen #unread { height: 1fr; margin: 0 1; }
    ReadsScreen.-narrow .pair { layout: vertical; }
    ReadsScreen .caption { height: auto; padding: 0 1; }
    ReadsScreen #context-body { height: 1fr; padding: 0 1; }
    """

    def __init__(
        self,
        root: Path,
        events: list[dict[str, Any]],
        today: date | None = None,
        now: datetime | None = None,
    ) -> None:
        super().__init__()
        self.root = root
        self.events = events  # the dashboard's list: it grows as events arrive
        self.seen = len(events)
        self.today = today
        # a pinned day (tests) pins the clock the lists count days from, too
        self.now = now or (datetime.combine(today, time(12)).astimezone() if today else None)
        self.days = 30
        self.cost = context_cost(events, today)
        self.daily: DailyCost = cost_per_day(events, self.now.date() if self.now else None)
        self.report: Reads | None = None
        self.preview: Preview | None = None
        self.failure = ""
        self.built: set[str] = {"cost"}  # the tabs whose widgets exist (made when first shown)
        self.widths: dict[str, int] = {}  # the width each list's notes were last drawn in
        # the files the preview shown was built from, and their stamp when it was built
        self.context_files: list[str] | None = None
        self.context_stamp: Stamp = ()

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static(Content(f" {TOKEN_RULE}"), classes="hint")
        with TabbedContent(initial="tab-cost"):
            with TabPane("1 Cost", id="tab-cost"), VerticalScroll(id="cost-body"):
                yield Static(Content(""), classes="caption", id="cost-caption")
                with Horizontal(classes="pair"):
                    yield Table(id="by-tool", cursor_type="row")
                    yield Table(id="by-client", cursor_type="row")
                # a 30-cell sparkline each: stacked, so both fit from 80 columns up
                yield Table(id="tool-days", cursor_type="row")
                yield Table(id="client-days", cursor_type="row")
                yield Table(id="by-day", cursor_type="row")
                yield Table(id="biggest", cursor_type="row")
            yield TabPane("2 Most read", id="tab-most")  # made when first shown (`build`)
            yield TabPane("3 Not read", id="tab-unread")
            yield TabPane("4 Context", id="tab-context")
        yield Footer()

    def waiting(self, what: str) -> Content:
        """What a tab says before its figures are in: what it waits for, or why they never came."""
        return Content(f" could not read the vault: {self.failure}" if self.failure else what)

    def tab_widgets(self, tab: str) -> list[Widget]:
        """What a tab other than the cost holds, before its figures are drawn into it."""
        if tab == "context":
            # wrapped by cells, between Chinese characters too, and only where it is in sight;
            # its text is set once it is mounted (`build`)
            return [LinesView(id="context-body")]
        return [
            Static(self.waiting(" reading the vault…"), classes="caption", id=f"{tab}-caption"),
            Table(id=tab, cursor_type="row", zebra_stripes=True),
        ]

    async def build(self, tab: str) -> None:
        """Make a tab's widgets the first time it is shown, and draw what is known into them."""
        if tab in self.built or tab not in TABS:
            return
        self.built.add(tab)
        await self.query_one(f"#tab-{tab}", TabPane).mount_all(self.tab_widgets(tab))
        if tab == "context":
            self.query_one("#context-body", LinesView).update(self.waiting("building the context…"))
            self.draw_context()
        else:
            self.draw_lists()

    def on_mount(self) -> None:
        self.draw_cost()
        self.query_one("#by-tool", DataTable).focus()
        # at once: its first step (the private rules) is short and names the biggest results'
        # notes; the count after it shares the interpreter with the first frames either way
        # (started after the first refresh, the names came 0.15 s later and the frame no sooner)
        self.load()
        self.set_interval(0.5, self.follow)

    def on_resize(self) -> None:
        self.draw_biggest()  # note columns take the width there is
        if self.report is not None:
            self.draw_lists()

    # -- data -----------------------------------------------------------------------------------

    def follow(self) -> None:
        """New journal events (the dashboard appends to the same list): count again, in the
        thread, and draw what came out. While the Context tab shows, a file its preview was
        built from that changed on disk builds the preview again."""
        if len(self.events) != self.seen:
            self.seen = len(self.events)
            self.load()
        elif self.context_files is not None and self.context_shown():
            stamp = files_stamp(self.root, self.context_files)
            if stamp != self.context_stamp:
                self.context_stamp = stamp  # asked once: the new preview brings its own
                self.load_context()

    def context_shown(self) -> bool:
        with contextlib.suppress(NoMatches):
            return self.query_one(TabbedContent).active == "tab-context"
        return False

    def build_preview(self, vault: Vault) -> tuple[Preview, list[str], Stamp]:
        """The preview, the files it was built from and their stamp, taken before it was built
        when those are the files of the last one: a file changed while it was built is then
        seen as changed, and built again."""
        known = self.context_files
        before = files_stamp(self.root, known) if known is not None else ()
        shown = preview(self.root, vault)
        files = context_files(shown)
        return shown, files, before if files == known else files_stamp(self.root, files)

    @work(thread=True, exclusive=True, group="reads-context")
    def load_context(self) -> None:
        """The preview alone, built again (a file it includes changed)."""
        try:
            built = self.build_preview(desk(self).vault())
        except Exception as exc:
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.app.call_from_thread(self.failed, f"{type(exc).__name__}: {exc}")
            return
        with contextlib.suppress(RuntimeError):
            self.app.call_from_thread(self.context_loaded, *built)

    def context_loaded(self, shown: Preview, files: list[str], stamp: Stamp) -> None:
        if self.is_attached:
            self.preview, self.context_files, self.context_stamp = shown, files, stamp
            self.draw_context()

    @work(thread=True, exclusive=True, group="reads")
    def load(self) -> None:
        events = self.events[: self.seen]
        first = self.report is None
        try:
            vault = desk(self).vault()
            cost = context_cost(events, self.today, vault.policy.is_private)
            if first:  # name the biggest results' notes now: the count takes longer
                self.app.call_from_thread(self.cost_known, cost)
            report = reads_report(vault, events, self.days, self.now)
            built = self.build_preview(vault)
        except Exception as exc:  # the screen says what broke instead of staying empty
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.app.call_from_thread(self.failed, f"{type(exc).__name__}: {exc}")
            return
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self.loaded, cost, report, *built)

    def failed(self, why: str) -> None:
        self.failure = why
        if self.is_attached:
            said = Content(f" could not read the vault: {why}")
            for id_ in ("#most-caption", "#unread-caption"):
                with contextlib.suppress(NoMatches):  # a tab not made yet says it when made
                    self.query_one(id_, Static).update(said)
            with contextlib.suppress(NoMatches):
                self.query_one("#context-body", LinesView).update(said)

    def cost_known(self, cost: dict[str, Any]) -> None:
        if self.is_attached:
            self.cost = cost
            self.draw_cost()

    def loaded(
        self, cost: dict[str, Any], report: Reads, shown: Preview, files: list[str], stamp: Stamp
    ) -> None:
        if not self.is_attached:
            return
        self.cost, self.report, self.preview = cost, report, shown
        self.context_files, self.context_stamp = files, stamp
        self.daily = report.per_day
        self.draw_cost()
        self.draw_lists()
        self.draw_context()

    # -- drawing --------------------------------------------------------------------------------

    def refill(self, id_: str, headings: Sequence[str], rows: Any, most: int = 60) -> None:
        table = self.query_one(id_, DataTable)
        at = table.cursor_row
        table.clear(columns=True)
        fill(table, headings, rows, most=most)
        if table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1))

    def draw_cost(self) -> None:
        c = self.cost
        self.query_one("#title", Static).update(
            Content.styled(
                f" What the AI reads · cost today ({c['day']:%a %m-%d}, local) "
                f"{plural(c['total'], 'char')} ≈ {plural(c['tokens'], 'token')}",
                "bold",
            )
        )
        quiet = not c["calls"]
        ever = any(self.daily.calls)
        caption = self.query_one("#cost-caption", Static)
        caption.update(
            Content("\n No tool results yet today; the days before are below.")
            if ever
            else Content(
                "\n No tool results in the last 30 days: no assistant has read this vault "
                "through vaultwatch yet. To connect Claude: esc, then c."
            )
        )
        caption.display = quiet
        for id_ in ("#by-tool", "#by-client", "#biggest"):  # headings over nothing say nothing
            self.query_one(id_, DataTable).display = not quiet
        self.refill(
            "#by-tool",
            ["tool", "calls", "chars", "≈ tokens"],
            [[t, c["calls"][t], n, c["tool_tokens"][t]] for t, n in c["tools"].most_common()],
        )
        self.refill(
            "#by-client",
            ["client", "chars", "≈ tokens"],
            [[k, n, c["client_tokens"][k]] for k, n in c["clients"].most_common()],
        )
        self.draw_biggest()
        self.draw_per_day()

    def draw_biggest(self) -> None:
        """Today's biggest results, most tokens first (the service's order). The notes and the
        client share what the other columns leave; below NARROW columns the chars are left
        out, so that every column fits 80."""
        big: list[BigRead] = self.cost["biggest"]
        narrow = self.app.size.width < NARROW
        headings = ["biggest today", "tool", *([] if narrow else ["chars"]), "≈ tokens"]
        rows: list[list[Any]] = [
            [clock(b.event), str(b.event.get("tool", ""))]
            + ([] if narrow else [b.chars])
            + [b.tokens]
            for b in big
        ]
        clients = [cut_middle(b.client, CLIENT_WIDTH) for b in big]
        # the table's margin 3, the scroll's bar 2
        note, client = self.share(
            others_width(headings, rows) + 5, max(map(big_notes_width, big), default=0), clients
        )
        self.refill(
            "#biggest",
            [*headings, "notes", "client"],
            [
                [*row, big_notes(b, note), cut_middle(k, client)]
                for row, b, k in zip(rows, big, clients, strict=True)
            ],
            most=200,
        )

    def draw_per_day(self) -> None:
        """The last 30 days: a sparkline per tool and per client, and the days with calls
        (none of it over 30 empty days: the caption says why there is nothing)."""
        per = self.daily
        for id_ in ("#tool-days", "#client-days", "#by-day"):
            self.query_one(id_, DataTable).display = any(per.calls)
        span = f"{len(per.days)} d to {per.days[-1]:%m-%d}"
        for id_, name, series in (
            ("#tool-days", "tool", per.tools),
            ("#client-days", "client", per.clients),
        ):
            self.refill(
                id_,
                [name, f"≈ tokens a day, {span}", "≈ tokens"],
                [[cut_middle(k, 30), sparkline(v), sum(v)] for k, v in series.items()],
                most=max(len(per.days), 30),
            )
        self.refill(
            "#by-day",
            ["day", "calls", "chars", "≈ tokens"],
            [
                [f"{d:%a %m-%d}", per.calls[i], per.chars[i], per.tokens[i]]
                for i, d in reversed(list(enumerate(per.days)))
                if per.calls[i] or d == per.days[-1]  # empty days would push the rest away
            ],
        )

    @property
    def year(self) -> int:
        return (self.now or datetime.now()).year

    def scrollbar(self, rows: int) -> int:
        """The cells a list tab's scrollbar takes: 2 where its rows may not all fit (the
        title, hint, tabs, caption, headings and footer take 8 or 9 rows), else none."""
        return 2 if rows > self.app.size.height - 10 else 0

    def share(self, others: int, notes: int, clients: Sequence[str]) -> tuple[int, int]:
        """(note width, client width): what `others` cells (the other columns, the table's
        margin and scrollbar) leave of the terminal's width, shared by a note column whose
        widest label takes `notes` cells whole and a client column (none when `clients` is
        empty); never more than the client's longest name, the note given every cell the
        client does not take. Both whole where there is room. Else the note first, whole if
        the client then keeps 14 cells (`claude-code +1`; down to 8 where the terminal is
        narrow and the note would keep fewer than 20); where the note is cut either way,
        the client keeps a quarter of the room. The app's width: a screen spans it, and its
        own size is not set before its first layout."""
        room = self.app.size.width - others - 2  # the note's padding
        if not clients:
            return max(NOTE_WIDTH, room), 0
        room -= 2  # the client's padding
        need = max(cell_len(k) for k in clients)
        least = max(8, min(14, room - 20))
        client = room - notes if room - notes >= least else max(least, room // 4)
        client = min(need, client)
        return max(8, room - client), client

    def draw_lists(self) -> None:
        """The Most read and Not read tabs, those of them made (see `build`)."""
        r = self.report
        if r is None:
            return
        if "most" in self.built:
            self.draw_most(r)
        if "unread" in self.built:
            self.draw_unread(r)

    def draw_most(self, r: Reads) -> None:
        self.query_one("#most-caption", Static).update(
            Content(
                f" {plural(len(r.most), 'note')} read, most first · a read's tokens are shared "
                "by the notes it named"
                if r.most
                else " No note of the vault has been read yet (the journal has no read of one)."
            )
        )
        headings = ["reads", "≈ tokens", "last read"]
        rows: list[list[Any]] = [
            [n.reads, round(n.tokens), when(n.last, self.year)] for n in r.most
        ]
        note, client = self.share(
            others_width(headings, rows) + 2 + self.scrollbar(len(rows)),  # the margin 2
            max((label_width(n.path) for n in r.most), default=0),
            [clients_cell(n.clients) for n in r.most],
        )
        self.widths["most"] = note
        self.refill(
            "#most",
            ["note", *headings, "clients"],
            [
                [note_label(n.path, note), *row, clients_cell(n.clients, client)]
                for n, row in zip(r.most, rows, strict=True)
            ],
            most=max(note, 40),
        )
        self.query_one("#most", DataTable).display = bool(r.most)

    def draw_unread(self, r: Reads) -> None:
        never = sum(1 for u in r.unread if u.last is None)
        self.query_one("#unread-caption", Static).update(
            Content(
                f" {plural(len(r.unread), 'note')} of {r.notes:,} not read in {r.days} days "
                f"({never:,} never) · + − change the days"
                if r.unread
                else f" Every one of the {plural(r.notes, 'note')} was read in the last "
                f"{r.days} days · + − change the days"
            )
        )
        self.query_one("#unread", DataTable).display = bool(r.unread)
        headings = ["last read", "modified"]
        rows: list[list[Any]] = [
            [when(u.last, self.year), f"{u.modified:%Y-%m-%d}"] for u in r.unread
        ]
        note, _ = self.share(others_width(headings, rows) + 2 + self.scrollbar(len(rows)), 0, [])
        self.widths["unread"] = note
        self.refill(
            "#unread",
            ["note", *headings],
            [[note_label(u.path, note), *row] for u, row in zip(r.unread, rows, strict=True)],
            most=max(note, 40),
        )

    def draw_context(self) -> None:
        p = self.preview
        if p is None or "context" not in self.built:
            return
        seen = (
            f"last marked reviewed {p.reviewed_at:%Y-%m-%d %H:%M}"
            if p.reviewed_at
            else "never marked reviewed"
        )
        state = (
            "changed since" if p.changed and p.reviewed_at else "unchanged" if not p.changed else ""
        )
        parts = [
            Content.styled(
                f"What a new conversation receives now: {plural(p.chars, 'char')} ≈ "
                f"{plural(p.tokens, 'token')}",
                "bold",
            ),
            Content(f"{seen}{' · ' + state if state else ''} · m marks it reviewed"),
            Content(""),
        ]
        diff = p.diff() if p.reviewed is not None else []
        if diff:
            parts.append(Content.styled("Changes since it was reviewed", "bold"))
            for line in diff:
                style = (
                    "$text-success"
                    if line.startswith("+")
                    else "$text-error"
                    if line.startswith("-")
                    else "$text-muted"
                    if line.startswith("@@")
                    else ""
                )
                parts.append(Content.styled(line, style) if style else Content(line))
            parts += [Content(""), Content.styled("The whole context", "bold")]
        parts += [Content(line) for line in p.lines]
        self.query_one("#context-body", LinesView).update(parts)

    # -- keys -----------------------------------------------------------------------------------

    async def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = f"tab-{tab}"
        self.refresh_bindings()
        await self.build(tab)
        self.focus_tab(tab)

    def focus_tab(self, tab: str) -> None:
        target = {"cost": "#by-tool", "most": "#most", "unread": "#unread"}.get(tab)
        if target:
            self.query_one(target, DataTable).focus()
        else:
            self.query_one("#context-body", LinesView).focus()

    def action_days(self, step: int) -> None:
        at = UNREAD_DAYS.index(self.days) if self.days in UNREAD_DAYS else 2
        self.days = UNREAD_DAYS[max(0, min(len(UNREAD_DAYS) - 1, at + step))]
        self.notify(f"not read in {self.days} days", timeout=2)
        self.load()

    def action_mark_reviewed(self) -> None:
        p = self.preview
        if p is None:
            self.notify("the context is still being built", severity="warning", timeout=3)
            return
        try:
            mark_reviewed(self.root, p.text)
        except OSError as exc:
            self.notify(f"not marked: {exc.strerror or exc}", severity="error", timeout=6)
            return
        self.notify("context marked reviewed", timeout=3)
        self.load()

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()
        await self.build(str(event.pane.id).removeprefix("tab-"))  # a tab clicked

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """+ − act on the Not read tab, m on the Context tab; hidden elsewhere."""
        with contextlib.suppress(NoMatches):  # asked before compose, or while closing
            active = self.query_one(TabbedContent).active
            if action == "days":
                return active == "tab-unread"
            if action == "mark_reviewed":
                return active == "tab-context"
        return True
