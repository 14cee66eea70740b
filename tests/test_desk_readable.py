"""The review desk read at a glance: the selected timeline row in readable colours, and at 80
columns two different notes or clients never printed the same, on a vault of 30 Chinese notes
with shared prefixes written by two clients (issue 33, audit turn 3 N1 and N2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client
from mcp.types import Implementation
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.screens.health_screen import HealthScreen
from app.ui.screens.insights import TagsScreen
from app.ui.screens.reads import ReadsScreen
from app.ui.screens.review_screen import ReviewScreen
from app.ui.screens.stats_screen import StatsScreen
from app.ui.widgets.path_list import PathList
from app.ui.widgets.timeline import Timeline, fit_line, widths
from server.core.gitrepo import ensure_repo
from server.protocol.tools import build_server
from server.vault import Vault

from .chinese_notes import CLIENTS, words
from .chinese_notes import chinese_paths as notes_in
from .colours import contrast
from .conftest import screen_is, until, write_files
from .review_desk import open_review
from .settling import settled, unsettled
from .templates import copy_of

pytestmark = pytest.mark.anyio

S = TypeVar("S", bound="Screen[Any]")

FOLDER = "工作/分布式系统"


def chinese_paths() -> list[str]:
    """30 notes whose names share their start and their end, a series with one subtitle
    (`分布式系统设计笔记之第三篇：一致性与可用性的权衡.md`): cut in the middle, as every list
    cut them at 80 columns, they all read `分布式系…权衡.md`."""
    subtitle = "：一致性与可用性的权衡.md"
    return [p.removesuffix(".md") + subtitle for p in notes_in(FOLDER)]


@pytest.fixture
def cn_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """30 Chinese notes by two clients, titled as their file names (a copy of one built once
    per test process: 30 writes through the server)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return copy_of(tmp_path_factory, "desk-readable-cn", tmp_path / "v", build_cn_vault)


def build_cn_vault(root: Path) -> None:
    write_files(
        root,
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- 分布式\n- 分布式系统\n- 分布式系统设计\n",
        },
    )
    ensure_repo(root)

    async def writes(k: int, c: Client) -> None:
        for path in chinese_paths()[k::2]:
            stem = path.rpartition("/")[2].removesuffix(".md")
            # the title is the file name again, as Chinese vaults name notes
            body = f"# {stem}\n\n第一，先把问题定义清楚。{words(path)}\n"
            await c.call_tool(
                "create_doc", {"path": path, "body": body, "tags": ["分布式系统设计"]}
            )

    as_each_client(root, writes)


def as_each_client(root: Path, act: Callable[[int, Client], Awaitable[None]]) -> None:
    """`act(k, the client)` for each of CLIENTS in turn (k: its place in CLIENTS), each through
    the real server on `root` under its own client name."""

    async def each() -> None:
        for k, client in enumerate(CLIENTS):
            vault = Vault(root)
            try:
                async with Client(
                    build_server(vault), client_info=Implementation(name=client, version="1")
                ) as c:
                    await act(k, c)
            finally:
                vault.close()

    anyio.run(each)


@pytest.fixture
def cn_read_vault(cn_vault: Path) -> Path:
    """The Chinese vault read by both clients: each its own notes twice and the other's once,
    so the Reads screen's client column names either client, each with `+1`."""

    async def reads(k: int, c: Client) -> None:
        for i, path in enumerate(chinese_paths()):
            for _ in range(2 if i % 2 == k else 1):
                r = await c.call_tool("read_doc", {"path": path})
                assert not r.is_error, r.content

    as_each_client(cn_vault, reads)
    return cn_vault


async def opened(pilot: Any, key: str, kind: type[S]) -> S:
    """`key` pressed, and its screen on top (conftest.screen_is: composed and mounted)."""
    await pilot.press(key)
    screen = await screen_is(pilot, kind)
    assert isinstance(screen, kind)
    return screen


async def closed(pilot: Any, kind: type[Screen[Any]]) -> None:
    """Escape pressed, and the `kind` screen gone: the timeline's again."""
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(pilot.app.screen, kind), "the timeline")


async def test_the_selected_ai_row_reads_in_every_theme_colour(cn_vault: Path) -> None:
    """N1: on the cursor's row every cell (kind, who, note, +/−) stands at 4.5:1 or more against
    the cursor's background; the kind and counts were 1.15-1.48:1."""
    app = Dashboard(cn_vault, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.current is not None and t.current.kind == "ai", "an AI row")
        await until(pilot, lambda: bool(t._counts), "the +/- counts")
        t.focus()
        # focused, and restyled and drawn as the focused timeline (its cursor's colours)
        await until(
            pilot,
            lambda: t.has_focus and not unsettled(app),
            "the timeline focused and drawn",
            describe=lambda: (t.has_focus, unsettled(app)),
        )
        y = t.cursor - int(t.scroll_y) + 1
        strip = t.render_line(y)
        seen = []
        for seg in strip:
            if not seg.text.strip() or seg.style is None:
                continue
            fg, bg = seg.style.color, seg.style.bgcolor
            assert fg is not None and bg is not None, seg
            seen.append((seg.text.strip(), round(contrast(fg, bg), 2)))
        said = " ".join(text for text, _ in seen).split()
        assert "ai" in said and any(w.startswith("+") for w in said), seen
        low = [(text, ratio) for text, ratio in seen if ratio < 4.5]
        assert not low, f"unreadable on the selected row: {low}"


async def test_at_80_columns_no_two_notes_or_clients_print_the_same(cn_read_vault: Path) -> None:
    """N2: every list that names notes or clients at 80x24 (the timeline, the review list, the
    tags list and its notes, the Reads screen's lists, the health findings, the stats client
    tables) gives every note and client a label of its own; at 120 the review list drops the
    title that repeats the file name and shows the folder instead."""
    paths = chinese_paths()
    app = Dashboard(cn_read_vault, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: sum(r.kind == "ai" for r in t.rows) >= 30, "30 AI rows")
        await until(pilot, lambda: t.scrollable_content_region.width > 70, "the timeline laid out")
        width = t.scrollable_content_region.width
        w = widths(width)
        starts = [sum(w[:i]) + i for i in range(len(w))]
        notes: dict[str, set[str]] = {}
        whos: dict[str, set[str]] = {}
        for i, row in enumerate(t.rows):
            if row.kind != "ai":
                continue
            line = fit_line(t.line_cells(i, width), width).plain
            # columns by cells: the line is in cells, a Chinese character takes two
            cells = "".join(ch + ("\0" if _wide(ch) else "") for ch in line)
            who = cells[starts[2] : starts[2] + w[2]].replace("\0", "").strip()
            note = cells[starts[3] : starts[3] + w[3]].replace("\0", "").split("  ")[0].strip()
            whos.setdefault(who, set()).add(row.who)
            notes.setdefault(note, set()).add(row.paths[0])
        assert len(whos) == 2, whos
        assert all(len(v) == 1 for v in whos.values()), whos
        assert all(len(v) == 1 for v in notes.values()), {
            k: v for k, v in notes.items() if len(v) > 1
        }
        assert set().union(*notes.values()) == set(paths)

        await until(pilot, lambda: app.review_watch.count is not None, "the review count")
        review = await opened(pilot, "v", ReviewScreen)
        await until(pilot, lambda: review.review is not None, "the review list")
        table = review.query_one("#review-notes", DataTable)
        labels: dict[str, set[str]] = {}
        for i in range(table.row_count):
            cell = table.get_row_at(i)[0]
            label = str(cell).split("  ")[0]
            labels.setdefault(label, set()).add(
                str(table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value)
            )
        assert len(labels) == 30, labels
        assert all(len(v) == 1 for v in labels.values()), labels

        await closed(pilot, ReviewScreen)
        await opened(pilot, "t", TagsScreen)
        tags = app.screen.query_one("#tags", DataTable)
        shown = [str(tags.get_row_at(i)[0]) for i in range(tags.row_count)]
        assert len(set(shown)) == len(shown) == tags.row_count, shown
        pane = app.screen.query_one(PathList)
        await until(pilot, lambda: len(pane.paths) == 30, "the tag's 30 notes")
        await settled(pilot, "the tag's notes laid out")
        rows = pane.rows(pane.content_region.width)
        assert len(set(rows)) == 30, rows
        await closed(pilot, TagsScreen)

        await reads_apart(app, pilot, set(paths))
        await findings_apart(app, pilot)
        await stats_apart(app, pilot)

        await pilot.resize_terminal(120, 36)
        await until(pilot, lambda: app.size.width == 120, "the resize")
        screen = await opened(pilot, "v", ReviewScreen)
        await until(pilot, lambda: screen.review is not None, "the review list")
        table = screen.query_one("#review-notes", DataTable)
        await settled(pilot, "the review list laid out at 120 columns")
        heads = [str(c.label) for c in table.columns.values()]
        assert "title" not in heads, heads
        first = str(table.get_row_at(0)[0])
        folder = first.partition("  ")[2]  # after the file name, cut in its middle if need be
        assert folder.startswith("工") and folder.endswith("统/"), f"no folder: {first!r}"


def apart(labels: list[str], names: list[str], what: str) -> None:
    """Each label stands for one name, and each name has one label: two never print alike."""
    by: dict[str, set[str]] = {}
    for label, name in zip(labels, names, strict=True):
        by.setdefault(label, set()).add(name)
    alike = {k: v for k, v in by.items() if len(v) > 1}
    assert not alike, f"{what} printed alike: {alike}"


def note_of(cell: object) -> str:
    """The file name part of a `note_label` cell (its folder follows two spaces after)."""
    return str(cell).split("  ")[0].strip()


async def reads_apart(app: Dashboard, pilot: Any, paths: set[str]) -> None:
    """The Reads screen at 80 columns: Most read's notes and clients (`…code +1`), and the
    cost tab's per-client rows."""
    reads = await opened(pilot, "dollar_sign", ReadsScreen)
    await until(pilot, lambda: reads.report is not None, "the reads report")
    report = reads.report
    assert report is not None
    await pilot.press("2")
    await until(pilot, lambda: "most" in reads.widths, "the Most read tab drawn")
    most = reads.query_one("#most", DataTable)
    await until(pilot, lambda: most.row_count == len(report.most), "the Most read rows")
    rows = [most.get_row_at(i) for i in range(most.row_count)]
    read = [n.path for n in report.most]
    assert paths <= set(read), sorted(set(paths) - set(read))
    apart([note_of(r[0]) for r in rows], read, "Most read's notes")
    tops = [next(iter(n.clients)) for n in report.most]
    assert set(tops) == set(CLIENTS), tops
    apart([str(r[-1]) for r in rows], tops, "Most read's clients")
    await pilot.press("1")
    days = reads.query_one("#client-days", DataTable)
    await until(pilot, lambda: days.row_count == 2, "a row per client a day")
    apart(
        [str(days.get_row_at(i)[0]).strip() for i in range(2)],
        list(report.per_day.clients),
        "the clients' days",
    )
    await closed(pilot, ReadsScreen)


async def findings_apart(app: Dashboard, pilot: Any) -> None:
    """The health findings at 80 columns: a note's label names that note only. Two months on,
    every note is an orphan (no note links to it)."""
    app.today = date.today() + timedelta(days=60)
    health = await opened(pilot, "H", HealthScreen)
    await until(pilot, lambda: health.report is not None, "every finding")
    table = health.query_one("#findings", DataTable)
    keys = [str(k.value) for k in table.rows]
    by_id = {f.id: f.path for f in health.shown_findings()}
    rows = [(note_of(table.get_row_at(i)[0]), by_id[k]) for i, k in enumerate(keys) if k in by_id]
    assert {p for _, p in rows} >= set(chinese_paths()), rows
    apart([label for label, _ in rows], [p for _, p in rows], "the findings' notes")
    await closed(pilot, HealthScreen)
    app.today = None


async def stats_apart(app: Dashboard, pilot: Any) -> None:
    """The stats screen's client tables at 80 columns: the two clients apart."""
    await opened(pilot, "S", StatsScreen)
    for id_ in ("#stats-clients", "#stats-client-tools"):
        table: DataTable[Any] = app.screen.query_one(id_, DataTable)
        await until(pilot, partial(two_rows, table), f"{id_}: a row per client")
        shown = [str(table.get_row_at(i)[0]).strip() for i in range(2)]
        assert len(set(shown)) == 2, (id_, shown)
    await closed(pilot, StatsScreen)


def two_rows(table: DataTable[Any]) -> bool:
    return table.row_count == 2


def _wide(ch: str) -> bool:
    from rich.cells import cell_len

    return cell_len(ch) == 2


def long_body(seed: str) -> str:
    return "".join(f"第{i}行：{words(f'{seed}{i}', 4)}\n" for i in range(40))


@pytest.fixture
def keys_vault(make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Enough of everything that every list and pane can move: 30 long notes by two clients,
    three tags, reads of some notes (the Reads lists), a broken link (Health)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    tags = ["分布式", "缓存", "同步"]
    root: Path = make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "".join(f"- {t}\n" for t in tags),
            "broken.md": "# 断链\n\n[[不存在的笔记]]\n[[也不存在]]\n",
        }
    )

    async def writes() -> None:
        for k, client in enumerate(CLIENTS):
            vault = Vault(root)
            async with Client(
                build_server(vault), client_info=Implementation(name=client, version="1")
            ) as c:
                for i, path in list(enumerate(chinese_paths()))[k::2]:
                    await c.call_tool(
                        "create_doc",
                        {
                            "path": path,
                            "body": f"# 笔记{i}\n\n{long_body(path)}",
                            "tags": [tags[i % 3]],
                        },
                    )
                    if i % 3 == 0:
                        await c.call_tool("read_doc", {"path": path})
                await c.call_tool("get_context", {})
            vault.close()

    anyio.run(writes)
    from app.services.feedback import add_feedback

    for i, path in enumerate(chinese_paths()):  # the feedback list, longer than its screen
        add_feedback(root, path, f"第{i}条：标题写错了", line=1)
    return root


async def answered(pilot: Any, check: Callable[[float], bool], at: Callable[[], float]) -> bool:
    """Whether a key pressed moved what it must: the press is handled when `press` returns
    (and its scroll animated); what is left to draw is waited for, a few seconds at most (a
    key that does not answer is a finding to list with the others, not an error)."""
    try:
        await until(pilot, lambda: check(at()), "the key's move", timeout=5)
    except AssertionError:
        return False
    return True


async def answers_keys(pilot: Any, widget: Any, name: str, top_key: str = "g") -> str | None:
    """Focus `widget` and press j, k, G, the top key, End, Home, ctrl+d, ctrl+u: each must move
    it (its cursor row, or its scroll). None when it answered them all, else what did not;
    "short" when there is nothing to move over."""
    from textual.widgets import DataTable as Table

    widget.focus()
    await pilot.pause()  # the focus events handled
    if isinstance(widget, Table):

        def at() -> float:
            return float(widget.cursor_row)

        last = float(widget.row_count - 1)
        widget.move_cursor(row=0)
    elif isinstance(widget, Timeline):

        def at() -> float:
            return float(widget.cursor)

        last = float(widget.row_count - 1)
        widget.move_to(0)
    else:

        def at() -> float:
            return float(widget.scroll_y)

        last = float(widget.max_scroll_y)
        widget.scroll_to(y=0, animate=False, immediate=True)
    if last < 2:
        return "short"
    await pilot.press("home")  # the top: Health's first finding sits under its group's row
    await settled(pilot, f"{name} at its top")
    first = at()
    wrong = [] if first < last else [f"home→{first:g}"]
    for key, check in (
        ("j", lambda v: v > first),
        ("k", lambda v: v == first),
        ("G", lambda v: v == last),
        (top_key, lambda v: v == first),
        ("end", lambda v: v == last),
        ("home", lambda v: v == first),
        ("ctrl+d", lambda v: v > first and v >= min(last, first + 2)),
        ("ctrl+u", lambda v: v == first),
    ):
        await pilot.press(key)
        if not await answered(pilot, check, at):
            wrong.append(f"{key}→{at():g}")
    return f"{name}: {' '.join(wrong)}" if wrong else None


# slow: among the longest tests outside the load tests (~25 s on 2 cores): dealt out first, so a run
# does not end on it
@pytest.mark.slow
async def test_every_list_and_pane_answers_the_lazygit_keys(keys_vault: Path) -> None:
    """Every screen walked at 80x24; on each, every list and scrolling pane takes j/k, g/G
    (the timeline's too: Tags is `t`), Home/End and ctrl+d/ctrl+u. The tags and reads lists
    ignored j/k; the review list Home/End."""
    from app.ui.screens.feedback_screen import FeedbackScreen
    from app.ui.screens.health_screen import HealthScreen
    from app.ui.screens.note_screen import NoteScreen
    from app.ui.screens.reads import ReadsScreen
    from app.ui.screens.stats_screen import StatsScreen
    from app.ui.widgets.lines import LinesView

    app = Dashboard(keys_vault, poll_seconds=60)
    # what a key moves is under test, not how it animates: g/G/Home/End on a scrolling pane
    # animate for a second each, and Pilot's press waits the animation out (20 s of this test)
    app.animation_level = "none"
    failures: list[str] = []
    checked: list[str] = []

    async def walk(screen_name: str, exempt_top: tuple[str, ...] = ()) -> None:
        for w in app.screen.query("DataTable, LinesView, Timeline, #stats-body"):
            if not w.display or (not w.is_on_screen and not isinstance(w, LinesView)):
                continue
            name = f"{screen_name} #{w.id}"
            top = "home" if w.id in exempt_top else "g"
            here = app.screen
            said = await answers_keys(pilot, w, name, top)
            if app.screen is not here:  # a key opened another screen instead of moving
                failures.append(f"{name}: a key opened {type(app.screen).__name__}")
                while app.screen is not here and len(app.screen_stack) > 1:
                    await app.pop_screen()
            if said == "short":
                continue
            checked.append(name)
            if said:
                failures.append(said)

    async with app.run_test(size=(80, 24)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.row_count >= 30, "the timeline's rows")
        await until(pilot, lambda: app.review_watch.count is not None, "the review count")
        app.clear_notifications()
        main = app.screen
        await walk("timeline")

        async def opened_and_drawn(key: str, kind: type[Screen[Any]]) -> None:
            await opened(pilot, key, kind)
            await settled(pilot, f"{kind.__name__} loaded and drawn")

        t.focus()
        await opened_and_drawn("t", TagsScreen)
        await walk("tags")
        await pilot.press("escape")
        t.focus()
        await opened_and_drawn("dollar_sign", ReadsScreen)
        for tab in "1234":
            await pilot.press(tab)
            await settled(pilot, f"the reads tab {tab} drawn")
            await walk(f"reads tab {tab}")
        await pilot.press("escape")
        t.focus()
        await opened_and_drawn("S", StatsScreen)
        await walk("stats")
        await pilot.press("escape")
        t.focus()
        await opened_and_drawn("H", HealthScreen)
        await until(
            pilot, lambda: app.screen.query_one("#findings", DataTable).row_count > 0, "findings"
        )
        await walk("health")
        await pilot.press("escape")
        t.focus()
        await opened_and_drawn("v", ReviewScreen)
        review = app.screen
        assert isinstance(review, ReviewScreen)
        await until(pilot, lambda: review.shown is not None, "the review's diff")
        await walk("review")
        review.query_one("#review-notes").focus()
        await opened_and_drawn("o", NoteScreen)
        await walk("note")
        await pilot.press("escape", "escape")
        await until(pilot, lambda: app.screen is main, "back on the timeline")
        t.focus()
        await opened_and_drawn("F", FeedbackScreen)
        fb = app.screen.query_one("#feedback-list", DataTable)
        await until(pilot, lambda: fb.row_count >= 30, "the feedback list")
        await walk("feedback")
    assert not failures, failures
    for must in (
        "timeline #timeline",
        "tags #tags",
        "review #review-notes",
        "stats #stats-body",
        "feedback #feedback-list",
    ):
        assert must in checked, (must, checked)
    assert any(c.startswith("reads") for c in checked), checked
    assert any(c.startswith("note") for c in checked), checked


async def test_a_note_the_owner_deleted_is_not_left_to_review(
    connect: Any, make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N6: a note with unreviewed AI changes that the owner deletes (`x`: plan_remove and
    apply_remove) leaves the review and the header's count, as a reverted change does; its diff
    was the owner's delete under the AI's headers."""
    from app.services.remove_action import apply_remove, plan_remove

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({"a.md": "# A\n\n## Log\n- one\n", "b.md": "# B\n\n## Log\n- one\n"})
    async with connect(root) as s:
        for p in ("a.md", "b.md"):
            await s.call("append_section", path=p, heading="Log", content="- two")
    apply_remove(root, plan_remove(root, "b.md"))
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.review_watch.count is not None, "the review count")
        assert app.review_watch.count == (1, 1), app.review_watch.count
        review = await opened(pilot, "v", ReviewScreen)
        await until(pilot, lambda: review.review is not None, "the review list")
        assert review.review is not None
        assert [n.path for n in review.review.notes] == ["a.md"]


async def test_an_undo_the_owner_blocked_is_refused_before_the_confirm(
    connect: Any, make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N14: the owner changed a line the AI wrote in the hunk: `u` says why the undo is refused
    and asks nothing (the confirm promised "your lines stay" and then the undo was refused)."""
    from app.ui.dialogs.modals import ConfirmModal

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({"a.md": "# A\n\n## Log\n- one\n"})
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Log", content="- two\n- three")
    text = (root / "a.md").read_text()
    (root / "a.md").write_text(text.replace("- two", "- two, as I meant it"))
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        review = await open_review(pilot)
        await until(pilot, lambda: review.shown is not None, "the diff")
        await pilot.press("u")
        status = review.query_one("#review-status")
        await until(
            pilot,
            lambda: isinstance(app.screen, ConfirmModal) or "refused" in str(status.render()),
            "the undo's answer",
        )
        assert not isinstance(app.screen, ConfirmModal), "asked to confirm an undo it refuses"
        assert "undo refused" in str(status.render())
        assert (root / "a.md").read_text() == text.replace("- two", "- two, as I meant it")


async def test_the_selected_row_stays_in_sight_while_ai_writes_arrive(
    connect: Any, make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N12: the owner reads a row near the bottom of the view at 80x24; ten AI writes arrive
    above it. The row stays selected and on screen (it scrolled out of sight with no cue)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({"w.md": "# W\n\n## Log\n- one\n"})
    async with connect(root) as s:
        for i in range(30):
            await s.call("append_section", path="w.md", heading="Log", content=f"- early {i}")
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.row_count >= 31, "the rows")
        t.focus()
        # focused and laid out (the dashboard polls every 0.1 s: its poll worker is always about)
        await until(
            pilot,
            lambda: t.has_focus and not unsettled(app, ignore=("poll",)),
            "the timeline focused and laid out",
            describe=lambda: (t.has_focus, unsettled(app, ignore=("poll",))),
        )
        visible = t.scrollable_content_region.height - 1
        t.move_to(visible - 1)  # the last row in sight
        assert t.cursor == visible - 1
        key = t.current.key if t.current else None
        assert t.scroll_y == 0
        async with connect(root) as s:
            for i in range(10):
                await s.call("append_section", path="w.md", heading="Log", content=f"- late {i}")
        await until(pilot, lambda: t.row_count >= 41, "the new rows")
        # the rows above drawn and the view scrolled with them (the checks below, awaited)
        await until(
            pilot,
            lambda: (
                t.current is not None
                and t.current.key == key
                and t.scroll_y <= t.cursor < t.scroll_y + visible
            ),
            "the selected row kept and in sight",
            describe=lambda: (t.current and t.current.key, key, t.cursor, t.scroll_y, visible),
        )
        assert t.current is not None and t.current.key == key
        assert t.scroll_y <= t.cursor < t.scroll_y + visible, (t.cursor, t.scroll_y, visible)
