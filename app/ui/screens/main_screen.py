"""The main screen: the header, the timeline of every AI commit, human commit, conflict, rejected
write and server event, the detail pane with the diff, and the keys that act on them. The
owner's actions run through `owner_flows` (no Textual there); this screen only asks and shows."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import time

from textual import on, work
from textual.app import ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input

from app.services import owner_flows as flows
from app.services.actions import ActionError
from app.services.feed import Row
from app.services.file_actions import (
    apply_create,
    apply_move,
    apply_remove,
    doc_types,
    folders_of,
    suggest_folder,
    vault_files,
)
from app.services.history import commit_changes_upto
from app.services.supervisor import connect_notes, snippets
from app.services.view_rows import GROUPS, Filters, commits_mentioning, finder, visible
from app.ui.dialogs.modals import ConfirmModal, ConnectModal
from app.ui.dialogs.revert_dialog import BlockersModal
from app.ui.navigation import Desk, desk
from app.ui.widgets.cells import plural
from app.ui.widgets.details import commit_header, event_detail
from app.ui.widgets.diffview import render_commit
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.lines import LinesView
from app.ui.widgets.preview import preview_body
from app.ui.widgets.timeline import Timeline
from server.core.gitrepo import operation_in_progress

DIFF_FILES = 300  # files read for one commit's diff; the pane says how many more there were


class VaultChanged(Message):
    """The owner's action made commit `sha`: look at the vault now (and select that row)."""

    def __init__(self, sha: str) -> None:
        super().__init__()
        self.sha = sha


class DiffPane(LinesView):
    """The detail pane. Focused (enter on the timeline), its keys move in the diff: j/k, half
    pages, next/previous hunk and file, n/N through the matches of the `/` text."""

    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
        Binding("ctrl+d", "half(1)", "Half page down", show=False),
        Binding("ctrl+u", "half(-1)", "Half page up", show=False),
        Binding("right_square_bracket", "jump('hunk', 1)", "Hunk", tooltip="next hunk"),
        Binding(
            "left_square_bracket",
            "jump('hunk', -1)",
            "Prev hunk",
            show=False,
            tooltip="previous hunk",
        ),
        Binding("right_curly_bracket", "jump('file', 1)", "File", tooltip="next file"),
        Binding(
            "left_curly_bracket",
            "jump('file', -1)",
            "Prev file",
            show=False,
            tooltip="previous file",
        ),
        Binding("n", "find(1)", "Find", tooltip="next line with the / text"),
        Binding("N", "find(-1)", "Find back", show=False, tooltip="previous line with the / text"),
        Binding("escape", "screen.back", "Back", tooltip="back to the timeline"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks: dict[str, list[int]] = {"hunk": [], "file": []}
        self.search = ""
        self.found: int | None = None
        self._unmarked = Content("")

    def show(self, lines: list[Content], marks: dict[str, list[int]] | None = None) -> None:
        self.marks = marks or {"hunk": [], "file": []}
        self.found = None  # the line n/N last found, shown reversed
        self.update(lines)

    def _top_line(self) -> int:
        self._layout()
        return max(0, bisect.bisect_right(self._starts, int(self.scroll_y)) - 1)

    def _go(self, line: int) -> None:
        self._layout()
        self.scroll_to(y=self._starts[line], animate=False, immediate=True)

    def action_half(self, direction: int) -> None:
        step = max(1, self.scrollable_content_region.height // 2)
        self.scroll_to(y=self.scroll_y + direction * step, animate=False, immediate=True)

    def _next(self, lines: list[int], direction: int, at: int | None = None) -> int | None:
        """The first of `lines` after (before) line `at`, by default the top line shown."""
        top = self._top_line() if at is None else at
        after = [i for i in lines if (i > top if direction > 0 else i < top)]
        return (min(after) if direction > 0 else max(after)) if after else None

    def action_jump(self, kind: str, direction: int) -> None:
        line = self._next(self.marks.get(kind, []), direction)
        if line is None:
            self.notify(f"no {'next' if direction > 0 else 'previous'} {kind}", timeout=2)
        else:
            self._go(line)

    def action_find(self, direction: int) -> None:
        if not self.search:
            self.notify("nothing to find: / sets the text", severity="warning", timeout=3)
            return
        holds = finder(self.search)
        hits = [i for i, line in enumerate(self.lines) if holds(line.plain)]
        line = self._next(hits, direction, self.found)
        if line is None and hits:  # past the last one: from the other end, as lazygit does
            line = hits[0] if direction > 0 else hits[-1]
            self.notify("search wrapped", timeout=2)
        if line is None:
            self.notify(f"no {self.search!r} in this diff", timeout=3)
            return
        lines = list(self.lines)
        if self.found is not None:
            lines[self.found] = self._unmarked
        self._unmarked = lines[line]
        lines[line] = lines[line].stylize("reverse")
        marks = self.marks
        self.show(lines, marks)  # from the top: then to the line found
        self.found = line
        self._go(line)


TIMELINE_ACTIONS = {"open", "move", "half", "only"}


class MainScreen(Screen[None]):
    AUTO_FOCUS = "#timeline"
    BINDINGS = [
        Binding("enter", "open", "Diff", tooltip="focus the diff (esc returns)"),
        Binding(
            "escape",
            "back",
            "Back",
            show=False,
            tooltip="back to the timeline; there, clear the filter",
        ),
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("ctrl+d", "half(1)", "Half page down", show=False),
        Binding("ctrl+u", "half(-1)", "Half page up", show=False),
        Binding(
            "slash",
            "search",
            "Filter",
            tooltip="filter by path, summary or changed text as you type; n/N find it in the diff",
        ),
        *[
            Binding(k, f"only('{k}')", name, tooltip=f"{name} rows on/off (a, h and e combine)")
            for k, name in GROUPS.items()
        ],
        Binding(
            "r",
            "revert",
            "Revert",
            tooltip="revert the selected AI commit (or your own move, create, delete or revert)",
        ),
        Binding("s", "split", "Split", show=False, tooltip="unified / side-by-side diff"),
        Binding("plus,equals_sign", "context(1)", "More context", show=False),
        Binding("minus", "context(-1)", "Less context", show=False),
        Binding(
            "m",
            "move_file",
            "Move",
            show=False,
            tooltip="move or rename a file or folder (links rewritten)",
        ),
        Binding("n", "new_note", "New", show=False, tooltip="new note from a doc type"),
        Binding(
            "x", "delete_file", "Delete", show=False, tooltip="delete a file (git rm; revertable)"
        ),
        Binding("g", "tags", "Tags", show=False, tooltip="tag trends"),
        Binding(
            "dollar_sign",
            "cost",
            "Reads",
            show=False,
            tooltip="what the AI reads: cost, most read, context",
        ),
        Binding("S", "stats", "Stats", show=False, tooltip="write statistics per week and client"),
        Binding(
            "v",
            "review",
            "Review",
            show=False,  # the header names it beside the count ("… to review (v)"): the footer
            # has no room left at 80 columns
            tooltip="review what the AI changed since you last looked",
        ),
        Binding("H", "health", "Health", show=False, tooltip="library health: what needs a look"),
        Binding(
            "F",
            "feedback",
            "Feedback",
            show=False,  # the header names it beside the count
            tooltip="your feedback to the AI: open, answered (with the answer's diff)",
        ),
        Binding("c", "connect", "Connect", show=False, tooltip="connect a client (copy a snippet)"),
        Binding(
            "exclamation_mark",
            "config_errors",
            "Config error",
            show=False,  # the header names this key when the error does not fit
            tooltip="the config's problems in full",
        ),
        Binding(
            "A",
            "abort_git",
            "Abort git op",
            tooltip="abort the merge, revert or rebase git is in the middle of",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filters = Filters()
        self.split = False
        self.context_lines = 3
        self._selected: str | None = None
        self._asked = 0  # the detail last asked for: a diff read for an earlier ask is dropped
        self._shown: list[Row] | None = None  # the feed's rows the timeline was last filled from
        self._placed = False  # the cursor was put on the newest AI write at launch
        self._placing: str | None = None  # the row it was put on while there was none yet
        self._select_next: str | None = None  # the row of a commit an owner action just made

    @property
    def dash(self) -> Desk:
        return desk(self)

    @property
    def text_filter(self) -> str:
        return self.filters.text

    @text_filter.setter
    def text_filter(self, text: str) -> None:
        self.filters = dataclasses.replace(self.filters, text=text, diff_hits=frozenset())

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        with Horizontal(id="main"):
            yield Timeline(id="timeline")
            yield DiffPane(id="detail")
        yield Input(
            placeholder="filter as you type: path, summary or changed text (esc clears)",
            id="filter",
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.show_header()

    def on_screen_resume(self) -> None:
        # the terminal may have been resized while another screen (Stats, a dialog) was on
        # top, and only that screen was told: the cursor's row was left out of sight
        self.on_resize()

    def on_resize(self) -> None:
        # the selected row stays on screen whatever the new size
        with contextlib.suppress(NoMatches):  # the app is closing
            t = self.query_one("#timeline", Timeline)
            self.call_after_refresh(lambda: t.move_to(t.cursor))
        if self.split:  # a side-by-side diff is laid out for the pane's width: lay it out again
            self.call_after_refresh(self.show_detail)

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
        self.refresh_bindings()  # the config error key shows only while there is one

    def visible_rows(self) -> list[Row]:
        return visible(self.dash.feed.rows, self.filters)

    def refill(self, *, to_top: bool = False) -> None:
        """Show the rows the filters let through; the cursor stays on the row it was on, or
        with `to_top` (the filters changed) goes to the newest match."""
        self._shown = self.dash.feed.rows
        t = self.query_one("#timeline", Timeline)
        rows = self.visible_rows()
        t.set_rows(rows)
        if to_top:
            t.move_to(0)
            t.scroll_to(y=0, animate=False, immediate=True)
        elif not self._placed and rows:
            self._place(t, rows)
        self._select_made()
        self._show_filters(t, rows)

    def _place(self, t: Timeline, rows: list[Row]) -> None:
        """At launch the cursor goes to the newest AI write (not "server started"). With none
        yet (a demo, a new vault) it is on the newest row, follows the newest row, and goes to
        the first AI write that lands above it, as it would have at launch (an older one read
        in the background, below it, does not take it). Until the owner moves it."""
        if self._placing is not None and (t.current is None or t.current.key != self._placing):
            self._placed = True  # the owner moved the cursor: it stays where they put it
            return
        newest = next((i for i, r in enumerate(rows) if r.kind == "ai"), None)
        if newest is not None and (self._placing is None or newest < t.cursor):
            self._placed = True
            at = newest
        else:
            at = 0
        self._placing = rows[at].key
        t.move_to(at)

    def _show_filters(self, t: Timeline, rows: list[Row]) -> None:
        """The filters in force stay in sight (the timeline's title) while they are on."""
        f = self.filters
        if not f.active:
            t.border_title = None
            return
        count = plural(len(rows), "row") if rows else "no matches"
        t.border_title = Content.styled(
            f" {f.describe()} · {count} (esc clears) ", "bold $text-warning"
        )
        if not rows:
            self.query_one(DiffPane).show(
                [Content(f"No rows match {f.describe()}."), Content("esc clears the filter.")]
            )

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
        self._asked += 1
        row = self._row(self._selected)
        pane = self.query_one(DiffPane)
        pane.search = self.filters.text
        if row is None:
            if self.query_one("#timeline", Timeline).rows:  # else it says "no matches"
                pane.show([])
            return
        if row.commit is not None:
            self.load_diff(row, self.split, self.context_lines, self._asked)
        else:
            pane.show(event_detail(row, self.dash.root).split("\n", allow_blank=True))

    @work(thread=True, exclusive=True, group="diff")
    def load_diff(self, row: Row, split: bool, context: int, asked: int) -> None:
        assert row.commit is not None
        changes, total = commit_changes_upto(self.dash.root, row.commit.sha, DIFF_FILES)
        try:
            width = self.query_one(DiffPane).scrollable_content_region.width or 100
        except NoMatches:
            return  # the app is closing
        head = [*commit_header(row), Content("")]
        body, marks = render_commit(changes, total, split=split, width=width, context=context)
        lines = head + body
        marks = {k: [i + len(head) for i in v] for k, v in marks.items()}
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._diff_loaded, asked, lines, marks)

    def _diff_loaded(self, asked: int, lines: list[Content], marks: dict[str, list[int]]) -> None:
        # Only the newest ask is shown: a thread of an earlier one (another row, the unified
        # diff before `s`, the old context or width) can finish after it, and was shown over it.
        if asked == self._asked:
            with contextlib.suppress(NoMatches):  # the app is closing
                self.query_one(DiffPane).show(lines, marks)

    # -- keys -------------------------------------------------------------------------------------

    def _cursor_row(self) -> Row | None:
        """The row under the timeline's cursor now. A key pressed right after `j` acts on the
        row the owner sees highlighted, not on the one whose Highlighted message has not been
        handled yet (`j r` typed fast offered to revert the row before)."""
        with contextlib.suppress(NoMatches):
            return self.query_one("#timeline", Timeline).current
        return None

    def action_open(self) -> None:
        if self._cursor_row() is not None:
            self.query_one(DiffPane).focus()

    def action_back(self) -> None:
        """esc: out of the filter box (clearing it) or the diff, then clears the filters."""
        t = self.query_one("#timeline", Timeline)
        box = self.query_one("#filter", Input)
        if box.has_focus or (t.has_focus and self.filters.text):
            box.value = ""
            box.display = False
            self.text_filter = ""
            t.focus()
            self.refill(to_top=True)
        elif not t.has_focus:
            t.focus()
        elif self.filters.active:
            self.filters = Filters()
            self.refill(to_top=True)

    def action_only(self, group: str) -> None:
        self.filters = dataclasses.replace(self.filters, groups=self.filters.groups ^ {group})
        self.refill(to_top=True)

    def action_search(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = self.filters.text
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _typed(self, event: Input.Changed) -> None:
        text = event.value.strip()
        if text == self.filters.text:
            return
        self.text_filter = text
        self.refill(to_top=True)
        self.find_in_diffs(text)

    @work(thread=True, exclusive=True, group="find")
    def find_in_diffs(self, text: str) -> None:
        """Commits whose change has the text: one git process, after typing pauses."""
        time.sleep(0.25)
        if not text or text != self.filters.text:
            return
        hits = commits_mentioning(self.dash.root, text)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._diff_hits, text, hits)

    def _diff_hits(self, text: str, hits: frozenset[str]) -> None:
        if text == self.filters.text and hits != self.filters.diff_hits:
            self.filters = dataclasses.replace(self.filters, diff_hits=hits)
            self.refill(to_top=True)

    @on(Input.Submitted, "#filter")
    def _filter(self, event: Input.Submitted) -> None:
        event.input.display = False  # the filter stays in the timeline's title
        self.query_one("#timeline", Timeline).focus()

    def action_move(self, delta: int) -> None:
        t = self.query_one("#timeline", Timeline)
        t.move_to(t.cursor + delta)

    def action_half(self, direction: int) -> None:
        t = self.query_one("#timeline", Timeline)
        t.move_to(t.cursor + direction * max(1, (t.scrollable_content_region.height - 1) // 2))

    def action_split(self) -> None:
        self.split = not self.split
        self.show_detail()

    def action_context(self, delta: int) -> None:
        self.context_lines = max(0, min(50, self.context_lines + delta))
        self.notify(f"diff context: {self.context_lines} lines", timeout=2)
        self.show_detail()

    def action_tags(self) -> None:
        self.dash.open_tags(self.show_notes)

    def show_notes(self, picked: tuple[str, list[str]] | None) -> None:
        """Only the rows that touch these notes (enter on a tag); esc clears it."""
        if picked is not None:
            tag, notes = picked
            self.filters = dataclasses.replace(
                self.filters, notes=frozenset(notes), notes_label=f"#{tag}"
            )
            self.refill(to_top=True)

    def action_review(self) -> None:
        self.app.clear_notifications()  # the launch prompt said to press v: it is answered
        self.dash.open_review()

    def action_feedback(self) -> None:
        self.dash.open_feedback()

    def action_health(self) -> None:
        self.dash.open_health()

    def action_cost(self) -> None:
        self.dash.open_reads()

    def action_stats(self) -> None:
        self.dash.open_stats()

    def action_connect(self) -> None:
        sup = self.dash.supervisor
        url = sup.url if sup and sup.url else "http://127.0.0.1:8765/mcp"
        self.app.push_screen(
            ConnectModal(snippets(self.dash.root, url), connect_notes(self.dash.root, url))
        )

    def action_config_errors(self) -> None:
        problems = [str(p) for p in self.dash.configs.errors]
        if problems:
            self.notify("\n".join(problems), title="config error", severity="error", timeout=30)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "abort_git":  # shown only while git is in the middle of something
            return operation_in_progress(self.dash.root) is not None
        if action == "config_errors":
            return bool(self.dash.configs.errors)
        # r on any row: when it cannot revert, it says why. While the diff has focus, its own
        # keys (in the footer and the help) replace the timeline's
        return not (action in TIMELINE_ACTIONS and isinstance(self.focused, DiffPane))

    # -- the owner's actions ----------------------------------------------------------------------

    async def _confirm(self, p: flows.Preview) -> bool:
        ok: bool = await self.app.push_screen_wait(
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
        row = self._cursor_row()
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
            shas = await self.app.push_screen_wait(BlockersModal(preview, root))
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
        row = self._cursor_row()
        for p in row.paths if row else ():
            if (self.dash.root / p).is_file():
                return p
        return ""

    async def _pick(self, title: str, folders: bool) -> tuple[str | None, list[str]]:
        """(the file or folder chosen in the finder, every file of the vault)."""
        from app.ui.dialogs.file_dialogs import (
            FileFinder,  # the dialogs load when first opened (first paint)
        )

        files = await asyncio.to_thread(vault_files, self.dash.root)
        candidates = files + ([f + "/" for f in folders_of(files)] if folders else [])
        picked = await self.app.push_screen_wait(
            FileFinder(title, candidates, self._selected_file())
        )
        return (picked.rstrip("/") if picked else None), files

    @work(exclusive=True, group="files")
    async def action_move_file(self) -> None:
        root = self.dash.root
        source, files = await self._pick("Move or rename which file or folder?", folders=True)
        if not source:
            return
        from app.ui.dialogs.file_dialogs import DestinationPrompt  # loaded by _pick already

        suggested = await asyncio.to_thread(suggest_folder, root, source)
        dest = await self.app.push_screen_wait(
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
        # the form checks names with the write path's rules: both load when first opened
        from app.ui.dialogs.file_dialogs import NewNoteForm

        root = self.dash.root
        types = doc_types(root)
        if not types:
            self.notify("this vault's config has no doc types to create from", severity="warning")
            return
        note = await self.app.push_screen_wait(NewNoteForm(root, types))
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
