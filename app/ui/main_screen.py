"""The main screen: the header, the timeline of every AI commit, human commit, conflict, rejected
write and server event, the detail pane with the diff, and the keys that act on them. The
owner's actions run through `owner_flows` (no Textual there); this screen only asks and shows."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, cast

from textual import events, on, work
from textual.app import ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input

from server.gitrepo import operation_in_progress

from .. import owner_flows as flows
from ..actions import ActionError
from ..diffview import render_lines
from ..feed import Row
from ..file_actions import (
    apply_create,
    apply_move,
    apply_remove,
    doc_types,
    folders_of,
    suggest_folder,
    vault_files,
)
from ..history import commit_changes
from ..supervisor import connect_notes, snippets
from .details import commit_header, event_detail
from .file_dialogs import DestinationPrompt, FileFinder, NewNoteForm
from .header import StatusHeader
from .insights import CostScreen, TagsScreen
from .lines import LinesView
from .modals import ConfirmModal, ConnectModal
from .revert_dialog import BlockersModal
from .timeline import Timeline

if TYPE_CHECKING:
    from .dashboard import Dashboard

TONES = {"": "", "bold": "bold", "warning": "bold $text-warning"}


class VaultChanged(Message):
    """The owner's action made commit `sha`: look at the vault now (and select that row)."""

    def __init__(self, sha: str) -> None:
        super().__init__()
        self.sha = sha


def preview_body(p: flows.Preview, context: int = 1) -> list[Content]:
    lines = [Content.styled(x.text, TONES[x.tone]) if x.tone else Content(x.text) for x in p.lines]
    return lines + render_lines(p.changes, context=context) if p.changes else lines


class MainScreen(Screen[None]):
    AUTO_FOCUS = "#timeline"
    BINDINGS = [
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("a", "only('a')", "AI"),
        Binding("h", "only('h')", "Human"),
        Binding("e", "only('e')", "Errors"),
        Binding("slash", "search", "Filter"),
        Binding("r", "revert", "Revert"),
        Binding("s", "split", "Split"),
        Binding("plus,equals_sign", "context(1)", "More ctx", show=False),
        Binding("minus", "context(-1)", "Less ctx", show=False),
        Binding("m", "move_file", "Move"),
        Binding("n", "new_note", "New"),
        Binding("x", "delete_file", "Delete"),
        Binding("g", "tags", "Tags"),
        Binding("dollar_sign", "cost", "Cost"),
        Binding("c", "connect", "Connect"),
        Binding(
            "A",
            "abort_git",
            "Abort git op",
            tooltip="abort the merge, revert or rebase git is in the middle of",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.group: str | None = None
        self.text_filter = ""
        self.split = False
        self.context_lines = 3
        self._selected: str | None = None
        self._shown: list[Row] | None = None  # the feed's rows the timeline was last filled from
        self._select_next: str | None = None  # the row of a commit an owner action just made

    @property
    def dash(self) -> Dashboard:
        return cast("Dashboard", self.app)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        with Horizontal(id="main"):
            yield Timeline(id="timeline")
            yield LinesView(id="detail")
        yield Input(placeholder="filter: path or text (enter applies, esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.show_header()

    # -- the feed ---------------------------------------------------------------------------------

    def feed_changed(self) -> None:
        """The app saw something new: new rows, or only a new header (a read event)."""
        with contextlib.suppress(NoMatches):  # the app is closing
            if self.dash.feed.rows is not self._shown:
                self.refill()
            self.show_header()
            with contextlib.suppress(ScreenStackError):
                self.refresh_bindings()  # A (abort) shows only while git is mid-operation

    def show_header(self) -> None:
        self.query_one(StatusHeader).show(self.dash.header_facts())

    def visible_rows(self) -> list[Row]:
        rows = self.dash.feed.rows
        if self.group:
            rows = [r for r in rows if r.group == self.group]
        if self.text_filter:
            f = self.text_filter.casefold()
            rows = [
                r
                for r in rows
                if f in r.summary.casefold()
                or any(f in p.casefold() for p in r.paths)
                or f in r.who.casefold()
            ]
        return rows

    def refill(self) -> None:
        """Show the rows the filters let through; the cursor stays on the row it was on."""
        self._shown = self.dash.feed.rows
        self.query_one("#timeline", Timeline).set_rows(self.visible_rows())
        self._select_made()

    def _select_made(self) -> None:
        """Put the cursor on the commit an owner action just made, once its row is shown (the
        owner's next key, r to undo it, acts on what they made)."""
        t = self.query_one("#timeline", Timeline)
        if self._select_next is not None and (at := t.index_of(self._select_next)) is not None:
            self._select_next = None
            t.move_to(at)

    # -- the detail pane --------------------------------------------------------------------------

    def _row(self, key: str | None) -> Row | None:
        """The shown row with this key (a dict lookup: bindings ask this on every refresh)."""
        if key is None:
            return None
        with contextlib.suppress(NoMatches):
            t = self.query_one("#timeline", Timeline)
            at = t.index_of(key)
            return t.rows[at] if at is not None else None
        return None

    @on(Timeline.Highlighted, "#timeline")
    def _highlighted(self, event: Timeline.Highlighted) -> None:
        self._selected = event.row.key if event.row is not None else None
        self.show_detail()
        with contextlib.suppress(ScreenStackError):  # not while the app is closing
            self.refresh_bindings()

    def show_detail(self) -> None:
        with contextlib.suppress(NoMatches):
            self._show_detail()

    def _show_detail(self) -> None:
        row = self._row(self._selected)
        if row is None:
            self.query_one("#detail", LinesView).update([])
            return
        if row.commit is not None:
            self.load_diff(row, self.split, self.context_lines)
        else:
            self.query_one("#detail", LinesView).update(event_detail(row, self.dash.root))

    @work(thread=True, exclusive=True, group="diff")
    def load_diff(self, row: Row, split: bool, context: int) -> None:
        assert row.commit is not None
        changes = commit_changes(self.dash.root, row.commit.sha)
        view = self.query_one("#detail", LinesView)
        width = view.scrollable_content_region.width or 100
        lines = [
            *commit_header(row),
            Content(""),
            *render_lines(changes, split=split, width=width, context=context),
        ]
        self.app.call_from_thread(view.update, lines)

    # -- keys -------------------------------------------------------------------------------------

    def action_only(self, group: str) -> None:
        self.group = None if self.group == group else group
        self.notify(
            {"a": "AI commits", "h": "human commits", "e": "conflicts and rejections"}[group]
            + (" only" if self.group else ": off"),
            timeout=2,
        )
        self.refill()

    def action_search(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Submitted, "#filter")
    def _filter(self, event: Input.Submitted) -> None:
        self.text_filter = event.value.strip()
        self.query_one("#timeline", Timeline).focus()
        self.refill()

    def on_key(self, event: events.Key) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.value = ""
            box.display = False
            self.text_filter = ""
            self.query_one("#timeline", Timeline).focus()
            self.refill()

    def action_move(self, delta: int) -> None:
        t = self.query_one("#timeline", Timeline)
        t.move_to(t.cursor + delta)

    def action_split(self) -> None:
        self.split = not self.split
        self.show_detail()

    def on_resize(self, _: events.Resize) -> None:
        if self.split:  # a side-by-side diff is laid out for the pane's width: lay it out again
            self.call_after_refresh(self.show_detail)

    def action_context(self, delta: int) -> None:
        self.context_lines = max(0, min(50, self.context_lines + delta))
        self.show_detail()

    def action_tags(self) -> None:
        self.dash.push_screen(TagsScreen(self.dash.root, today=self.dash.today))

    def action_cost(self) -> None:
        self.dash.push_screen(CostScreen(self.dash.feed.events))

    def action_connect(self) -> None:
        sup = self.dash.supervisor
        url = sup.url if sup and sup.url else "http://127.0.0.1:8765/mcp"
        self.dash.push_screen(
            ConnectModal(snippets(self.dash.root, url), connect_notes(self.dash.root, url))
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "abort_git":  # shown only while git is in the middle of something
            return operation_in_progress(self.dash.root) is not None
        return True  # r on any row: when it cannot revert, it says why

    # -- the owner's actions ----------------------------------------------------------------------

    async def _confirm(self, p: flows.Preview) -> bool:
        ok: bool = await self.dash.push_screen_wait(
            ConfirmModal(p.title, preview_body(p), yes=p.yes)
        )
        return ok

    def _done(self, out: flows.Outcome) -> None:
        """Say what an action did; a new commit is looked for at once."""
        if out.ok:
            assert out.sha is not None
            self.notify(out.message, timeout=4)
            self._select_next = f"c:{out.sha}"
            self._select_made()  # the poll may have shown its row already
            self.post_message(VaultChanged(out.sha))
        else:
            self.notify(out.message, title=out.title, severity=out.severity, timeout=8)

    @work(exclusive=True, group="revert")
    async def action_revert(self) -> None:
        row = self._row(self._selected)
        c = row.commit if row is not None else None
        if c is None or not flows.revertable(c):
            self.notify(flows.why_not_revertable(c), title="cannot revert", severity="warning")
            return
        root = self.dash.root
        try:
            preview = await asyncio.to_thread(flows.revert_preview, root, c)
        except ActionError as exc:  # already reverted, nothing to undo, git busy
            self.notify(str(exc), title="nothing reverted", severity="warning", timeout=8)
            return
        if isinstance(preview, flows.Blocked):
            shas = await self.dash.push_screen_wait(BlockersModal(preview))
            if not shas:
                return
        elif await self._confirm(preview):
            shas = [c.sha]
        else:
            return
        self._done(await asyncio.to_thread(flows.revert_commits, root, shas))

    @work(exclusive=True, group="revert")
    async def action_abort_git(self) -> None:
        busy = operation_in_progress(self.dash.root)
        if busy is None:
            self.notify("git is not in the middle of anything", timeout=4)
            return
        if await self._confirm(flows.abort_preview(busy[1], busy[0])):
            self._done(await asyncio.to_thread(flows.abort_git, self.dash.root))
            self.post_message(VaultChanged(""))

    def _selected_file(self) -> str:
        row = self._row(self._selected)
        for p in row.paths if row else ():
            if (self.dash.root / p).is_file():
                return p
        return ""

    async def _pick(self, title: str, folders: bool) -> tuple[str | None, list[str]]:
        """(the file or folder chosen in the finder, every file of the vault)."""
        files = await asyncio.to_thread(vault_files, self.dash.root)
        candidates = files + ([f + "/" for f in folders_of(files)] if folders else [])
        picked = await self.dash.push_screen_wait(
            FileFinder(title, candidates, self._selected_file())
        )
        return (picked.rstrip("/") if picked else None), files

    @work(exclusive=True, group="files")
    async def action_move_file(self) -> None:
        root = self.dash.root
        source, files = await self._pick("Move or rename which file or folder?", folders=True)
        if not source:
            return
        suggested = await asyncio.to_thread(suggest_folder, root, source)
        dest = await self.dash.push_screen_wait(
            DestinationPrompt(source, folders_of(files), suggested)
        )
        if not dest:
            return
        try:
            plan, preview = await asyncio.to_thread(flows.move_preview, root, source, dest)
        except ActionError as exc:
            self.notify(str(exc), title="cannot move", severity="error", timeout=8)
            return
        if await self._confirm(preview):
            self._done(await asyncio.to_thread(flows.apply_plan, root, apply_move, plan, "moved"))

    @work(exclusive=True, group="files")
    async def action_new_note(self) -> None:
        root = self.dash.root
        types = doc_types(root)
        if not types:
            self.notify("this vault's config has no doc types to create from", severity="warning")
            return
        note = await self.dash.push_screen_wait(NewNoteForm(root, types))
        if note is not None:
            done = f"created {note.path}"
            self._done(await asyncio.to_thread(flows.apply_plan, root, apply_create, note, done))

    @work(exclusive=True, group="files")
    async def action_delete_file(self) -> None:
        root = self.dash.root
        path, _ = await self._pick("Delete which file?", folders=False)
        if not path:
            return
        try:
            plan, preview = await asyncio.to_thread(flows.delete_preview, root, path)
        except ActionError as exc:
            self.notify(str(exc), title="cannot delete", severity="error", timeout=8)
            return
        if await self._confirm(preview):
            done = f"deleted {path}"
            self._done(await asyncio.to_thread(flows.apply_plan, root, apply_remove, plan, done))
