"""The timeline, its dialogs and the header under Pilot, as the third audit read them (issue 33,
dashboard-audit-3 N11, N18, N19, N21, N22, N23, N26): each test failed before its fix."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.widgets._footer import FooterKey

from app.ui.dashboard import Dashboard
from app.ui.screens.insights import TagsScreen
from app.ui.screens.main_screen import DiffPane
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.timeline import Timeline

from .conftest import git

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- crdt\n",
            "w.md": "# W\n\n## Log\n- one\n",
        }
    )


async def until(
    pilot: Any, check: Callable[[], bool], timeout: float = 20, describe: Any = None
) -> None:
    """Wait for `check`; on timeout say what was seen (an event, not the clock)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            seen = f": saw {describe()!r}" if describe is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s{seen}")
        await pilot.pause(0.05)


def footer_keys(app: Dashboard) -> list[str]:
    return [k.key for k in app.screen.query(FooterKey) if "-command-palette" not in k.classes]


async def test_a_row_naming_more_files_says_files_not_a_line_count(vault: Path, home: Path) -> None:
    """N11: `w.md +1 +3 −2` read as three counts; the second file is now `+1 file`."""
    (vault / "a.md").write_text("# A\n")
    (vault / "w.md").write_text("# W\n\n## Log\n- one\n- two\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "two notes at once")
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(160, 40)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: any("two notes" in r.summary for r in t.rows))
        at = next(i for i, r in enumerate(t.rows) if "two notes" in r.summary)
        note = t.line_cells(at, t.scrollable_content_region.width)[3].plain
        assert "+1 file" in note, note


@pytest.mark.parametrize("size", [(120, 36), (200, 50)])
async def test_the_footer_shows_what_fits_by_priority(
    vault: Path, home: Path, size: tuple[int, int]
) -> None:
    """N18: at 120 and 200 columns the footer showed `⏎ / a h e r ? q` only."""
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: "v" in footer_keys(app), describe=lambda: footer_keys(app))
        keys = footer_keys(app)
        assert keys[:2] == ["enter", "slash"], keys
        assert keys[-2:] == ["question_mark", "q"], keys  # the app's own keys stay last
        for key in ("v", "t", "dollar_sign", "S", "H"):  # the most wanted screens first
            assert key in keys, (key, keys)
        if size[0] >= 200:
            assert {"c", "n", "m", "x"} <= set(keys), keys
        used = sum(k.size.width + 1 for k in app.screen.query(FooterKey))
        assert used <= size[0], (used, keys)


async def test_the_footer_at_80_columns_keeps_its_first_keys(vault: Path, home: Path) -> None:
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "q" in footer_keys(app), describe=lambda: footer_keys(app))
        keys = footer_keys(app)
        assert keys[:2] == ["enter", "slash"] and keys[-2:] == ["question_mark", "q"], keys
        assert sum(k.size.width + 1 for k in app.screen.query(FooterKey)) <= 80 + 1, keys


async def test_g_and_G_go_to_the_newest_and_oldest_row_and_t_opens_tags(
    connect: Any, vault: Path, home: Path
) -> None:
    """N18: `G` did nothing on the timeline; `g` (top in every list) opened Tags."""
    async with connect(vault) as s:
        for n in range(4):
            await s.call("append_section", path="w.md", heading="Log", content=f"- ai {n}")
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.row_count >= 5, describe=lambda: t.row_count)
        t.focus()
        await pilot.press("G")
        await until(pilot, lambda: t.cursor == t.row_count - 1, describe=lambda: t.cursor)
        await pilot.press("g")
        await until(pilot, lambda: t.cursor == 0, describe=lambda: (t.cursor, app.screen))
        assert not isinstance(app.screen, TagsScreen)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen), describe=lambda: app.screen)
        await pilot.press("t")
        await until(pilot, lambda: not isinstance(app.screen, TagsScreen))


async def test_the_header_at_80_columns_with_a_config_error_fits_and_keeps_v(
    connect: Any, vault: Path, home: Path
) -> None:
    """N23: ` vaultwatch  v ● serving  3 to review  recall: ready  config error (!` was cut at
    80 columns, and the review's `(v)` was the first thing dropped."""
    async with connect(vault) as s:
        for n in range(3):
            await s.call("append_section", path="w.md", heading="Log", content=f"- ai {n}")
    (vault / "vault.config.yaml").write_text("tags: [unclosed\n")
    journal = vault / ".git" / "vaultwatch" / "events.jsonl"
    event = {"v": 1, "ts": "2026-12-04T10:00:00.000Z", "kind": "semantic_progress"}
    # a server that runs (this test's process) says recall is ready
    line = json.dumps({**event, "pid": os.getpid(), "indexed": 3, "total": 3}) + "\n"
    with journal.open("a") as f:
        f.write(line)
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        header = app.query_one("#header", StatusHeader)

        def text() -> str:
            return str(header.render())

        await until(pilot, lambda: "config error" in text() and "review" in text(), describe=text)
        assert cell_len(text()) <= 80, text()
        assert "(v)" in text() and "(!" in text() and text().rstrip().endswith(")"), text()


@pytest.mark.parametrize("theme", ["ansi-light", "ansi-dark", "vaultwatch-light"])
async def test_added_and_removed_lines_are_readable_in_every_theme(
    connect: Any, vault: Path, home: Path, theme: str
) -> None:
    """N21: the built-in `ansi-light` drew added lines green on green (SGR 32 on 42)."""
    async with connect(vault) as s:
        res = await s.call("edit_text", path="w.md", old="- one", new="- added by the ai")
    app = Dashboard(vault, poll_seconds=60, theme=theme)
    async with app.run_test(size=(160, 40)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.index_of(f"c:{res['commit']}") is not None)
        t.move_to(t.index_of(f"c:{res['commit']}") or 0)
        pane = app.query_one(DiffPane)
        await until(
            pilot,
            lambda: any("added by the ai" in line.plain for line in pane.lines),
            describe=lambda: [x.plain for x in pane.lines],
        )
        await pilot.pause(0.1)
        seen = []
        for y in range(pane.size.height):
            for seg in pane.render_line(y):
                if seg.style is not None and ("added" in seg.text or "one" in seg.text):
                    seen.append((seg.text, str(seg.style.color), str(seg.style.bgcolor)))
                    assert seg.style.color != seg.style.bgcolor, seen[-1]
        assert any("added" in text for text, _, _ in seen), seen
