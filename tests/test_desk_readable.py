"""The review desk read at a glance: the selected timeline row in readable colours, and at 80
columns two different notes or clients never printed the same, on a vault of 30 Chinese notes
with shared prefixes written by two clients (issue 33, audit turn 3 N1 and N2)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import Implementation
from rich.color import Color
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.insights import TagsScreen
from app.ui.review_screen import ReviewScreen
from app.ui.timeline import Timeline, fit_line, widths
from server.protocol.tools import build_server
from server.vault import Vault

pytestmark = pytest.mark.anyio

NUMBERS = "一二三四五六七八九十"
CLIENTS = ("claude-code", "claude-desktop")


async def until(pilot: Any, check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def chinese_paths() -> list[str]:
    """30 notes whose names share their start and their end (`分布式系统设计笔记之三篇.md`):
    cut in the middle at 80 columns they all read `分布式系…篇.md`."""
    out = []
    for i in range(30):
        n = NUMBERS[i % 10] + ("" if i < 10 else "甲" if i < 20 else "乙")
        out.append(f"工作/分布式系统/分布式系统设计笔记之第{n}篇.md")
    return out


@pytest.fixture
def cn_vault(make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root: Path = make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- 分布式\n- 分布式系统\n- 分布式系统设计\n",
        }
    )

    async def writes() -> None:
        for k, client in enumerate(CLIENTS):
            vault = Vault(root)
            async with Client(
                build_server(vault), client_info=Implementation(name=client, version="1")
            ) as c:
                for path in chinese_paths()[k::2]:
                    stem = path.rpartition("/")[2].removesuffix(".md")
                    # the title is the file name again, as Chinese vaults name notes
                    body = f"# {stem}\n\n第一，先把问题定义清楚。\n"
                    await c.call_tool(
                        "create_doc", {"path": path, "body": body, "tags": ["分布式系统设计"]}
                    )
            vault.close()

    anyio.run(writes)
    return root


def luminance(c: Color) -> float:
    def lin(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = c.get_truecolor()
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def contrast(a: Color, b: Color) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


async def test_the_selected_ai_row_reads_in_every_theme_colour(cn_vault: Path) -> None:
    """N1: on the cursor's row every cell (kind, who, note, +/−) stands at 4.5:1 or more against
    the cursor's background; the kind and counts were 1.15-1.48:1."""
    app = Dashboard(cn_vault, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.current is not None and t.current.kind == "ai", "an AI row")
        await until(pilot, lambda: bool(t._counts), "the +/- counts")
        t.focus()
        await pilot.pause(0.1)
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


async def test_at_80_columns_no_two_notes_or_clients_print_the_same(cn_vault: Path) -> None:
    """N2: the timeline, the review list and the tags list at 80x24 give every note and client a
    label of its own; at 120 the review list drops the title that repeats the file name and
    shows the folder instead."""
    paths = chinese_paths()
    app = Dashboard(cn_vault, poll_seconds=60)
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
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review screen")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(pilot, lambda: screen.review is not None, "the review list")
        table = screen.query_one("#review-notes", DataTable)
        labels: dict[str, set[str]] = {}
        for i in range(table.row_count):
            cell = table.get_row_at(i)[0]
            label = str(cell).split("  ")[0]
            labels.setdefault(label, set()).add(
                str(table.coordinate_to_cell_key((i, 0)).row_key.value)
            )
        assert len(labels) == 30, labels
        assert all(len(v) == 1 for v in labels.values()), labels

        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ReviewScreen), "the timeline")
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen), "the tags screen")
        tags = app.screen.query_one("#tags", DataTable)
        shown = [str(tags.get_row_at(i)[0]) for i in range(tags.row_count)]
        assert len(set(shown)) == len(shown) == tags.row_count, shown
        await pilot.press("escape")

        await pilot.resize_terminal(120, 36)
        await until(pilot, lambda: app.size.width == 120, "the resize")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review screen")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(pilot, lambda: screen.review is not None, "the review list")
        table = screen.query_one("#review-notes", DataTable)
        await pilot.pause(0.2)
        heads = [str(c.label) for c in table.columns.values()]
        assert "title" not in heads, heads
        first = str(table.get_row_at(0)[0])
        assert "工作/" in first, f"the folder is dropped: {first!r}"


def _wide(ch: str) -> bool:
    from rich.cells import cell_len

    return cell_len(ch) == 2
