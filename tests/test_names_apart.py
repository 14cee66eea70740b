"""Clients and notes cut by `Distinct` in every list: two different ones never print alike at
any width a column may get, and the Reads screen's client column (`clients_column`,
`claude-code +1`) follows it. Clients that share their start and their end (`claude-code`,
`claude-vscode`) read `cl…de` each when cut in the middle alone, as the Reads screen cut them
(issue 33)."""

from __future__ import annotations

from rich.cells import cell_len

from app.ui.widgets.cells import Distinct
from app.ui.widgets.read_cells import clients_column

PAIRS = [("claude-code", "claude-desktop"), ("claude-code", "claude-vscode")]


def test_two_clients_never_print_alike_at_any_width() -> None:
    for a, b in PAIRS:
        cut = Distinct.clients([a, b])
        for width in range(2, 20):
            got = cut(a, width), cut(b, width)
            assert got[0] != got[1], (width, got)
            assert all(cell_len(g) <= width for g in got), (width, got)


def test_the_reads_client_column_tells_the_top_clients_apart() -> None:
    for a, b in PAIRS:
        rows = [{a: 2, b: 1}, {b: 2, a: 1}, {a: 1}, {b: 3}]
        for width in range(6, 20):
            shown = clients_column(rows, width)
            assert all(cell_len(s) <= width for s in shown), (width, shown)
            # one client's rows alike (with `+1` or not), two clients' never
            names = [s.removesuffix(" +1") for s in shown]
            assert names[0] != names[1] and names[0] != names[3], (width, shown)
            assert names[2] != names[1] and names[2] != names[3], (width, shown)
            if cell_len(a) <= width:  # a row without `+1` gives its client those cells too
                assert shown[2] == a, (width, shown)


def test_notes_by_file_name_apart_where_they_differ() -> None:
    paths = [f"工作/系列/笔记之第{n}篇：一致性与可用性的权衡.md" for n in "一二三四五六七八九十"]
    cut = Distinct.notes(paths)
    for width in range(8, 40):
        shown = [cut(p.rpartition("/")[2], width) for p in paths]
        assert len(set(shown)) == len(shown), (width, shown)


def test_the_reads_client_column_cuts_as_the_timeline_does() -> None:
    """One rule for clients on every screen (issue 33): the Reads column cut them in the
    middle (`claud…sktop +1`) where the timeline and the review list cut at the end
    (`claude-…`); at a given width a client now reads the same in each."""
    long = "obsidian-copilot-self-hosted-assistant-bridge"
    rows = [{"claude-desktop": 2, "claude-code": 1}, {long: 1}]
    timeline = Distinct.clients(["claude-desktop", long])
    for width in range(6, 20):
        shown = clients_column(rows, width)
        assert shown == [timeline("claude-desktop", width - 3) + " +1", timeline(long, width)]
        assert shown[1].startswith(long[: min(3, width - 1)]), (width, shown)
