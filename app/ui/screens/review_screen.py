"""The review screen: the notes with AI changes the owner has not reviewed (or every AI change
in a period), and for the note selected one net diff from its reviewed state to now, each
changed line under the AI commit (tool, client, time) or the owner's commit that made it.

The work is `app.services.review`'s (summaries, net diffs, marks, hunk undo, note revert), run in
worker threads; this screen only lists, draws and asks. Every refusal is said in words in the
status line, and stays there until the next action or until the owner moves to another note."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from app.services.actions import ActionError
from app.services.feedback import Feedback, add_feedback, list_feedback
from app.services.history import Commit
from app.services.review import (
    WORKTREE,
    Hunk,
    NetDiff,
    NoteSummary,
    Review,
    hunk_text,
    marks_of,
    net_diffs,
    plan_undo,
    revert_note,
    summaries,
    undo_hunk,
    write_marks,
)
from app.ui.dialogs.comment import CommentModal
from app.ui.dialogs.modals import ConfirmModal
from app.ui.navigation import Desk, desk
from app.ui.widgets.cells import (
    Cell,
    Distinct,
    cut_middle,
    note_label,
    plural,
    rich_style,
    short_names,
)
from app.ui.widgets.diffview import ADD, DEL, HUNK
from app.ui.widgets.editor import edit_note
from app.ui.widgets.feedback_lines import feedback_lines
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.keys import Table
from app.ui.widgets.lines import LinesView
from server.core.clients import client_name

PERIODS = ("last", "today", "7d")  # what `p` cycles through
OWNER_ADD = "italic $text-secondary on $secondary 14%"
OWNER_DEL = "italic $text-secondary on $secondary 8% strike"
SELECTED = "bold reverse"


def period_words(since: str) -> str:
    return {
        "last": "since your last review",
        "today": "today",
        "7d": "the last 7 days",
    }.get(since, f"since {since}")


def share(
    room: int, needs: list[int], mins: list[int], order: list[tuple[int, int | None]]
) -> list[int]:
    """Column widths in `room` cells: each column what it needs up to its minimum, then what
    is left to the columns in `order` (column, at most that wide), each up to its need; a
    column never gets more than it needs (no blank cells while another is cut)."""
    widths = [min(n, m) if m else n for n, m in zip(needs, mins, strict=True)]
    left = room - sum(widths)
    for i, cap in order:
        most = needs[i] if cap is None else min(needs[i], cap)
        give = max(0, min(most - widths[i], left))
        widths[i] += give
        left -= give
    return [max(1, w) for w in widths]


SCROLLBAR = 2  # the list's vertical scrollbar: columns wider than the room left scroll sideways
TITLE_FROM = 100  # list widths from which the title has a column (at 80 it was cut to 3 cells)
TITLE_LEAST = 10  # ... and the least it is given: a title cut shorter is dropped
SPAN_FROM = 150  # list widths from which `when` says first to last, not only the last change


@dataclass
class Columns:
    heads: list[str]
    widths: list[int]
    names: dict[str, str]  # tool -> the name the list gives it (short where full does not fit)
    wide: bool  # `when` as a span
    period: bool  # the ✓ column first


def list_columns(notes: list[NoteSummary], width: int, period: bool) -> Columns:
    """The review list's columns in `width` cells (no sideways scrolling), each sized to its
    content: the note by `note_label` (its file name whole, its folder muted and cut first),
    the title from TITLE_FROM cells, the tools and clients (short tool names where the full
    ones do not fit, as Stats names them; whole names and how many more)."""
    wide = width >= SPAN_FROM
    every = sorted({t for n in notes for t in n.tools})
    heads = ["note", "title", "AI", "+/−", "when", "tools · clients"]
    if width < TITLE_FROM or not any(own_title(n) for n in notes):
        heads.remove("title")  # no room, or every title is its file name again: the folder has it

    def text(n: NoteSummary, names: dict[str, str], cells: int) -> str:
        return tools_clients(n.tools, names, clients(n), cells)

    def value(h: str, n: NoteSummary, names: dict[str, str]) -> str:
        if h == "note":  # as note_label shows it whole: the name, two spaces, its folder
            return n.path + ("  " if "/" in n.path else "")
        if h == "tools · clients":
            return text(n, names, 10_000)
        return {
            "title": own_title(n),
            "AI": f"{len(n.commits):,}",
            "+/−": f"+{n.added:,} −{n.removed:,}",
            "when": span(n, wide),
        }[h]

    def measure(names: dict[str, str], heads: list[str]) -> tuple[list[int], list[int]]:
        needs = [max([cell_len(h), *(cell_len(value(h, n, names)) for n in notes)]) for h in heads]
        # DataTable pads every column by one cell on each side; a period adds the ✓ column
        room = width - 2 * len(heads) - (3 if period else 0) - SCROLLBAR
        least = {"note": 16, "title": TITLE_LEAST, "tools · clients": 15}
        at = {h: i for i, h in enumerate(heads)}
        note, tools = at["note"], at["tools · clients"]
        title = at.get("title")
        # first a file name (24) and `append · claude-code` (20), then the title to 16, the
        # tools and clients to 36, the title to 24, the note's folder to 45%, then the rest
        order: list[tuple[int, int | None]] = [(note, 24), (tools, 20)]
        order += [(title, 16)] if title is not None else []
        order += [(tools, 36)]
        order += [(title, 24)] if title is not None else []
        order += [(note, room * 45 // 100)]
        order += [(title, None)] if title is not None else []
        order += [(note, None), (tools, None)]
        mins = [least.get(h, 0) for h in heads]
        return needs, share(room, needs, mins, order)

    names = {t: t for t in every}
    needs, widths = measure(names, heads)
    if widths[-1] < needs[-1]:  # the full names do not fit: the short ones, for every row
        names = short_names(every)
        needs, widths = measure(names, heads)
    if "title" in heads and sum(widths) + 2 * len(heads) + (3 if period else 0) + SCROLLBAR > width:
        heads.remove("title")  # the title would be cut below TITLE_LEAST: the others have it
        needs, widths = measure(names, heads)
    # whole names leave the tools' column short of its width: what they do not use goes to
    # the title and the note (no blank cells while the title is cut)
    tools = heads.index("tools · clients")
    used = max([cell_len(heads[tools]), *(cell_len(text(n, names, widths[tools])) for n in notes)])
    spare, widths[tools] = widths[tools] - used, used
    for i in [heads.index(h) for h in ("title", "note") if h in heads]:
        give = max(0, min(needs[i] - widths[i], spare))
        widths[i] += give
        spare -= give
    return Columns(heads, widths, names, wide, period)


def own_title(n: NoteSummary) -> str:
    """The note's title where it says more than its file name (`笔记.md` titled `笔记` says
    it once: the column spent on it twice dropped the folder)."""
    stem = n.path.rpartition("/")[2].removesuffix(".md")
    return "" if n.title.strip() == stem.strip() else n.title


def span(n: NoteSummary, wide: bool) -> str:
    """When the AI changed the note: first to last, local time (one time for one commit)."""
    first, last = n.first.astimezone(), n.last.astimezone()
    if not wide or f"{first:%m-%d %H:%M}" == f"{last:%m-%d %H:%M}":
        return f"{last:%m-%d %H:%M}"
    if first.date() == last.date():
        return f"{first:%m-%d %H:%M}–{last:%H:%M}"
    return f"{first:%m-%d}–{last:%m-%d %H:%M}"


def attribution(c: Commit | None, owner: bool) -> Content:
    """The line above a run of changed lines: whose they are."""
    if c is None or c.sha == WORKTREE:
        return Content.styled(
            "  ┌ YOU · not committed yet (your unsaved edit)", "bold $text-secondary"
        )
    when = f"{c.time.astimezone():%m-%d %H:%M}"
    if owner:
        return Content.styled(f"  ┌ YOU · {c.short} {c.subject} · {when}", "bold $text-secondary")
    return Content.styled(
        f"  ┌ AI {c.short} · {c.tool} · {c.client or '?'} · {when}", "bold $text-primary"
    )


def render_hunk(h: Hunk, index: int, total: int, selected: bool) -> list[Content]:
    mark = "▶ " if selected else "  "
    tail = f"  hunk {index + 1} of {total}" + ("" if h.ai else " · only your lines")
    head = Content.styled(f"{mark}{h.header}{tail}", SELECTED if selected else HUNK)
    out = [head]
    run: tuple[str | None, bool] | None = None
    for ln in h.lines:
        text = ln.text.rstrip("\n")
        if ln.kind == " ":
            run = None
            out.append(Content("  " + text))
            continue
        key = (ln.commit.sha if ln.commit else None, ln.owner)
        if key != run:
            out.append(attribution(ln.commit, ln.owner))
            run = key
        if ln.owner:
            style = OWNER_ADD if ln.kind == "+" else OWNER_DEL
        else:
            style = ADD if ln.kind == "+" else DEL
        line = Content(f"{ln.kind} {text}")
        out.append(line.stylize(style, 0, len(line)))
    return out


def clients(note: NoteSummary) -> str:
    """The clients without their versions (claude-code, not claude-code/2.1.0): the version
    took the room the tools needed."""
    return ", ".join(dict.fromkeys(client_name(c) for c in note.clients)) or "?"


def fitting(width: int, *variants: str) -> str:
    """The first of `variants` (longest first) that fits `width` cells, else the last cut in
    the middle: a header line that wrapped took two or three of the diff's few lines."""
    for text in variants:
        if cell_len(text) <= width:
            return text
    return cut_middle(variants[-1], width)


def some(items: list[str], keep: int) -> str:
    """The first `keep` items and how many more: `append, batch +2`."""
    more = len(items) - keep
    return ", ".join(items[:keep]) + (f" +{more}" if more > 0 else "")


def tools_clients(tools: list[str], names: dict[str, str], who: str, width: int) -> str:
    """The tools (by `names`) and the clients in `width` cells, each readable: whole names and
    how many more are left out (`append, update +2 · claude-code +1`), the most names that fit
    (a tool before a client on a tie); only a single name too long is cut in the middle,
    never `append_…de-code`."""
    ts = [names.get(x, x) for x in tools] or ["?"]
    cs = who.split(", ")
    best: tuple[int, int, str] | None = None
    for k in range(1, len(ts) + 1):
        for j in range(1, len(cs) + 1):
            text = f"{some(ts, k)} · {some(cs, j)}"
            if cell_len(text) <= width and (best is None or (k + j, k) > best[:2]):
                best = (k + j, k, text)
    if best is not None:
        return best[2]
    if len(cs) > 1 and cell_len(f"{some(ts, 1)} · {len(cs)} clients") <= width:
        return f"{some(ts, 1)} · {len(cs)} clients"  # a count reads, `clau…de +2` did not
    t = some(ts, 1)
    t = cut_middle(t, max(1, min(cell_len(t), (width - 3) // 2)))
    c = cut_middle(some(cs, 1), max(1, width - 3 - cell_len(t)))
    return cut_middle(f"{t} · {c}", width)


def render_net(
    note: NoteSummary,
    diff: NetDiff,
    since: str,
    selected: int,
    width: int = 0,
    feedback: list[Content] | None = None,
) -> tuple[list[Content], list[int]]:
    """The note's net diff as lines, and the line each hunk starts on. With `width` (the
    pane's, in cells) each header line is the longest wording that fits on one line, and
    below 100 cells no blank line under them: at 80x24 the header took 8 of the pane's 11
    lines and left one for the diff."""
    room = width or 10_000
    c = note.commits
    title = f"{note.path} — {note.title}"
    if cell_len(title) <= room:
        head = Content.styled(note.path, "bold") + Content(f" — {note.title}")
    elif cell_len(note.path) <= room:
        head = Content.styled(note.path, "bold")
    else:  # the file name whole, its folder cut (as the list shows it)
        label = note_label(note.path, room)
        head = label.stylize("bold", 0, len(label.plain.split("  ")[0]))
    moved = note.moved_from
    tools = ", ".join(note.tools) or "?"
    short = ", ".join(short_names(note.tools).values()) or "?"
    when = f"{note.last.astimezone():%Y}-{span(note, True)}"
    figures = f"{plural(len(c), 'AI commit')} · +{diff.added} −{diff.removed} net"
    out = [
        head,
        Content(
            fitting(
                room,
                f"{figures} · {tools} · {clients(note)} · {when}",
                f"{figures} · {tools} · {clients(note)} · {span(note, False)}",
                f"{figures} · {short} · {clients(note)} · {span(note, False)}",
                f"{figures} · {short} · {clients(note)}",
            )
        ),
    ]
    if since == "last":
        frm = f"your last reviewed state (before {c[-1].short})" if c else "your reviewed state"
        brief = f"before {c[-1].short}" if c else "your reviewed state"
    else:
        frm = brief = {"today": "the start of today", "7d": "7 days ago"}.get(since, since)
    if moved is not None:  # the AI wrote the note under its old name: say so, once
        frm += f", when it was {moved}"
    since_line = fitting(
        room,
        f"one diff from {frm} to now · lines under YOU are yours · ] [ pick the hunk u undoes",
        f"one diff from {frm} to now · lines under YOU are yours",
        f"from {brief} to now · YOU: your lines · ] [ hunk",
        f"from {brief} to now",
    )
    out.append(Content.styled(since_line, "$text-muted"))
    if moved is not None and moved not in since_line:  # the old name did not fit there
        out.append(
            Content.styled(fitting(room, f"at {moved} when the AI changed it"), "$text-muted")
        )
    if room >= 100:
        out.append(Content(""))
    if feedback:  # the owner's comments on this note, above its hunks
        out += [*feedback, Content("")]
    starts: list[int] = []
    if diff.binary:
        out.append(Content.styled("(a binary file: not shown)", "italic"))
    elif not diff.hunks:
        out.append(Content.styled("(no net change: the changes cancel out)", "italic"))
    for i, h in enumerate(diff.hunks):
        starts.append(len(out))
        out += render_hunk(h, i, len(diff.hunks), i == selected)
        out.append(Content(""))
    return out, starts


class ReviewDiff(LinesView):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
        Binding("ctrl+d", "page_down", "Page down", show=False),
        Binding("ctrl+u", "page_up", "Page up", show=False),
        Binding("escape", "screen.focus_list", "Back", tooltip="back to the list of notes"),
    ]


@dataclass
class Shown:
    """The diff on screen: which note, from which listing, and the hunk selected."""

    note: NoteSummary
    diff: NetDiff
    hunk: int = 0
    starts: tuple[int, ...] = ()


class ReviewScreen(Screen[None]):
    AUTO_FOCUS = "#review-notes"
    DEFAULT_CSS = """
    ReviewScreen #review-title { height: auto; background: $panel; }
    ReviewScreen #review-body { height: 1fr; layout: vertical; }
    ReviewScreen #review-notes {
        height: auto; max-height: 40%; min-height: 5; border: round $panel;
    }
    ReviewScreen #review-diff { height: 1fr; border: round $panel; padding: 0 1; }
    ReviewScreen #review-notes:focus, ReviewScreen #review-diff:focus {
        border: round $primary;
    }
    ReviewScreen #review-status { height: auto; max-height: 4; padding: 0 1; }
    ReviewScreen #review-since { dock: bottom; margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="back to the timeline (from the diff: the list)"),
        Binding("q,v", "app.pop_screen", "Back", show=False, tooltip="back to the timeline"),
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("enter", "focus_diff", "Diff", show=False, tooltip="focus the diff (esc returns)"),
        Binding("space", "mark", "Mark", tooltip="mark this note reviewed"),
        Binding("n", "next", "Next", tooltip="next unreviewed note"),
        Binding(
            "A",
            "mark_all",
            "All",
            show=False,  # the footer fits 80 columns without it; help and the palette list it
            tooltip="mark every note listed reviewed",
        ),
        Binding(
            "right_square_bracket", "hunk(1)", "Hunk", show=False, tooltip="select the next hunk"
        ),
        Binding(
            "left_square_bracket", "hunk(-1)", "Prev hunk", show=False, tooltip="previous hunk"
        ),
        Binding("u", "undo_hunk", "Undo", tooltip="undo the selected hunk's AI lines (yours stay)"),
        Binding(
            "R",
            "revert_note",
            "Revert",
            tooltip="revert every unreviewed AI change to this note (your commits stay)",
        ),
        Binding(
            "o", "open_note", "Open", tooltip="open the note: who wrote each line, its history"
        ),
        Binding("e", "edit", "Edit", show=False, tooltip="edit the note in $EDITOR"),
        Binding(
            "c",
            "comment",
            "Comment",
            show=False,  # the footer fits 80 columns without it; help and the palette list it
            tooltip="comment on the selected hunk for the AI (feedback it sees in get_context)",
        ),
        Binding("p", "period", "Period", tooltip="since: last review → today → 7 days"),
        Binding(
            "d", "ask_since", "Since…", show=False, tooltip="since a date (YYYY-MM-DD) or a commit"
        ),
    ]

    def __init__(self, root: Path, since: str = "last") -> None:
        super().__init__()
        self.root = root
        self.since = since
        self.review: Review | None = None
        self.shown: Shown | None = None
        self.loaded_at: object = None  # the refs' stamp the list was read at
        self.opened = time.perf_counter()
        self.listed_in: float | None = None  # seconds from opening to the list on screen
        self.diff_in: float | None = None  # seconds from selecting a note to its diff shown
        self._asked: float = 0.0
        self._busy = False  # an action is running: the list waits to follow the vault
        self._good_since = since  # the last period that listed
        self._diffs: dict[tuple[object, ...], NetDiff] = {}  # read ahead, by what they depend on
        self._loading: tuple[object, ...] | None = None  # the diff being read (no second read)
        self._fitted = 0  # the width the list's columns were shared out for
        # the note under the cursor when the status line was last written: it is cleared when
        # the owner moves to another note (a refusal about one note stayed under the next)
        self._said_at: str | None = None
        self.feedback: dict[str, list[Feedback]] = {}  # open and answered, by note

    @property
    def dash(self) -> Desk:
        return desk(self)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static(id="review-title")
        with Horizontal(id="review-body"):
            yield Table(id="review-notes", cursor_type="row", zebra_stripes=True)
            yield ReviewDiff(id="review-diff")
        yield Static(id="review-status")
        yield Input(
            placeholder="since: YYYY-MM-DD, 3d, today or a commit (esc cancels)", id="review-since"
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#review-since", Input).display = False
        self.query_one("#review-status", Static).display = False  # shown when it says something
        self.query_one("#review-diff", ReviewDiff).update(
            [Content.styled("reading the AI's changes…", "italic")]
        )
        self.show_header()
        self._title()
        self.load_feedback()
        ready = self.dash.review_watch.current() if self.since == "last" else None
        if ready is not None:  # the header's count was read from it: no need to read it again
            self._listed(ready, "last", self.dash.review_watch.counted)
        else:
            self.load()

    def show_header(self) -> None:
        with contextlib.suppress(NoMatches):
            self.query_one(StatusHeader).show(self.dash.header_facts())

    def _title(self, text: str = "") -> None:
        r = self.review
        what = period_words(self.since)
        if r is None:
            body = f" Review · {what} · reading…"
        elif self.since == "last":
            body = (
                f" Review · {what} · {plural(r.unreviewed_commits, 'AI commit')} in "
                f"{plural(len(r.notes), 'note')}"
                if r.notes
                else f" Review · {what} · nothing to review"
            )
        else:
            open_ = sum(1 for n in r.notes if not n.reviewed)
            body = f" Review · {what} · {plural(len(r.notes), 'note')} changed by the AI, {open_:,} not reviewed"
        if r is not None and r.warning:  # marks unreadable: everything shows, and why
            text = f" · ! {r.warning}{text}"
        self.query_one("#review-title", Static).update(Content.styled(body, "bold") + Content(text))

    def say(self, text: str, severity: str = "") -> None:
        """The status line: what the last action did, or why it did nothing."""
        style = {"error": "bold $text-error", "warning": "bold $text-warning"}.get(severity, "")
        status = self.query_one("#review-status", Static)
        status.update(Content.styled(text, style))
        status.display = bool(text)  # an empty status line is one more line of the diff
        note = self.current()
        self._said_at = note.path if note is not None and text else None

    # -- the list ---------------------------------------------------------------------------------

    def follow(self) -> None:
        """The branch or the marks moved (a new AI commit, another dashboard's marks)."""
        watch = self.dash.review_watch
        if self.loaded_at == watch.counted or self._busy:
            return
        ready = watch.current() if self.since == "last" else None
        if ready is not None:  # the header's recount has just read it
            self._listed(ready, "last", watch.counted)
        else:
            self.load()

    @work(thread=True, exclusive=True, group="review-feedback")
    def load_feedback(self) -> None:
        by_note: dict[str, list[Feedback]] = {}
        for item in list_feedback(self.root):
            by_note.setdefault(item.path, []).append(item)
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._feedback_loaded, by_note)

    def _feedback_loaded(self, by_note: dict[str, list[Feedback]]) -> None:
        if by_note != self.feedback and self.is_attached:
            self.feedback = by_note
            self._draw(scroll=False)

    @work(thread=True, exclusive=True, group="review-list")
    def load(self) -> None:
        stamp = self.dash.review_watch.stamp()
        since = self.since
        try:
            review = summaries(self.root, since)
        except ActionError as exc:
            with contextlib.suppress(RuntimeError):
                self.app.call_from_thread(self._not_a_period, since, str(exc))
            return
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._listed, review, since, stamp)

    def _not_a_period(self, since: str, why: str) -> None:
        """A period typed in that is none: said, and the last one shown stays."""
        if since == self.since and since != self._good_since:
            self.say(f"{why}; still showing {period_words(self._good_since)}", "error")
            self.since = self._good_since
            self._title()
            self.load()

    def _listed(self, review: Review, since: str, stamp: object) -> None:
        if since != self.since or not self.is_attached:
            return
        self._good_since = since
        table = self.query_one("#review-notes", DataTable)
        was = self.current()
        keep = was.path if was is not None else None
        at = table.cursor_row
        self.review, self.loaded_at = review, stamp
        self._fill(table)
        paths = [n.path for n in review.notes]
        if keep in paths:
            at = paths.index(keep)
        if paths:
            table.move_cursor(row=min(max(at, 0), len(paths) - 1), animate=False)
        if self._said_at is not None:  # a new listing is not the owner moving: what the last
            now = self.current()  # action said stays (its note may have left the list)
            self._said_at = now.path if now is not None else None
        if self.listed_in is None:
            self.listed_in = time.perf_counter() - self.opened
        self._title()
        # the diff after the list is on screen: its read and its drawing would hold the list back
        self.call_after_refresh(self.show_selected)

    def _fill(self, table: DataTable[Any]) -> None:
        assert self.review is not None
        notes = self.review.notes
        # the list is as wide as the screen, above the diff: every column readable (beside the
        # diff, at 200 columns, the tools and clients were cut to a word). Its own size is not
        # laid out yet on the first fill.
        width = self._fitted = self._list_width()
        cols = list_columns(notes, width, self.since != "last")
        table.clear(columns=True)
        if cols.period:
            table.add_column(Text("✓"), width=1)
        for name, cells in zip(cols.heads, cols.widths, strict=True):
            table.add_column(Text(name), width=cells)
        good, bad = rich_style("$text-success"), rich_style("$text-error")
        w = dict(zip(cols.heads, cols.widths, strict=True))
        names = Distinct(n.path.rpartition("/")[2] for n in notes)  # never two alike
        for n in notes:
            row = [Cell.of(note_label(n.path, w["note"], cuts=names))]
            if "title" in w:
                row.append(Cell(cut_middle(own_title(n), w["title"])))
            row += [
                Cell(f"{len(n.commits):,}"),
                Cell((f"+{n.added:,}", good), " ", (f"−{n.removed:,}", bad)),
                Cell(cut_middle(span(n, cols.wide), w["when"])),
                Cell(tools_clients(n.tools, cols.names, clients(n), w["tools · clients"])),
            ]
            if cols.period:
                row.insert(0, Cell(("✓", good)) if n.reviewed else Cell("•"))
            table.add_row(*row, key=n.path)
        table.border_title = (
            None if notes else ("nothing to review" if self.since == "last" else "no AI changes")
        )

    def _list_width(self) -> int:
        return max(40, (self.app.size.width or 120) - 2)

    def on_resize(self) -> None:
        if self.review is not None:
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        # only when the width changed: the first resize comes right after mounting, at the
        # width the list was just filled for, and one change of size can come as two resizes
        if self.review is None or self._list_width() == self._fitted:
            return
        with contextlib.suppress(NoMatches):
            table = self.query_one("#review-notes", DataTable)
            at = table.cursor_row
            self._fill(table)
            if self.review and self.review.notes:
                table.move_cursor(row=min(at, len(self.review.notes) - 1), animate=False)
            self._draw(scroll=False)  # the diff's header lines are worded for the width

    def current(self) -> NoteSummary | None:
        if self.review is None or not self.review.notes:
            return None
        with contextlib.suppress(NoMatches):
            at = self.query_one("#review-notes", DataTable).cursor_row
            if 0 <= at < len(self.review.notes):
                return self.review.notes[at]
        return None

    @on(DataTable.RowHighlighted, "#review-notes")
    def _highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.call_after_refresh(self.show_selected)  # the cursor's move is drawn first

    @on(DataTable.RowSelected, "#review-notes")
    def _selected(self, _: DataTable.RowSelected) -> None:
        self.action_focus_diff()

    # -- the diff ---------------------------------------------------------------------------------

    def show_selected(self) -> None:
        note = self.current()
        pane = self.query_one("#review-diff", ReviewDiff)
        if self._said_at is not None and (note is None or note.path != self._said_at):
            self.say("")  # the owner moved on: what was said was about the note before
        if note is None:
            self.shown = None
            words = (
                "Nothing to review: every AI change is reviewed, reverted or undone."
                if self.since == "last"
                else f"No AI changes {period_words(self.since)}."
            )
            pane.update([Content(words), Content.styled("p changes the period.", "$text-muted")])
            return
        shown = self.shown
        if shown is not None and shown.note == note:
            return  # that diff is on screen already
        key = self._diff_key(note, self.since)
        if key == self._loading:
            return  # being read: asked again by the cursor's highlight or a refill
        self._asked = time.perf_counter()
        cached = self._diffs.get(key)
        if cached is not None:  # read ahead while the owner looked at the one before
            self._diff_loaded(note, self.since, cached)
        else:
            self._loading = key
            self.load_diff(note, self.since, key)

    def _diff_key(self, note: NoteSummary, since: str) -> tuple[object, ...]:
        """What a note's net diff depends on: its commits, the branch and the file on disk."""
        try:
            st = (self.root / note.path).stat()
            disk: object = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            disk = None
        shas = tuple(c.sha for c in note.commits)
        return (note.path, since, note.base, shas, disk, self.dash.review_watch.stamp())

    @work(thread=True, exclusive=True, group="review-diff")
    def load_diff(self, note: NoteSummary, since: str, key: tuple[object, ...]) -> None:
        try:
            [diff] = net_diffs(self.root, [note])
            self._diffs[key] = diff  # before the flag drops: a second ask finds it here
        finally:
            if self._loading == key:
                self._loading = None
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.app.call_from_thread(self._diff_loaded, note, since, diff)

    @work(thread=True, exclusive=True, group="review-ahead")
    def read_ahead(self, notes: list[NoteSummary], since: str) -> None:
        """The diffs of the notes next to the one shown, so `j`, `k` and `n` show them at once."""
        for note in notes:
            key = self._diff_key(note, since)
            if key not in self._diffs:
                self._diffs[key] = net_diffs(self.root, [note])[0]
        while len(self._diffs) > 8:  # oldest first out (dicts keep their order)
            self._diffs.pop(next(iter(self._diffs)))

    def _diff_loaded(self, note: NoteSummary, since: str, diff: NetDiff) -> None:
        if since != self.since or self.current() != note or not self.is_attached:
            return  # the owner moved on meanwhile
        first_ai = next((i for i, h in enumerate(diff.hunks) if h.ai), 0)
        self.shown = Shown(note, diff, first_ai)
        self._draw(scroll=False)
        self.diff_in = time.perf_counter() - self._asked
        notes = self.review.notes if self.review else []
        at = notes.index(note) if note in notes else -1
        near = [notes[i] for i in (at + 1, at - 1) if 0 <= i < len(notes) and at >= 0]
        if near:  # once this diff is on screen: reading ahead would hold its drawing back
            self.call_after_refresh(self.read_ahead, near, since)

    def _draw(self, scroll: bool = True) -> None:
        s = self.shown
        if s is None:
            return
        # the pane's text width: the screen's less its border, padding and scrollbar
        width = max(20, (self.app.size.width or 120) - 6)
        fb = feedback_lines(self.feedback.get(s.note.path, []), width)
        lines, starts = render_net(s.note, s.diff, self.since, s.hunk, width, fb)
        s.starts = tuple(starts)
        pane = self.query_one("#review-diff", ReviewDiff)
        pane.update(lines)
        pane.border_title = f"{len(s.diff.hunks)} hunk{'' if len(s.diff.hunks) == 1 else 's'}"
        if scroll and starts:
            pane._layout()
            pane.scroll_to(y=pane._starts[starts[s.hunk]], animate=False, immediate=True)

    def action_hunk(self, delta: int) -> None:
        s = self.shown
        if s is None or not s.diff.hunks:
            self.say("no hunks in this diff", "warning")
            return
        s.hunk = (s.hunk + delta) % len(s.diff.hunks)
        self._draw()

    # -- keys -------------------------------------------------------------------------------------

    def action_back(self) -> None:
        box = self.query_one("#review-since", Input)
        if box.display:
            box.display = False
            self.query_one("#review-notes", DataTable).focus()
        elif isinstance(self.focused, ReviewDiff):
            self.query_one("#review-notes", DataTable).focus()
        else:
            self.app.pop_screen()

    def action_focus_list(self) -> None:
        self.query_one("#review-notes", DataTable).focus()

    def action_focus_diff(self) -> None:
        self.query_one("#review-diff", ReviewDiff).focus()

    def action_move(self, delta: int) -> None:
        table = self.query_one("#review-notes", DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + delta)))

    def action_next(self) -> None:
        r = self.review
        if r is None or not r.notes:
            self.say("nothing to review")
            return
        table = self.query_one("#review-notes", DataTable)
        n = len(r.notes)
        for step in range(1, n + 1):
            at = (table.cursor_row + step) % n
            if not r.notes[at].reviewed:
                table.move_cursor(row=at)
                return
        self.say("every note listed is reviewed")

    def action_period(self) -> None:
        at = PERIODS.index(self.since) if self.since in PERIODS else -1
        self.set_since(PERIODS[(at + 1) % len(PERIODS)])

    def set_since(self, since: str) -> None:
        self.since = since
        self.review, self.shown = None, None
        self.say(f"showing {period_words(since)}")
        self._title()
        self.load()

    def action_ask_since(self) -> None:
        box = self.query_one("#review-since", Input)
        box.value = "" if self.since in PERIODS else self.since
        box.display = True
        box.focus()

    @on(Input.Submitted, "#review-since")
    def _since_typed(self, event: Input.Submitted) -> None:
        event.input.display = False
        self.query_one("#review-notes", DataTable).focus()
        text = event.value.strip()
        if text:
            self.set_since(text)

    def action_edit(self) -> None:
        note = self.current()
        if note is None:
            self.say("no note selected", "warning")
        elif edit_note(self, self.root, note.path):
            self.shown = None
            self.show_selected()

    def action_open_note(self) -> None:
        note = self.current()
        if note is None:
            self.say("no note selected", "warning")
            return
        self.dash.open_note(note.path)

    def on_screen_resume(self) -> None:
        self.load_feedback()  # the note view may have added some
        self.show_header()
        if self.review is not None and self.loaded_at != self.dash.review_watch.stamp():
            self.load()  # something changed while the note view was open
        elif self.review is not None:
            self.shown = None  # the owner may have edited the note from the note view
            self.show_selected()

    # -- the owner's actions (each in a worker: git never freezes the screen) ---------------------

    async def _run(self, what: str, fn: Any, *args: Any) -> Any:
        """Run a service in a thread; an ActionError is said in the status line, in words."""
        self._busy = True
        try:
            return await asyncio.to_thread(fn, *args)
        except ActionError as exc:
            self.say(f"{what} refused: {exc}", "error")
            self.notify(str(exc), title=f"{what} refused", severity="error", timeout=10)
            return None
        finally:
            self._busy = False

    def _after(self, message: str) -> None:
        self.say(message)
        self.notify(message, timeout=4)
        self.shown = None
        self.load()
        self.dash.poll()  # the header's count and the timeline follow at once

    @work(exclusive=True, group="review-act")
    async def action_mark(self) -> None:
        note = self.current()
        if note is None:
            self.say("nothing to mark: no note selected", "warning")
            return
        if note.reviewed:
            self.say(f"{note.path} is reviewed already")
            return
        # exactly the commits on screen: an AI write that lands meanwhile stays unreviewed
        marks = marks_of(note)  # under the name each commit gave it (the owner may have moved it)
        files = {c.sha: c.files for c in note.commits}
        if await self._run("mark", write_marks, self.root, marks, files) is not None:
            self._after(f"{note.path}: {plural(len(note.commits), 'AI commit')} marked reviewed")

    @work(exclusive=True, group="review-act")
    async def action_mark_all(self) -> None:
        r = self.review
        todo = [n for n in (r.notes if r else []) if not n.reviewed]
        if not todo:
            self.say("nothing to mark: every note listed is reviewed")
            return
        commits = {c.sha for n in todo for c in n.commits}
        body = [Content(f"{n.path}  ({plural(len(n.commits), 'AI commit')})") for n in todo]
        title = f"Mark {plural(len(commits), 'AI commit')} in {plural(len(todo), 'note')} reviewed?"
        if not await self.app.push_screen_wait(ConfirmModal(title, body, yes="Mark reviewed")):
            return
        marks: dict[str, list[str]] = {}
        files: dict[str, tuple[str, ...]] = {}
        for n in todo:
            for sha, names in marks_of(n).items():
                marks.setdefault(sha, []).extend(names)
            files.update((c.sha, c.files) for c in n.commits)
        if await self._run("mark all", write_marks, self.root, marks, files) is not None:
            self._after(f"{plural(len(todo), 'note')} marked reviewed")

    @work(exclusive=True, group="review-act")
    async def action_undo_hunk(self) -> None:
        s = self.shown
        if s is None or not s.diff.hunks:
            self.say("no hunk to undo: select a note with changes", "warning")
            return
        h = s.diff.hunks[s.hunk]
        if not h.ai:
            self.say(
                f"hunk {s.hunk + 1} has only your lines: nothing of the AI's to undo", "warning"
            )
            return
        try:  # the refusal before the confirm: it promised "your lines stay", then refused
            plan_undo(s.diff, s.hunk)
        except ActionError as e:
            self.say(f"undo refused: {e}", "error")
            return
        title = f"Undo the AI's lines in hunk {s.hunk + 1} of {s.note.path}?"
        body = [
            Content("One commit as you (Vaultwatch-Action: undo). Your lines stay as they are."),
            Content(""),
            *render_hunk(h, s.hunk, len(s.diff.hunks), False),
        ]
        if not await self.app.push_screen_wait(ConfirmModal(title, body, yes="Undo hunk")):
            return
        sha = await self._run(
            "undo", undo_hunk, self.root, s.note.path, s.hunk, self.since, hunk_text(h)
        )
        if sha:
            self._after(f"undid hunk {s.hunk + 1} of {s.note.path}: commit {sha[:8]}")

    @work(exclusive=True, group="review-act")
    async def action_revert_note(self) -> None:
        note = self.current()
        if note is None:
            self.say("no note selected", "warning")
            return
        if note.reviewed:
            self.say(f"{note.path} has no unreviewed AI changes to revert", "warning")
            return
        title = f"Revert every unreviewed AI change to {note.path}?"
        body = [
            Content("One commit as you; only this note; your own commits stay."),
            Content(""),
            *[Content(f"{c.short}  {c.subject}  ({c.client or '?'})") for c in note.commits],
        ]
        if not await self.app.push_screen_wait(ConfirmModal(title, body, yes="Revert")):
            return
        sha = await self._run("revert", revert_note, self.root, note.path)
        if sha:
            self._after(f"reverted the AI's changes to {note.path}: commit {sha[:8]}")

    @work(exclusive=True, group="review-act")
    async def action_comment(self) -> None:
        """Feedback for the AI on the selected hunk (its lines, the AI commit that wrote them),
        or on the note when its diff has no hunk."""
        note = self.current()
        if note is None:
            self.say("nothing to comment on: no note selected", "warning")
            return
        s = self.shown
        hunk = s.diff.hunks[s.hunk] if s is not None and s.note == note and s.diff.hunks else None
        lines: tuple[int | None, int | None] = (None, None)
        commit: str | None = None
        if hunk is None:
            about, quote = note.path, []
        else:
            lines, commit = hunk_span(hunk)
            assert s is not None
            about = f"hunk {s.hunk + 1} of {note.path}"
            quote = render_hunk(hunk, s.hunk, len(s.diff.hunks), False)[1:]
        text = await self.app.push_screen_wait(CommentModal(about, quote))
        if not text:
            return
        item = await self._run(
            "comment",
            lambda: add_feedback(
                self.root,
                note.path,
                text,
                line=lines[0],
                end=lines[1],
                commit=commit,
                quote=hunk_quote(hunk) if hunk is not None else None,
            ),
        )
        if item is not None:
            self.say(f"feedback {item.id} saved: the AI sees it in get_context")
            self.load_feedback()
            self.dash.poll()


def hunk_span(h: Hunk) -> tuple[tuple[int | None, int | None], str | None]:
    """The lines of the note now a hunk is about (its changed lines; where they were, for a
    hunk that only removed), and the AI commit that wrote or removed them."""
    now = [ln.new_no for ln in h.lines if ln.kind == "+" and ln.new_no]
    first, last = (now[0], now[-1]) if now else (max(1, h.new_start), max(1, h.new_start))
    ai = next(
        (ln.commit.sha for ln in h.lines if ln.kind != " " and ln.commit and not ln.owner), None
    )
    return (first, last), (ai if ai != WORKTREE else None)


def hunk_quote(h: Hunk) -> str:
    """The hunk as the owner saw it, as diff lines: what the AI reads beside the comment."""
    return "".join(f"{ln.kind}{ln.text.rstrip(chr(10))}\n" for ln in h.lines)
