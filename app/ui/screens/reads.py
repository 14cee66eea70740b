"""The Reads screen (`$`): what the AI reads and what it costs. Four tabs: today's cost with
the last 30 days per client and per tool (`CostPane`), the notes read most, the notes not read
in N days, and the get_context preview with its changes since the owner last marked it reviewed
(`reads_tabs`: each made when first shown, then kept current like the shown one).

It only draws: the figures come from server.services.reads and app.services.context_preview.
The cost tab is drawn from the dashboard's events at once, in the screen's first frame. What
needs the vault is computed in a thread after that frame, and again whenever new events
arrive: first the private rules, which name the notes of today's biggest results (never named
before they are known), then the note lists and the preview.

The owner edits notes in other programs, which write no journal event: while the Context tab
shows, the files its preview was built from (`context_files`) are looked at with `stat` every
half second, and the preview is built again when one of them changed."""

from __future__ import annotations

import contextlib
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from app.services.context_files import Stamp, files_stamp, watched_preview
from app.services.context_preview import Preview, mark_reviewed
from app.ui.navigation import desk
from app.ui.widgets.cells import plural
from app.ui.widgets.lines import LinesView
from app.ui.widgets.reads_cost import CostPane
from app.ui.widgets.reads_tabs import ContextTab, LazyTab, MostReadTab, UnreadTab
from server.services.reads import DailyCost, Reads, context_cost, cost_per_day, reads_report
from server.write.journal import TOKEN_RULE

UNREAD_DAYS = (7, 14, 30, 60, 90, 180, 365)
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
            with TabPane("1 Cost", id="tab-cost"):
                yield CostPane(id="cost-body")
            yield MostReadTab("2 Most read", "most")  # made when first shown (`build`)
            yield UnreadTab("3 Not read", "unread")
            yield ContextTab("4 Context", id="tab-context")
        yield Footer()

    async def build(self, tab: str) -> None:
        """Make a tab's widgets the first time it is shown, and draw what is known into them."""
        if tab in self.built or tab not in TABS:
            return
        self.built.add(tab)
        await self.query_one(f"#tab-{tab}", LazyTab).make(self.failure)
        if tab == "context":
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
        self.query_one(CostPane).draw_biggest(self.cost["biggest"])  # notes take the width
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

    @work(thread=True, exclusive=True, group="reads-context")
    def load_context(self) -> None:
        """The preview alone, built again (a file it includes changed)."""
        try:
            built = watched_preview(self.root, desk(self).vault(), self.context_files)
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
            built = watched_preview(self.root, vault, self.context_files)
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
            for tab in self.query(LazyTab):  # a tab not made yet says it when made
                tab.failed(said)

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

    def draw_cost(self) -> None:
        c = self.cost
        self.query_one("#title", Static).update(
            Content.styled(
                f" What the AI reads · cost today ({c['day']:%a %m-%d}, local) "
                f"{plural(c['total'], 'char')} ≈ {plural(c['tokens'], 'token')}",
                "bold",
            )
        )
        self.query_one(CostPane).draw(c, self.daily)

    @property
    def year(self) -> int:
        return (self.now or datetime.now()).year

    def draw_lists(self) -> None:
        """The Most read and Not read tabs, those of them made (see `build`)."""
        r = self.report
        if r is None:
            return
        if "most" in self.built:
            self.widths["most"] = self.query_one(MostReadTab).draw(r, self.year)
        if "unread" in self.built:
            self.widths["unread"] = self.query_one(UnreadTab).draw(r, self.year)

    def draw_context(self) -> None:
        if self.preview is not None and "context" in self.built:
            self.query_one(ContextTab).draw(self.preview)

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
