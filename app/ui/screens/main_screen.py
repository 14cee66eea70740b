"""The main screen: the header, the timeline of every AI commit, human commit, conflict, rejected
write and server event, the detail pane with the diff, and the keys that act on them. The
owner's actions (`app.ui.dialogs.owner_actions`) run through `owner_flows` (no Textual there);
the panes are widgets: `TimelinePane`, `DiffPane`, `FilterBar`."""

from __future__ import annotations

import contextlib
import dataclasses

from textual import events, on, work
from textual.app import ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Input

from app.services.feed import Row
from app.services.supervisor import connect_notes, snippets
from app.services.view_rows import GROUPS, Filters, visible
from app.ui.dialogs.modals import ConnectModal
from app.ui.dialogs.owner_actions import OwnerActions
from app.ui.widgets.details import event_detail
from app.ui.widgets.diff_pane import DiffPane, commit_lines
from app.ui.widgets.filter_bar import FilterBar
from app.ui.widgets.footer import FitFooter
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.timeline import Timeline
from app.ui.widgets.timeline_pane import TimelinePane
from server.core.gitrepo import operation_in_progress

TIMELINE_ACTIONS = {"open", "move", "half", "only"}
# the keys the footer adds while there is room, most wanted first (all are in `?`)
FOOTER_MORE = (
    "review",
    "tags",
    "cost",
    "stats",
    "health",
    "feedback",
    "connect",
    "new_note",
    "move_file",
    "delete_file",
    "split",
)


class MainScreen(OwnerActions):
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
            # priority: run as the key arrives, before the keys typed after it are handed to
            # the focused widget (the timeline took them, and its a/h/e toggled filters)
            priority=True,
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
        # `t`: `g`/`G` are top and bottom in every list, as in tig, less and vim
        Binding("t", "tags", "Tags", show=False, tooltip="tag trends"),
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
            yield TimelinePane(id="timeline")
            yield DiffPane(id="detail")
        yield FilterBar(self.dash.root, id="filter")
        yield FitFooter(FOOTER_MORE)

    def on_mount(self) -> None:
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
        rows = self.visible_rows()
        self.query_one("#timeline", TimelinePane).fill(rows, self.filters, to_top=to_top)
        if self.filters.active and not rows:
            self.query_one(DiffPane).show(
                [
                    Content(f"No rows match {self.filters.describe()}."),
                    Content("esc clears the filter."),
                ]
            )

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
        if row.commit is not None:  # the width read here, in the UI's thread, as it is now
            self.load_diff(row, self.split, self.context_lines, self._asked, pane.text_width())
        else:
            pane.show(event_detail(row, self.dash.root).split("\n", allow_blank=True))

    @on(DiffPane.Rewidth)
    def _rewidth(self) -> None:
        # the pane's width changed under a side-by-side diff (its own resize says so)
        if self.split:
            self.show_detail()

    @work(thread=True, exclusive=True, group="diff")
    def load_diff(self, row: Row, split: bool, context: int, asked: int, width: int) -> None:
        lines, marks = commit_lines(self.dash.root, row, split=split, context=context, width=width)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._diff_loaded, asked, lines, marks, split, width)

    def _diff_loaded(
        self,
        asked: int,
        lines: list[Content],
        marks: dict[str, list[int]],
        split: bool,
        width: int,
    ) -> None:
        # Only the newest ask is shown: a thread of an earlier one (another row, the unified
        # diff before `s`, the old context or width) can finish after it, and was shown over it.
        if asked == self._asked:
            with contextlib.suppress(NoMatches):  # the app is closing
                self.query_one(DiffPane).show(lines, marks, width if split else None)

    # -- keys -------------------------------------------------------------------------------------

    def action_open(self) -> None:
        if self._cursor_row() is not None:
            self.query_one(DiffPane).focus()

    def action_back(self) -> None:
        """esc: out of the filter box (clearing it) or the diff, then clears the filters."""
        t = self.query_one("#timeline", Timeline)
        box = self.query_one("#filter", FilterBar)
        if box.has_focus or (t.has_focus and self.filters.text):
            box.close(clear=True)
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
        box = self.query_one("#filter", FilterBar)
        # A priority key reaches us first, even in the box, where "/" is text: it goes to the
        # box behind the keys typed before it (still queued there), as the box would have had
        # it. (The box's has_focus is set only once its Focus event is handled: too late.)
        if self.focused is box:
            box.post_message(events.Key("slash", "/"))
            return
        box.open(self.filters.text)

    @on(Input.Changed, "#filter")
    def _typed(self, event: Input.Changed) -> None:
        text = event.value.strip()
        if text == self.filters.text:
            return
        self.text_filter = text
        self.refill(to_top=True)
        self.query_one("#filter", FilterBar).look_up(text)

    @on(FilterBar.Found, "#filter")
    def _diff_hits(self, event: FilterBar.Found) -> None:
        text, hits = event.text, event.hits
        if text == self.filters.text and hits != self.filters.diff_hits:
            self.filters = dataclasses.replace(self.filters, diff_hits=hits)
            self.refill(to_top=True)

    @on(Input.Submitted, "#filter")
    def _filter(self, event: Input.Submitted) -> None:
        self.query_one("#filter", FilterBar).close()  # the filter stays in the timeline's title
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
            ConnectModal(
                snippets(self.dash.root, url), connect_notes(self.dash.root, url, self.dash.demo)
            )
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
