"""The review's diff pane: one note's net diff from its reviewed state to now as lines, each run
of changed lines under whoever made it (the AI commit, its tool, client and time, or YOU), the
hunk the keys act on marked, the header lines worded for the pane's width."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from textual.binding import Binding
from textual.content import Content

from app.services.history import Commit
from app.services.net_diff import WORKTREE, Hunk, NetDiff
from app.services.review import NoteSummary
from app.ui.widgets.cells import cut_middle, note_label, plural, short_names
from app.ui.widgets.diffview import ADD, DEL, HUNK
from app.ui.widgets.lines import LinesView
from app.ui.widgets.review_list import clients, span

OWNER_ADD = "italic $text-secondary on $secondary 14%"
OWNER_DEL = "italic $text-secondary on $secondary 8% strike"
SELECTED = "bold reverse"


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


def fitting(width: int, *variants: str) -> str:
    """The first of `variants` (longest first) that fits `width` cells, else the last cut in
    the middle: a header line that wrapped took two or three of the diff's few lines."""
    for text in variants:
        if cell_len(text) <= width:
            return text
    return cut_middle(variants[-1], width)


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
