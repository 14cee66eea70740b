"""The review list: the notes with AI changes, one row each, its columns shared out in the
list's width by what each needs (the note's file name first, the tools and clients readable,
the title only where it says more than the file name), and the list filled from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

from app.services.review import NoteSummary
from app.ui.widgets.cells import (
    Cell,
    Distinct,
    cut_middle,
    note_label,
    short_names,
)
from server.core.clients import client_name


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

    whos = client_cuts(notes)

    def text(n: NoteSummary, names: dict[str, str], cells: int) -> str:
        return tools_clients(n.tools, names, clients(n), cells, whos)

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

    rare = 2 * sum(bool(own_title(n)) for n in notes) < len(notes)

    def measure(names: dict[str, str], heads: list[str]) -> tuple[list[int], list[int]]:
        needs = [max([cell_len(h), *(cell_len(value(h, n, names)) for n in notes)]) for h in heads]
        # DataTable pads every column by one cell on each side; a period adds the ✓ column
        room = width - 2 * len(heads) - (3 if period else 0) - SCROLLBAR
        # a title most rows lack takes no room before the folder has had its share
        least = {"note": 16, "title": 1 if rare else TITLE_LEAST, "tools · clients": 15}
        at = {h: i for i, h in enumerate(heads)}
        note, tools = at["note"], at["tools · clients"]
        title = at.get("title")
        # first a file name (24) and `append · claude-code` (20), then the title to 16, the
        # tools and clients to 36, the title to 24, the note's folder to 45%, then the rest
        order: list[tuple[int, int | None]] = [(note, 24), (tools, 20)]
        order += [(title, 16)] if title is not None and not rare else []
        order += [(tools, 36)]
        order += [(title, 24)] if title is not None and not rare else []
        order += [(note, room * 45 // 100)]
        # titles most rows lack (a Chinese vault names notes by their titles) come after the
        # folder: the column's cells were blank on most rows while every folder was dropped
        order += [(title, 16), (title, 24)] if title is not None and rare else []
        order += [(title, None)] if title is not None else []
        order += [(note, None), (tools, None)]
        mins = [least.get(h, 0) for h in heads]
        return needs, share(room, needs, mins, order)

    names = {t: t for t in every}
    needs, widths = measure(names, heads)
    if widths[-1] < needs[-1]:  # the full names do not fit: the short ones, for every row
        names = short_names(every)
        needs, widths = measure(names, heads)
    over = sum(widths) + 2 * len(heads) + (3 if period else 0) + SCROLLBAR > width
    at = heads.index("title") if "title" in heads else -1
    if at >= 0 and (over or widths[at] < min(TITLE_LEAST, needs[at])):
        heads.remove("title")  # the title would be cut below TITLE_LEAST: the others have it
        needs, widths = measure(names, heads)
    # whole names leave the tools' column short of its width: what they do not use goes to
    # the title and the note (no blank cells while the title is cut)
    tools = heads.index("tools · clients")
    used = max([cell_len(heads[tools]), *(cell_len(text(n, names, widths[tools])) for n in notes)])
    spare, widths[tools] = widths[tools] - used, used
    for i in [
        heads.index(h) for h in (("note", "title") if rare else ("title", "note")) if h in heads
    ]:
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


def clients(note: NoteSummary) -> str:
    """The clients without their versions (claude-code, not claude-code/2.1.0): the version
    took the room the tools needed."""
    return ", ".join(dict.fromkeys(client_name(c) for c in note.clients)) or "?"


def client_cuts(notes: list[NoteSummary]) -> Distinct:
    """Every client of the list cut by the timeline's rule: two never print alike."""
    return Distinct.clients(c for n in notes for c in clients(n).split(", "))


def some(items: list[str], keep: int) -> str:
    """The first `keep` items and how many more: `append, batch +2`."""
    more = len(items) - keep
    return ", ".join(items[:keep]) + (f" +{more}" if more > 0 else "")


def tools_clients(
    tools: list[str],
    names: dict[str, str],
    who: str,
    width: int,
    cut: Callable[[str, int], str] | None = None,
) -> str:
    """The tools (by `names`) and the clients in `width` cells, each readable: whole names and
    how many more are left out (`append, update +2 · claude-code +1`), the most names that fit
    (a tool before a client on a tie). Clients that do not fit whole are cut by `cut`, the
    timeline's rule (`Distinct`: where they differ, `…code`, `…desktop`; `claud…sktop` and
    `2 clients` told no client from another); a tool too long is cut in the middle."""
    ts = [names.get(x, x) for x in tools] or ["?"]
    cs = who.split(", ")
    cut = cut or Distinct.clients(cs)
    # whole client names (a tool before a client on a tie), else each client cut as the
    # timeline cuts them at 80 columns (a client before a tool: the cut is there to tell them
    # apart, and `…code +1` hid the other)
    for shown, tie in ((cs, 0), ([cut(c, CLIENT_SHORT) for c in cs], 1)):
        best: tuple[int, int, str] | None = None
        for k in range(1, len(ts) + 1):
            for j in range(1, len(cs) + 1):
                text = f"{some(ts, k)} · {some(shown, j)}"
                rank = (k + j, (k, j)[tie])
                if cell_len(text) <= width and (best is None or rank > best[:2]):
                    best = (*rank, text)
        if best is not None:
            return best[2]
    t = some(ts, 1)
    for j in range(len(cs), 0, -1):  # every client cut where it differs, else fewer and +N
        more = f" +{len(cs) - j}" if j < len(cs) else ""
        each = (width - cell_len(t) - 3 - cell_len(more) - 2 * (j - 1)) // j
        if each >= CLIENT_LEAST:
            return f"{t} · {', '.join(cut(c, each) for c in cs[:j])}{more}"
    more = f" +{len(cs) - 1}" if len(cs) > 1 else ""
    t = cut_middle(t, max(1, min(cell_len(t), (width - 3 - CLIENT_LEAST - len(more)))))
    c = cut(cs[0], max(1, width - 3 - cell_len(t) - len(more)))
    return cut_middle(f"{t} · {c}{more}", width)


CLIENT_LEAST = 5  # cells a cut client needs to say where it differs (`…code`)
CLIENT_SHORT = 8  # a client's cut where its whole name does not fit (the timeline's at 80)


def fill_notes(table: DataTable[Any], notes: list[NoteSummary], width: int, period: bool) -> None:
    """The list's columns for `width` cells and a row per note (keyed by its path); with
    `period` a ✓ column first (every AI change in a period, reviewed or not)."""
    cols = list_columns(notes, width, period)
    table.clear(columns=True)
    if cols.period:
        table.add_column(Text("✓"), width=1)
    for name, cells in zip(cols.heads, cols.widths, strict=True):
        table.add_column(Text(name), width=cells)
    # style text, not colours: a cell resolves it when drawn, in the theme then on screen
    good, bad = "$text-success", "$text-error"
    w = dict(zip(cols.heads, cols.widths, strict=True))
    names = Distinct.notes(n.path for n in notes)  # never two alike
    whos = client_cuts(notes)  # nor two clients
    for n in notes:
        row = [Cell.of(note_label(n.path, w["note"], cuts=names))]
        if "title" in w:
            row.append(Cell(cut_middle(own_title(n), w["title"])))
        row += [
            Cell(f"{len(n.commits):,}"),
            Cell((f"+{n.added:,}", good), " ", (f"−{n.removed:,}", bad)),
            Cell(cut_middle(span(n, cols.wide), w["when"])),
            Cell(tools_clients(n.tools, cols.names, clients(n), w["tools · clients"], whos)),
        ]
        if cols.period:
            row.insert(0, Cell(("✓", good)) if n.reviewed else Cell("•"))
        table.add_row(*row, key=n.path)
