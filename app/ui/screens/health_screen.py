"""Library health (`H`): the findings of server/services/health.py grouped by kind with counts, each with
its reason and what can be done: open the note (at the link's line), move it or delete it
through the owner's flows, ignore it (or bring an ignored one back). The check and every action
run in workers, off the UI thread; health itself never changes a note."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import date
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from app.services import owner_flows as flows
from app.services.actions import ActionError
from app.services.file_actions import (
    apply_move,
    apply_remove,
    folders_of,
    suggest_folder,
    vault_files,
)
from app.ui.dialogs.file_dialogs import DestinationPrompt, FileFinder
from app.ui.dialogs.modals import ConfirmModal
from app.ui.dialogs.note_at_line import NoteModal, note_lines
from app.ui.navigation import desk
from app.ui.widgets.cells import Cell, cut_middle, note_label
from app.ui.widgets.preview import preview_body
from server.services import health
from server.services.health import TITLES, Finding, Report


def detail_text(f: Finding) -> str:
    """What the second column says about a finding: the link, the problem, the partner note."""
    if f.kind == "broken_link":
        return f"line {f.line}  {f.link}"
    if f.kind == "problem":
        return f.reason
    if f.kind in ("duplicate", "same_subject"):
        return f"{f.score:.2f}  {f.other}"
    if f.kind == "orphan":
        return f"no links in or out · {f.days} days unchanged"
    return f.reason


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
        self.by_id: dict[str, Finding] = {}
        self._filled_width = 0
        self._placed: str | None = None  # the row `fill` put the cursor on (not the owner)
        # the row of a finding just moved or deleted: its neighbour takes the cursor there
        self._gone_row: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(" Library health · checking…", "bold"), id="health-title")
        yield Static(id="health-warnings")
        yield DataTable(id="findings", cursor_type="row", zebra_stripes=False)
        yield Static(id="finding-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#findings", DataTable).focus()
        # after the first paint: the check holds the GIL for long stretches on a big vault,
        # and the screen must be up (and say "checking…") before it starts
        self.call_after_refresh(self.recheck)

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
            self.query_one("#health-title", Static).update(
                Content.styled(f" Library health · the check failed: {why}", "bold $text-error")
            )

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
        self.by_id = {f.id: f for f in report.findings}
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
        """The table from the report, grouped by kind, the cursor kept on the same finding."""
        report = self.shown_report
        if report is None:
            return
        self._filled_width = self.app.size.width
        table = self.query_one("#findings", DataTable)
        keep = self._current_key()
        # a cursor the owner has not moved goes to the first finding again: near-duplicates,
        # which come after the rest, are listed above where it was put
        if keep == self._placed:
            keep = None
        shown = self.shown_findings()
        quiet = len(self.ignored) if not self.show_ignored else 0
        title = f" Library health · {report.notes:,} notes · {len(shown)} findings"
        if quiet:
            title += f" · {quiet} ignored (a shows them)"
        elif self.ignored:
            title += f" · {len(self.ignored)} ignored shown"
        if self.partial is not None:
            title += " · looking for near-duplicates…"
        self.query_one("#health-title", Static).update(Content.styled(title, "bold"))
        self.query_one("#health-warnings", Static).update(
            Content("\n".join(report.warnings))  # sentences: wrapped, never cut in the middle
        )
        self.query_one("#health-warnings", Static).display = bool(report.warnings)
        # measured in cells: the path column takes what its widest cell needs, up to half
        inner = max(24, self.app.size.width - 6)  # cell padding of two columns and the scrollbar
        path_w = min(max((cell_len(f.path) for f in shown), default=10) + 2, inner // 2)
        headings = [self.heading(k, n) for k in TITLES if (n := sum(f.kind == k for f in shown))]
        path_w = max(path_w, min(max(map(cell_len, headings), default=24), inner // 2))
        detail_w = max(8, inner - path_w)
        table.clear(columns=True)
        table.add_column("note", width=path_w, key="note")
        table.add_column("finding", width=detail_w, key="finding")
        if not shown:
            table.add_row(Content.styled("nothing to look at", "$text-muted"), "", key="none")
        for kind in TITLES:
            group = [f for f in shown if f.kind == kind]
            if not group:
                continue
            table.add_row(
                Content.styled(
                    cut_middle(self.heading(kind, len(group)), path_w), "bold $text-accent"
                ),
                Content.styled(cut_middle(" · ".join(group[0].actions), detail_w), "$text-muted"),
                key=f"group:{kind}",
            )
            for f in group:
                # prose is cut at its end (a path in the middle: its file name matters)
                detail = Content(detail_text(f)).truncate(detail_w, ellipsis=True)
                if f.id in self.ignored:
                    detail = Content.styled("ignored · " + detail_text(f), "$text-muted").truncate(
                        detail_w, ellipsis=True
                    )
                table.add_row(Cell.of(note_label(f.path, path_w)), Cell.of(detail), key=f.id)
        keys = [str(k.value) for k in table.rows]
        gone, self._gone_row = self._gone_row, None
        if keep in keys:
            table.move_cursor(row=keys.index(keep))
        elif gone is not None and keep is not None and any(k in self.by_id for k in keys):
            # the finding the owner acted on is gone: stay where it was, on the next one
            rows = [i for i, k in enumerate(keys) if k in self.by_id]
            table.move_cursor(row=next((i for i in rows if i >= gone), rows[-1]))
        else:
            first = next((i for i, k in enumerate(keys) if k in self.by_id), 0)
            table.move_cursor(row=first)
            self._placed = keys[first] if keys else None
        self._describe()

    def heading(self, kind: str, n: int) -> str:
        """A group's title and count; near-duplicates beyond the listed ones are counted too
        (the warning above says how many are not listed)."""
        report = self.shown_report
        more = report.duplicates_unlisted if report and kind == "duplicate" else 0
        return f"{TITLES[kind]} ({n:,} of {n + more:,})" if more else f"{TITLES[kind]} ({n})"

    def on_resize(self) -> None:
        # the screen always spans the app; a modal on top must not re-lay the table out
        if self.app.size.width != self._filled_width:
            self.fill()

    # -- the selection ----------------------------------------------------------------------------

    def _current_key(self) -> str | None:
        table = self.query_one("#findings", DataTable)
        if not table.row_count:
            return None
        with contextlib.suppress(Exception):
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        return None

    def selected(self) -> Finding | None:
        key = self._current_key()
        return self.by_id.get(key) if key else None

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
        out = self.query_one("#finding-detail", Static)
        if f is None:
            out.update(Content.styled("a group: j/k to its findings", "$text-muted"))
            return
        where = f"{f.path}:{f.line}" if f.line else f.path
        keys = {"open": "o open", "move": "m move", "delete": "x delete"}
        acts = [keys[a] for a in f.actions if a in keys]
        acts.append("i bring back" if f.id in self.ignored else "i ignore")
        out.update(
            Content.styled(where + (f"  ↔  {f.other}" if f.other else ""), "bold")
            + Content("\n" + f.reason + "\n")
            + Content.styled(" · ".join(acts), "$text-muted")
        )

    def action_cursor(self, delta: int) -> None:
        """j/k: to the next finding, over the group rows between."""
        table = self.query_one("#findings", DataTable)
        keys = [str(k.value) for k in table.rows]
        row = table.cursor_row + delta
        while 0 <= row < len(keys) and keys[row] not in self.by_id:
            row += delta
        if 0 <= row < len(keys):
            table.move_cursor(row=row)

    def action_page(self, direction: int) -> None:
        """ctrl+d/ctrl+u: half a screen of findings on, as in every other list."""
        table = self.query_one("#findings", DataTable)
        keys = [str(k.value) for k in table.rows]
        row = max(
            0, min(len(keys) - 1, table.cursor_row + direction * max(1, table.size.height // 2))
        )
        while 0 <= row < len(keys) and keys[row] not in self.by_id:
            row += direction
        if 0 <= row < len(keys):
            table.move_cursor(row=row)
        else:
            self.action_edge(direction)

    def action_edge(self, end: int) -> None:
        """Home/End (g/G): the first or last finding, past the group rows."""
        table = self.query_one("#findings", DataTable)
        rows = [i for i, k in enumerate(table.rows) if str(k.value) in self.by_id]
        if rows:
            table.move_cursor(row=rows[-1] if end > 0 else rows[0])

    def action_group(self, delta: int) -> None:
        """]/[: the first finding of the next or previous group."""
        table = self.query_one("#findings", DataTable)
        keys = [str(k.value) for k in table.rows]
        heads = [i for i, k in enumerate(keys) if k.startswith("group:")]
        here = table.cursor_row
        current = max((h for h in heads if h <= here), default=-1)
        if delta > 0:
            target = next((h for h in heads if h > here), None)
        else:
            before = [h for h in heads if h < current]
            target = before[-1] if before else (current if current >= 0 else None)
        if target is not None and target + 1 < len(keys):
            table.move_cursor(row=target + 1)

    def _need(self, action: str) -> Finding | None:
        f = self.selected()
        if f is None:
            self.notify("pick a finding first (j/k)", timeout=3)
            return None
        if action not in f.actions:
            what = TITLES[f.kind].lower()
            self.notify(f"{action} is not offered for {what}", severity="warning", timeout=4)
            return None
        return f

    # -- the actions ------------------------------------------------------------------------------

    @work(exclusive=True, group="health-open")
    async def action_open(self) -> None:
        f = self._need("open")
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

    async def _confirm(self, p: flows.Preview) -> bool:

        ok: bool = await self.app.push_screen_wait(
            ConfirmModal(p.title, preview_body(p), yes=p.yes)
        )
        return ok

    def _done(self, out: flows.Outcome) -> None:
        if out.ok:
            self.notify(out.message, timeout=4)
            self.recheck()
        else:
            self.notify(out.message, title=out.title, severity=out.severity, timeout=8)

    @work(exclusive=True, group="health-files")
    async def action_move(self) -> None:
        f = self._need("move")
        if f is None:
            return
        files = await asyncio.to_thread(vault_files, self.root)
        suggested = await asyncio.to_thread(suggest_folder, self.root, f.path)
        dest = await self.app.push_screen_wait(
            DestinationPrompt(f.path, folders_of(files), suggested)
        )
        if not dest:
            return
        try:
            plan, preview = await asyncio.to_thread(flows.move_preview, self.root, f.path, dest)
        except ActionError as exc:
            self.notify(str(exc), title="cannot move", severity="error", timeout=8)
            return
        if await self._confirm(preview):
            self._gone_row = self.query_one("#findings", DataTable).cursor_row
            self._done(
                await asyncio.to_thread(flows.apply_plan, self.root, apply_move, plan, "moved")
            )

    @work(exclusive=True, group="health-files")
    async def action_delete(self) -> None:
        f = self._need("delete")
        if f is None:
            return
        path: str | None = f.path
        if f.other:  # a near-duplicate: which of the two goes (both listed, neither picked)
            path = await self.app.push_screen_wait(
                FileFinder("Delete which of the two? (↓ then enter)", [f.path, f.other])
            )
        if not path:
            return
        try:
            plan, preview = await asyncio.to_thread(flows.delete_preview, self.root, path)
        except ActionError as exc:
            self.notify(str(exc), title="cannot delete", severity="error", timeout=8)
            return
        if await self._confirm(preview):
            self._gone_row = self.query_one("#findings", DataTable).cursor_row
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
                note = await asyncio.to_thread(health.unignore, self.root, f.id)
            else:
                note = await asyncio.to_thread(health.ignore, self.root, f)
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
                self._move_past(f.id)
        self.fill()

    def _move_past(self, key: str) -> None:
        table = self.query_one("#findings", DataTable)
        keys = [str(k.value) for k in table.rows]
        if key in keys:
            after = [k for k in keys[keys.index(key) + 1 :] if k in self.by_id]
            before = [k for k in keys[: keys.index(key)] if k in self.by_id]
            nxt = after or before[-1:]
            if nxt:
                table.move_cursor(row=keys.index(nxt[0]))

    def action_show_ignored(self) -> None:
        self.show_ignored = not self.show_ignored
        self.fill()

    def data(self) -> dict[str, Any]:
        """The report as shown (tests read it)."""
        return self.report.to_json() if self.report else {}
