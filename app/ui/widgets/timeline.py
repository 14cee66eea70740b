"""The timeline: one line per row of the feed, newest first, drawn only where it is on screen.

A DataTable measures and styles every cell of every row whenever rows change (over half a
second for 2,000 rows), which made each new event late and capped how many rows could be
shown. This view keeps the rows as data and builds a line only when it is drawn, so an update
costs the same with 15,000 rows as with 15, and the cursor stays on its row by key."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from textual.binding import Binding
from textual.content import Content
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual

from app.services.feed import Row
from app.services.history import line_counts
from app.ui.widgets.cells import Distinct, fit, more_files, note_label

KIND_STYLE = {
    "ai": "bold $text-primary",
    "conflict": "bold $text-warning",
    "rejected": "bold $text-error",
    "error": "bold $text-error",
    "noop": "$text-muted",
    "server": "$text-muted",
    "revert": "bold $text-accent",
    "snapshot": "$text-secondary",
    "human": "$text-secondary",
    "move": "bold $text-accent",
    "create": "bold $text-accent",
    "remove": "bold $text-accent",
}
HEADINGS = ("time", "kind", "who", "note", "±", "summary")
REVERTED_MARK = "↺ reverted"


def widths(total: int) -> list[int]:
    """Column widths for a timeline `total` cells wide, each one never narrower on a wider
    timeline: time, kind and the +/- counts fixed; then the note's file name, who, and the
    summary (where a reverted row's mark goes first) share what is left, the file name first."""
    time, kind, counts = 11, 8, 9
    free = max(0, total - time - kind - counts - 5)  # five separating spaces
    note = min(40, max(0, free * 2 // 5))
    who = min(20, max(0, (free - note) // 3))
    return [time, kind, who, note, counts, max(1, free - note - who)]


def when(t: datetime, now: datetime) -> str:
    """Clock time for today's rows (the local day), the date as well for any other day."""
    local = t.astimezone()
    return local.strftime("%H:%M:%S" if local.date() == now.astimezone().date() else "%m-%d %H:%M")


def note_cell(
    paths: Sequence[str], width: int | None = None, cuts: Distinct | None = None
) -> Content:
    """The file name first (two edits to different notes must not look alike), how many more,
    then its folder, which a narrow column cuts first. Given the column's `width`, as
    `note_label` cuts every screen's paths: the folder shortened or left out, then the name cut
    in its middle, so its extension stays (`第07章-…笔记.md`, not `第07章-读书笔记.…`)."""
    if not paths:
        return Content("")
    if width is not None and width >= 8:
        return note_label(paths[0], width, len(paths) - 1, cuts)
    folder, _, name = paths[0].rpartition("/")
    return Content(name + more_files(len(paths) - 1)) + (
        Content.styled(f"  {folder}/", "$text-muted") if folder else ""
    )


def summary_of(row: Row) -> str:
    """The summary without what other columns say: an AI commit's subject starts with its
    tool and path (`edit_text: study/x.md`); the note column already has the path."""
    text = row.summary.replace("\n", " ")
    if row.commit is not None and row.commit.is_ai and row.paths:
        text = text.replace(f": {row.paths[0]}", "", 1)
    return text


def counts_cell(counts: tuple[int, int] | None) -> Content:
    if counts is None:
        return Content("")
    added, removed = counts
    return Content.assemble((f"+{added}", "$text-success"), " ", (f"−{removed}", "$text-error"))


def cells(
    row: Row,
    now: datetime,
    counts: tuple[int, int] | None = None,
    note_width: int | None = None,
    names: tuple[Distinct, Distinct, int] | None = None,
) -> list[Content]:
    """The row's cells; with `names` (file names, who, who's width) cut so that two different
    notes or clients never print the same (claude-code and claude-desktop: `…code`, `…desktop`,
    where both read `claude-…`)."""
    kind = Content.styled(row.kind, KIND_STYLE.get(row.kind, ""))
    summary = Content(summary_of(row))
    if row.reverted_by:  # undone already: the mark says so before anything else on the line
        summary = Content.styled(f"{REVERTED_MARK} ", "bold $text-warning") + summary
    return [
        Content(when(row.time, now)),
        kind,
        Content(names[1](row.who, names[2]) if names else row.who),
        note_cell(row.paths, note_width, names[0] if names else None),
        counts_cell(counts),
        summary,
    ]


def fit_line(row: list[Content], width: int) -> Content:
    """One timeline line `width` cells wide: each cell cut or padded to its column."""
    return Content(" ").join(fit(c, w) for c, w in zip(row, widths(width), strict=True) if w)


class Timeline(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"timeline--header", "timeline--cursor", "timeline--odd"}
    DEFAULT_CSS = """
    Timeline { overflow-x: hidden; overflow-y: auto; background: $surface; }
    Timeline > .timeline--header { text-style: bold; background: $panel; color: $foreground; }
    Timeline > .timeline--odd { background: $surface-lighten-1 50%; }
    Timeline > .timeline--cursor { background: $block-cursor-blurred-background;
                                   color: $block-cursor-blurred-foreground; }
    Timeline:focus > .timeline--cursor { background: $block-cursor-background;
                                         color: $block-cursor-foreground;
                                         text-style: $block-cursor-text-style; }
    """
    BINDINGS = [
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("home,g", "jump(0)", "Newest", show=False),
        Binding("end,G", "jump(-1)", "Oldest", show=False),
    ]

    class Highlighted(Message):
        """The cursor is on another row (or on none: the timeline is empty)."""

        def __init__(self, timeline: Timeline, row: Row | None) -> None:
            super().__init__()
            self.timeline = timeline
            self.row = row

        @property
        def control(self) -> Timeline:
            return self.timeline

    class Drawn(Message):
        """The timeline has drawn rows for the first time (sent once): what waits for the first
        screen to be up (the dashboard's reading of the older history) can start."""

    def __init__(self, *, id: str | None = None, root: Path | None = None) -> None:
        super().__init__(id=id)
        self.root = root
        self.rows: Sequence[Row] = ()
        self._index: dict[str, int] = {}
        self.cursor = 0
        self._announced: str | None = None
        # lines added/removed per commit sha, read in the background for rows being drawn
        self._counts: dict[str, tuple[int, int]] = {}
        self._wanted: set[str] = set()
        self._counting = False
        self._names = (Distinct.notes(()), Distinct.clients(()))
        # when rows were first drawn (perf_counter, and process_time: the bench's CPU figure)
        self.drawn_at: float | None = None
        self.drawn_cpu: float | None = None

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def current(self) -> Row | None:
        return self.rows[self.cursor] if self.rows else None

    def index_of(self, key: str) -> int | None:
        return self._index.get(key)

    def set_rows(self, rows: Sequence[Row]) -> None:
        """Show these rows; the cursor stays on the row it was on if that row is still here."""
        keep = self.current.key if self.current else None
        self.rows = rows
        self._index = {r.key: i for i, r in enumerate(rows)}
        # worked out again only when a note or client is new: over 10,000 names the cuts took
        # ~0.1 s, and every poll with a new row would have paid it
        notes = list(dict.fromkeys(p for r in rows for p in r.paths[:1]))
        whos = list(dict.fromkeys(r.who for r in rows))
        if set(notes) != set(self._names[0].names):
            self._names = (Distinct.notes(notes), self._names[1])
        if set(whos) != set(self._names[1].names):
            self._names = (self._names[0], Distinct.clients(whos))
        at = self._index.get(keep) if keep is not None else None
        self.virtual_size = Size(self.size.width, len(rows) + 1)  # + the header line
        if at is not None and at != self.cursor and self.scroll_y > 0:
            # rows came in above while the owner reads further down: the view moves with the
            # cursor so the lines being read stay put. At the top, new rows show as they come.
            self.scroll_to(y=self.scroll_y + at - self.cursor, animate=False, immediate=True)
        self.cursor = at if at is not None else min(self.cursor, max(0, len(rows) - 1))
        visible = max(1, self.scrollable_content_region.height - 1)
        if at is not None and self.cursor >= self.scroll_y + visible:
            # rows came in above while the view was at the top: the row being read was pushed
            # below the fold, the diff beside showing a commit with no row in sight
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)
        self._announce()
        self.refresh()

    def move_to(self, index: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(len(self.rows) - 1, index))
        visible = max(1, self.scrollable_content_region.height - 1)
        if self.cursor < self.scroll_y:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= self.scroll_y + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)
        self._announce()
        self.refresh()

    def _announce(self) -> None:
        key = self.current.key if self.current else None
        if key != self._announced:
            self._announced = key
            self.post_message(self.Highlighted(self, self.current))

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(1, self.scrollable_content_region.height - 2))

    def action_jump(self, index: int) -> None:
        self.move_to(index if index >= 0 else len(self.rows) - 1)

    def on_click(self, event: Click) -> None:
        if event.y >= 1:
            self.move_to(int(self.scroll_y) + event.y - 1)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            head = [Content(name) for name in HEADINGS]
            return self._strip(head, width, self.get_visual_style("timeline--header"))
        i = int(self.scroll_y) + y - 1
        if i >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        if self.drawn_at is None:  # the first screen's figure (bench/dashboard_bench.py)
            self.drawn_at, self.drawn_cpu = time.perf_counter(), time.process_time()
            # made and sent once this frame is out, from the timeline's own queue: made here,
            # in the screen's drawing, its sender would be the screen, and it stops there
            self.call_later(self._say_drawn)
        parts = ["timeline--cursor"] if i == self.cursor else ["timeline--odd"] if i % 2 else []
        style = self.get_visual_style(*parts)
        line = self.line_cells(i, width)
        if i == self.cursor:
            # the cursor's colours only: the kind's and the counts' own colours sat at 1.15-1.48:1
            # on the cursor's background, on the very row the owner is reading (the review list
            # draws its cursor row plainly too)
            line = [Content(c.plain) for c in line]
        return self._strip(line, width, style)

    def _say_drawn(self) -> None:
        self.post_message(self.Drawn())

    def line_cells(self, i: int, width: int) -> list[Content]:
        """Row `i`'s cells as drawn on a timeline `width` cells wide (before the cursor's style)."""
        row, w = self.rows[i], widths(width)
        return cells(row, datetime.now(UTC), self._count(row), w[3], (*self._names, w[2]))

    def _count(self, row: Row) -> tuple[int, int] | None:
        """The row's +/- counts if read already; else asked for, and drawn when they come."""
        if row.commit is None:
            return None
        sha = row.commit.sha
        if sha in self._counts:
            return self._counts[sha]
        self._wanted.add(sha)
        if not self._counting:
            self._counting = True
            self.call_after_refresh(self._read_counts)
        return None

    def _read_counts(self) -> None:
        root = self.root or getattr(self.app, "root", None)
        wanted, self._wanted = list(self._wanted), set()
        if root is None or not wanted:
            self._counting = False
            return

        def read() -> None:
            try:
                found = line_counts(root, wanted)
            except RuntimeError:  # the history changed under us: no counts, no retry loop
                found = {sha: (0, 0) for sha in wanted}
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.app.call_from_thread(self._got_counts, found)

        self.run_worker(read, thread=True, group="line-counts")

    def _got_counts(self, found: dict[str, tuple[int, int]]) -> None:
        self._counts.update(found)
        self._counting = False
        if self._wanted:  # rows drawn meanwhile
            self._counting = True
            self.call_after_refresh(self._read_counts)
        self.refresh()

    def _strip(self, row: list[Content], width: int, style: VisualStyle) -> Strip:
        line = fit_line(row, width)
        strips = Visual.to_strips(self, line, width, 1, style)
        strip = strips[0] if strips else Strip.blank(width)
        return strip.extend_cell_length(width, style.rich_style).crop(0, width)
