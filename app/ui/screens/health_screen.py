"""Library health (`H`): the findings of server/services/health.py grouped by kind with counts, each with
its reason and what can be done: open the note (at the link's line), move it or delete it
through the owner's flows, ignore it (or bring an ignored one back). The check and every action
run in workers, off the UI thread; health itself never changes a note. The panes are widgets:
`FindingsTable` (the groups and the cursor over findings) and `FindingDetail`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.services import owner_flows as flows
from app.services.move_action import apply_move
from app.services.remove_action import apply_remove
from app.services.vault_files import vault_files
from app.ui.dialogs.file_dialogs import FileFinder
from app.ui.dialogs.note_at_line import NoteModal, note_lines
from app.ui.dialogs.owner_actions import ask_delete, ask_move
from app.ui.navigation import desk
from app.ui.widgets.finding_detail import FindingDetail
from app.ui.widgets.findings_table import FindingsTable
from app.ui.widgets.health_title import HealthTitle
from server.services import health, health_ignore
from server.services.health_findings import Finding, Report


class HealthScreen(Screen[None]):
    """Findings by kind; `a` shows the ignored ones too. The check runs when the screen opens
    and again after each move or delete (`r` runs it by hand). Every finding but the
    near-duplicates shows first; comparing thousands of notes' vectors comes after, and the
    title says so meanwhile."""

    BINDINGS = [
        Binding("escape,q,H", "app.pop_screen", "Back"),
        Binding("j", "cursor(1)", "Down", show=False),
        Binding("k", "cursor(-1)", "Up", show=False),
        Binding(
            "home,g", "edge(-1)", "First", show=False, priority=True, tooltip="the first finding"
        ),
        Binding("end,G", "edge(1)", "Last", show=False, priority=True, tooltip="the last finding"),
        Binding("ctrl+d", "page(1)", "Page down", show=False),
        Binding("ctrl+u", "page(-1)", "Page up", show=False),
        Binding("]", "group(1)", "Next group", show=False, tooltip="the next group's findings"),
        Binding("[", "group(-1)", "Previous group", show=False, tooltip="the group before"),
        Binding("o,enter", "open", "Open", tooltip="the note, at the broken link's line"),
        Binding("m", "move", "Move", tooltip="move or rename the note (links rewritten)"),
        Binding("x", "delete", "Delete", tooltip="delete the note (git rm; revertable)"),
        Binding("i", "ignore", "Ignore", tooltip="ignore this finding, or bring it back"),
        Binding("a", "show_ignored", "Ignored", tooltip="show ignored findings too (on / off)"),
        Binding("r", "recheck", "Re-check", show=False, tooltip="run the health check again"),
    ]
    DEFAULT_CSS = """
    HealthScreen #health-title { height: 1; padding: 0 1; }
    HealthScreen #health-warnings { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    HealthScreen #findings { height: 1fr; }
    HealthScreen #finding-detail { height: 4; padding: 0 1; border-top: solid $primary-muted; }
    """

    def __init__(self, root: Path, today: date | None = None) -> None:
        super().__init__()
        self.root = root
        self.today = today
        self.report: Report | None = None  # the whole check, near-duplicates included
        self.partial: Report | None = None  # the rest, shown while near-duplicates are compared
        self.show_ignored = False
        self.ignored: set[str] = set()
        self._filled_width = 0
        # the row of a finding just moved or deleted: its neighbour takes the cursor there
        self._gone_row: int | None = None

    def compose(self) -> ComposeResult:
        yield HealthTitle(id="health-title")
        yield Static(id="health-warnings")
        yield FindingsTable(id="findings")
        yield FindingDetail(id="finding-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.table.focus()
        # after the first paint: the check holds the GIL for long stretches on a big vault,
        # and the screen must be up (and say "checking…") before it starts
        self.call_after_refresh(self.recheck)

    @property
    def table(self) -> FindingsTable:
        return self.query_one("#findings", FindingsTable)

    # -- the check, off the UI thread -------------------------------------------------------------

    @work(thread=True, exclusive=True, group="health")
    def recheck(self) -> None:
        try:
            vault = desk(self).vault()
            first = health.check(vault, include_ignored=True, today=self.today, duplicates=False)
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.app.call_from_thread(self._show_partial, first)
            report = health.with_duplicates(vault, first, include_ignored=True)
        except Exception as exc:  # a vault gone or unreadable: said on the screen, no crash
            with contextlib.suppress(RuntimeError):
                self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._show, report)

    def _failed(self, why: str) -> None:
        if self.is_attached:
            self.query_one(HealthTitle).failed(why)

    def action_recheck(self) -> None:
        self.recheck()

    def _show_partial(self, report: Report) -> None:
        """Every finding but the near-duplicates, while they are compared."""
        if not self.is_attached:
            return
        self.partial = report
        self._take(report)

    def _show(self, report: Report) -> None:
        if not self.is_attached:
            return
        self.report, self.partial = report, None
        self._take(report)

    def _take(self, report: Report) -> None:
        self.ignored = {f.id for f in report.ignored}
        self.fill()

    @property
    def shown_report(self) -> Report | None:
        """What the table shows: the rest of a re-check while it compares, else the last."""
        return self.partial or self.report

    def shown_findings(self) -> list[Finding]:
        report = self.shown_report
        if report is None:
            return []
        return [f for f in report.findings if self.show_ignored or f.id not in self.ignored]

    def fill(self) -> None:
        """The title, the warnings and the table from the report shown."""
        report = self.shown_report
        if report is None:
            return
        self._filled_width = self.app.size.width
        shown = self.shown_findings()
        self.query_one(HealthTitle).show(
            report, len(shown), len(self.ignored), self.show_ignored, self.partial is not None
        )
        warnings = self.query_one("#health-warnings", Static)
        warnings.update(Content("\n".join(report.warnings)))  # sentences: wrapped, never cut
        warnings.display = bool(report.warnings)
        gone, self._gone_row = self._gone_row, None
        self.table.fill(report, shown, self.ignored, self.app.size.width, gone)
        self._describe()

    def on_resize(self) -> None:
        # the screen always spans the app; a modal on top must not re-lay the table out
        if self.app.size.width != self._filled_width:
            self.fill()

    # -- the selection ----------------------------------------------------------------------------

    @property
    def by_id(self) -> Mapping[str, Finding]:
        """The findings of the report shown, by id."""
        with contextlib.suppress(NoMatches):  # before compose, or while closing
            return self.table.by_id
        return {}

    def selected(self) -> Finding | None:
        return self.table.selected()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._describe()
        self.refresh_bindings()  # the footer dims what this finding does not offer

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "move", "delete"):
            f = self.selected()
            return None if f is None or action not in f.actions else True
        return True

    def _describe(self) -> None:
        f = self.selected()
        detail = self.query_one(FindingDetail)
        if f is None and self.shown_report is not None and not self.shown_findings():
            hidden = 0 if self.show_ignored else len(self.ignored)
            detail.nothing(hidden, self.partial is not None)
            return
        detail.show(f, f is not None and f.id in self.ignored)

    def action_cursor(self, delta: int) -> None:
        self.table.step(delta)

    def action_page(self, direction: int) -> None:
        self.table.page(direction)

    def action_edge(self, end: int) -> None:
        self.table.edge(end)

    def action_group(self, delta: int) -> None:
        self.table.group(delta)

    # -- the actions ------------------------------------------------------------------------------

    @work(exclusive=True, group="health-open")
    async def action_open(self) -> None:
        f = self.table.need("open")
        if f is None:
            return
        lines = await asyncio.to_thread(note_lines, self.root, f.path, f.line)
        if f.other:  # a near-duplicate: both notes, one under the other
            lines = [
                *lines,
                Content(""),
                Content.styled(f"── {f.other}", "bold $text-accent"),
                *await asyncio.to_thread(note_lines, self.root, f.other, None),
            ]
        title = f"{f.path}:{f.line}" if f.line else f.path
        await self.app.push_screen_wait(NoteModal(title, lines, f.line))

    def _done(self, out: flows.Outcome) -> None:
        if out.ok:
            self.notify(out.message, timeout=4)
            self.recheck()
        else:
            self.notify(out.message, title=out.title, severity=out.severity, timeout=8)

    @work(exclusive=True, group="health-files")
    async def action_move(self) -> None:
        f = self.table.need("move")
        if f is None:
            return
        files = await asyncio.to_thread(vault_files, self.root)
        plan = await ask_move(self, self.root, f.path, files)
        if plan is not None:
            self._gone_row = self.table.cursor_row
            self._done(
                await asyncio.to_thread(flows.apply_plan, self.root, apply_move, plan, "moved")
            )

    @work(exclusive=True, group="health-files")
    async def action_delete(self) -> None:
        f = self.table.need("delete")
        if f is None:
            return
        path: str | None = f.path
        if f.other:  # a near-duplicate: which of the two goes (both listed, neither picked)
            path = await self.app.push_screen_wait(
                FileFinder("Delete which of the two? (↓ then enter)", [f.path, f.other])
            )
        if not path:
            return
        plan = await ask_delete(self, self.root, path)
        if plan is not None:
            self._gone_row = self.table.cursor_row
            done = f"deleted {path}"
            self._done(
                await asyncio.to_thread(flows.apply_plan, self.root, apply_remove, plan, done)
            )

    @work(exclusive=True, group="health-ignore")
    async def action_ignore(self) -> None:
        f = self.selected()
        if f is None:
            self.notify("pick a finding first (j/k)", timeout=3)
            return
        back = f.id in self.ignored
        try:
            if back:
                note = await asyncio.to_thread(health_ignore.unignore, self.root, f.id)
            else:
                note = await asyncio.to_thread(health_ignore.ignore, self.root, f)
        except OSError as exc:
            self.notify(f"the ignore list was not written: {exc}", severity="error", timeout=8)
            return
        if note:
            self.notify(note, severity="warning", timeout=8)
        if back:
            self.ignored.discard(f.id)
            self.notify(f"brought back: {f.path}", timeout=3)
        else:
            self.ignored.add(f.id)
            self.notify(f"ignored: {f.path} (a shows ignored findings)", timeout=3)
            if not self.show_ignored:  # the cursor goes on to the next finding
                self.table.move_past(f.id)
        self.fill()

    def action_show_ignored(self) -> None:
        self.show_ignored = not self.show_ignored
        self.fill()

    def data(self) -> dict[str, Any]:
        """The report as shown (tests read it)."""
        return self.report.to_json() if self.report else {}
