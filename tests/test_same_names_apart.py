"""Two notes with the same file name in different folders (`项目/甲组/周报.md` and
`项目/乙组/周报.md`, `work/2026/index.md` and `home/2026/index.md`) never print the same at 80x24:
read off the rendered screen, in every list that names notes (the timeline, the review list, the
tags' notes, the Reads lists, the health findings). The note column cut the folder away and both
read `周报.md` (issue 33's target: two different notes never print the same)."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import Implementation
from rich.cells import cell_len
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.screens.health_screen import HealthScreen
from app.ui.screens.insights import TagsScreen
from app.ui.screens.reads import ReadsScreen
from app.ui.screens.review_screen import ReviewScreen
from app.ui.settings import READABLE
from app.ui.widgets.cells import Distinct, note_label, note_names
from app.ui.widgets.path_list import PathList
from app.ui.widgets.timeline import Timeline, widths
from server.core.gitrepo import ensure_repo
from server.protocol.tools import build_server
from server.vault import Vault

from .chinese_notes import CLIENTS, words
from .colours import segment_contrast
from .conftest import until, write_files
from .desk import screen_text
from .settling import settled
from .templates import copy_of

pytestmark = pytest.mark.anyio

# same file names, different folders: one folder apart, a long shared prefix, a shared suffix
# (the folders differ at their top), three of one name, English and Chinese
SAME = [
    "项目/甲组/周报.md",
    "项目/乙组/周报.md",
    "work/2026/index.md",
    "home/2026/index.md",
    "资料/index.md",
    "工作/分布式系统架构设计/消息队列与事件驱动/甲组/会议纪要.md",
    "工作/分布式系统架构设计/消息队列与事件驱动/乙组/会议纪要.md",
    "notes/projects/distributed-systems/alpha/2026/meeting-notes.md",
    "notes/projects/distributed-systems/beta/2026/meeting-notes.md",
    "工作/团队与项目管理/二〇二六年第四季度规划与复盘/十月迭代复盘.md",
]


@pytest.fixture
def same_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return copy_of(tmp_path_factory, "same-names-apart", tmp_path / "v", build_same_vault)


def build_same_vault(root: Path) -> None:
    """The notes written through the server by two clients, each read by both (Most read)."""
    write_files(
        root,
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- 周报\n",
        },
    )
    ensure_repo(root)

    async def writes() -> None:
        for k, client in enumerate(CLIENTS):
            vault = Vault(root)
            async with Client(
                build_server(vault), client_info=Implementation(name=client, version="1")
            ) as c:
                for path in SAME[k::2]:
                    folder, _, name = path.rpartition("/")
                    body = f"# {name} · {folder}\n\n{words(path)}\n"
                    # a note of that name is elsewhere already: this one is its own note
                    twins = [p for p in SAME[: SAME.index(path)] if p.endswith("/" + name)]
                    args = {"path": path, "body": body, "tags": ["周报"]}
                    r = await c.call_tool("create_doc", {**args, "distinct_from": twins})
                    assert not r.is_error, r.content
            vault.close()
        for client in CLIENTS:
            vault = Vault(root)
            async with Client(
                build_server(vault), client_info=Implementation(name=client, version="1")
            ) as c:
                for path in SAME:
                    r = await c.call_tool("read_doc", {"path": path})
                    assert not r.is_error, r.content
            vault.close()

    anyio.run(writes)


def screen_cells(app: Any) -> list[str]:
    """The screen's lines by cells: a wide character is followed by a NUL, so a slice of the
    string is a slice of the terminal's columns."""
    return [
        "".join(ch + ("\0" if cell_len(ch) == 2 else "") for ch in line)
        for line in screen_text(app).splitlines()
    ]


def shown(line: str, x: int, width: int) -> str:
    """What the terminal shows in `width` columns from `x`: a note's whole cell, its name and
    (where there is room) its folder after."""
    return line[x : x + width].replace("\0", "").strip()


def alike(seen: dict[str, str]) -> dict[str, list[str]]:
    """The notes (path -> what the screen shows for it) printed the same way, by that print."""
    by: dict[str, list[str]] = {}
    for path, label in seen.items():
        by.setdefault(label, []).append(path)
    return {k: v for k, v in by.items() if len(v) > 1}


def test_a_note_of_a_shared_file_name_is_named_by_the_folder_where_they_differ() -> None:
    """The shared parts of the folders left out: the name stays, with the folder it is in
    where that tells them apart, the top one where that does; a name no other note has stays
    alone."""
    names = note_names(SAME)
    assert names["项目/甲组/周报.md"] == "…甲组/周报.md"
    assert (
        names["工作/分布式系统架构设计/消息队列与事件驱动/乙组/会议纪要.md"] == "…乙组/会议纪要.md"
    )
    assert names["notes/projects/distributed-systems/beta/2026/meeting-notes.md"] == (
        "…beta/…/meeting-notes.md"
    )
    # three index.md: work/2026 and home/2026 share 2026, 资料 does not: whole paths
    assert names["资料/index.md"] == "资料/index.md"
    assert names["work/2026/index.md"] == "work/2026/index.md"
    assert note_names(["work/2026/index.md", "home/2026/index.md"]) == {
        "work/2026/index.md": "work/…/index.md",
        "home/2026/index.md": "home/…/index.md",
    }
    # a folder inside the other's: each shows a folder it has; beside a note at the top, the
    # paths whole
    assert note_names(["a/n.md", "a/b/n.md"]) == {"a/n.md": "a/n.md", "a/b/n.md": "…b/n.md"}
    assert note_names(["a/n.md", "a/b/n.md", "n.md"]) == {
        "a/n.md": "a/n.md",
        "a/b/n.md": "a/b/n.md",
        "n.md": "n.md",
    }
    assert (
        names["工作/团队与项目管理/二〇二六年第四季度规划与复盘/十月迭代复盘.md"]
        == "十月迭代复盘.md"
    )
    # where the whole folder fits after the name, the name alone: where they differ is said
    # once (`…甲组/周报.md  项目/甲组/` said it twice)
    cuts = Distinct.notes(SAME)
    assert note_label("项目/甲组/周报.md", 30, cuts=cuts).plain == "周报.md  项目/甲组/"
    assert note_label("项目/甲组/周报.md", 18, cuts=cuts).plain == "…甲组/周报.md"


def test_notes_of_one_file_name_never_print_alike_at_any_column_width() -> None:
    """From 9 cells (the note column is 16 or more at 80 columns) to whole: at 8, four names
    of 2-cell characters (`…甲组/周报.md`, `…甲组/会议纪要.md`, and 乙) have no 8-cell
    forms that keep both the group and the name."""
    cuts = Distinct.notes(SAME)
    for width in range(9, 80):
        shown = [note_label(p, width, cuts=cuts).plain for p in SAME]
        assert len(set(shown)) == len(shown), (width, shown)
        assert all(cell_len(s) <= width for s in shown), (width, shown)
        # the cut's ellipsis beside the name's own reads as one (`…alpha/……notes.md` did not)
        assert not [s for s in shown if "……" in s or "…/…" in s], (width, shown)


async def table_notes(pilot: Any, app: Any, table: DataTable[Any]) -> dict[int, str]:
    """Each row's note, as its first column is drawn on screen: the cursor taken to each row in
    turn (at 80x24 a list shows a few of its rows)."""
    region = table.content_region
    col = next(iter(table.columns.values()))
    width = col.get_render_width(table)
    out: dict[int, str] = {}
    for i in range(table.row_count):
        table.move_cursor(row=i, animate=False)
        await settled(pilot, f"row {i} of #{table.id} in sight")
        y = region.y + 1 + i - int(table.scroll_y)  # under the header line
        assert region.y < y < region.bottom, (i, table.scroll_y, region)
        out[i] = shown(screen_cells(app)[y], region.x, width)
    return out


async def test_same_file_names_in_other_folders_print_apart_at_80_columns(
    same_vault: Path,
) -> None:
    app = Dashboard(same_vault, poll_seconds=60)
    found: dict[str, dict[str, list[str]]] = {}  # list -> the notes it printed alike
    async with app.run_test(size=(80, 24)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: sum(r.kind == "ai" for r in t.rows) >= len(SAME), "AI rows")
        await until(pilot, lambda: t.scrollable_content_region.width > 70, "the timeline laid out")
        await settled(pilot, "the timeline drawn")

        # the timeline: each AI row's note column, as drawn (the cursor taken to each row in
        # turn: at 80x24 the diff below leaves the timeline a few lines)
        t.focus()
        region = t.scrollable_content_region
        w = widths(region.width)
        x = region.x + sum(w[:3]) + 3
        seen: dict[str, str] = {}
        for i, row in enumerate(t.rows):
            if row.kind != "ai":
                continue
            t.move_to(i)
            await settled(pilot, f"the timeline at row {i}")
            y = region.y + 1 + i - int(t.scroll_y)
            assert region.y < y < region.bottom, (i, t.scroll_y, region)
            seen[row.paths[0]] = shown(screen_cells(app)[y], x, w[3])
        assert set(seen) == set(SAME), sorted(set(SAME) - set(seen))
        found["the timeline"] = alike(seen)

        await until(pilot, lambda: app.review_watch.count is not None, "the review count")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review screen")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        await until(pilot, lambda: review.review is not None, "the review list")
        await settled(pilot, "the review list drawn")
        table = review.query_one("#review-notes", DataTable)
        rows = await table_notes(pilot, app, table)
        seen = {str(table.ordered_rows[i].key.value): label for i, label in rows.items()}
        assert set(seen) == set(SAME), seen
        found["the review list"] = alike(seen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ReviewScreen), "the timeline")

        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen), "the tags screen")
        pane = app.screen.query_one(PathList)
        await until(pilot, lambda: len(pane.paths) == len(SAME), "the tag's notes")
        await settled(pilot, "the tag's notes drawn")
        lines = screen_cells(app)
        r = pane.content_region
        seen = {
            p: lines[r.y + i][r.x : r.right].replace("\0", "").strip()
            for i, p in enumerate(pane.paths)
            if r.y + i < min(r.bottom, len(lines))
        }
        assert set(seen) == set(SAME), seen
        found["the tag's notes"] = alike(seen)
        # the file name first, as every list names notes (it was the path cut in its middle:
        # `工作/团队与项…迭代复盘.md`)
        review_note = "工作/团队与项目管理/二〇二六年第四季度规划与复盘/十月迭代复盘.md"
        assert seen[review_note].startswith("十月迭代复盘.md"), seen[review_note]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TagsScreen), "the timeline")

        await pilot.press("dollar_sign")
        await until(pilot, lambda: isinstance(app.screen, ReadsScreen), "the reads screen")
        reads = app.screen
        assert isinstance(reads, ReadsScreen)
        await until(pilot, lambda: reads.report is not None, "the reads report")
        report = reads.report
        assert report is not None
        await pilot.press("2")
        most = reads.query_one("#most", DataTable)
        await until(pilot, lambda: most.row_count == len(report.most), "the Most read rows")
        await settled(pilot, "the Most read tab drawn")
        rows = await table_notes(pilot, app, most)
        seen = {report.most[i].path: label for i, label in rows.items()}
        assert set(seen) == set(SAME), seen
        found["Reads' Most read"] = alike(seen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ReadsScreen), "the timeline")

        # two months on, every note is an orphan: a finding each
        app.today = date.today() + timedelta(days=60)
        await pilot.press("H")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "the health screen")
        health = app.screen
        assert isinstance(health, HealthScreen)
        await until(pilot, lambda: health.report is not None, "every finding")
        await settled(pilot, "the findings drawn")
        table = health.query_one("#findings", DataTable)
        by_id = {f.id: f.path for f in health.shown_findings()}
        rows = await table_notes(pilot, app, table)
        seen = {
            by_id[k]: label
            for i, label in rows.items()
            if (k := str(table.ordered_rows[i].key.value)) in by_id
        }
        assert set(seen) >= set(SAME), seen
        found["the health findings"] = alike(seen)
    assert len(found) == 5, found
    bad = {k: v for k, v in found.items() if v}
    assert not bad, f"printed alike in {sorted(bad)}: {bad}"


THEMES = ("vaultwatch-dark", "vaultwatch-light", "textual-dark", "textual-light")


def folder_contrasts(table: DataTable[Any]) -> list[tuple[str, float]]:
    """Each drawn folder (the muted text after a note's name, `  weeks/`) in the table's rows
    in sight, with its contrast against the row it is drawn on."""
    out = []
    for y in range(1, table.size.height):  # under the header line
        for seg in table.render_line(y):
            text = seg.text.strip()
            if seg.text.startswith("  ") and text.endswith("/"):
                out.append((text, round(segment_contrast(seg), 2)))
    return out


async def test_the_folder_after_a_note_reads_on_every_theme(same_vault: Path) -> None:
    """The Reads screen's Most read list and the review list, drawn in each theme shipped (ours
    and Textual's own): the folder after a note's name stands at 4.5:1 or more against its row.
    It was drawn black on the grey rows (1.2-2.3:1): `$text-muted` is `auto 60%`, blended over
    what lies under it, and a table cell is drawn with nothing under it."""
    app = Dashboard(same_vault, poll_seconds=60)
    low: dict[str, list[tuple[str, float]]] = {}
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.review_watch.count is not None, "the review count")
        await pilot.press("dollar_sign")
        await until(pilot, lambda: isinstance(app.screen, ReadsScreen), "the reads screen")
        reads = app.screen
        assert isinstance(reads, ReadsScreen)
        await until(pilot, lambda: reads.report is not None, "the reads report")
        await pilot.press("2")
        most = reads.query_one("#most", DataTable)
        await until(pilot, lambda: most.row_count >= len(SAME), "the Most read rows")
        for theme in THEMES:
            app.theme = theme
            await settled(pilot, f"Most read drawn in {theme}")
            seen = folder_contrasts(most)
            assert len(seen) >= 5, (theme, seen)  # the folders, found
            low[f"reads {theme}"] = [s for s in seen if s[1] < READABLE]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ReadsScreen), "the timeline")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review screen")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        await until(pilot, lambda: review.review is not None, "the review list")
        table = review.query_one("#review-notes", DataTable)
        for theme in THEMES:
            app.theme = theme
            await settled(pilot, f"the review list drawn in {theme}")
            seen = folder_contrasts(table)
            assert len(seen) >= 3, (theme, seen)
            low[f"review {theme}"] = [s for s in seen if s[1] < READABLE]
    bad = {k: v for k, v in low.items() if v}
    assert not bad, f"folders drawn below {READABLE}:1: {bad}"


async def test_the_tags_screen_says_why_it_is_empty(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault whose notes have no tags: the Tags screen (`t`) said nothing at all, an empty
    table beside an empty pane (audit at 80x24 on a Chinese vault)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({"笔记.md": "# 笔记\n\n没有标签。\n"})
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen), "the tags screen")
        await settled(pilot, "the tags screen drawn")
        text = screen_text(app)
        assert "No tags yet" in text and "frontmatter" in text, text


def drawn(app: Any, words: tuple[str, ...]) -> list[tuple[str, float]]:
    """Each segment on screen whose text is one of `words`, with its contrast."""
    return [
        (seg.text.strip(), round(segment_contrast(seg), 2))
        for strip in app.screen._compositor.render_strips()
        for seg in strip
        if seg.text.strip() in words and seg.style is not None
    ]


async def test_pane_titles_and_footer_keys_read_on_every_theme(same_vault: Path) -> None:
    """The review's diff pane says how many hunks on its border, and the footer names the keys:
    both at 4.5:1 or more in each theme. The title was drawn in the border's own colour ($panel
    on the background, 1.1-1.5:1 in every theme), the keys in the accent (3.05:1 on
    vaultwatch-dark's footer, 2.9:1 on textual-light's); the counts' `−0` at 3.7:1 on
    vaultwatch-dark's rows."""
    app = Dashboard(same_vault, poll_seconds=60)
    low: dict[str, list[tuple[str, float]]] = {}
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: bool(t._counts), "the +/- counts")
        for theme in THEMES:
            app.theme = theme
            await settled(pilot, f"the timeline drawn in {theme}")
            seen = drawn(app, ("−0",))
            assert seen, (theme, "no −0 drawn")
            low[f"timeline {theme}"] = [s for s in seen if s[1] < READABLE]
        await until(pilot, lambda: app.review_watch.count is not None, "the review count")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review screen")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        await until(pilot, lambda: review.shown is not None, "the review's diff")
        for theme in THEMES:
            app.theme = theme
            await settled(pilot, f"the review drawn in {theme}")
            seen = drawn(app, ("1 hunk", "esc", "space", "^p"))
            assert {"1 hunk", "esc"} <= {text for text, _ in seen}, (theme, seen)
            low[f"review {theme}"] = [s for s in seen if s[1] < READABLE]
    bad = {k: v for k, v in low.items() if v}
    assert not bad, f"drawn below {READABLE}:1: {bad}"
