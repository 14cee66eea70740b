"""The timeline, its dialogs and the header under Pilot, as the third audit read them (issue 33,
dashboard-audit-3 N11, N18, N19, N21, N22, N23, N26): each test failed before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.command import CommandPalette
from textual.widgets import Input, OptionList, Select, Static
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast

from app.main import _demo_app
from app.services.supervisor import ServerSupervisor
from app.ui.dashboard import Dashboard
from app.ui.dialogs.file_dialogs import DestinationPrompt, FileFinder, NewNoteForm
from app.ui.dialogs.modals import ConfirmModal, ConnectModal
from app.ui.dialogs.revert_dialog import BlockersModal
from app.ui.screens.insights import TagsScreen
from app.ui.screens.main_screen import DiffPane
from app.ui.screens.review_screen import ReviewScreen
from app.ui.widgets.header import StatusHeader
from app.ui.widgets.timeline import Timeline
from server.notes.bundled import make_demo_vault

from .conftest import git, screen_is, until
from .desk import screen_text
from .settling import settled

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- crdt\n",
            "w.md": "# W\n\n## Log\n- one\n",
        }
    )


def footer_keys(app: Dashboard) -> list[str]:
    return [k.key for k in app.screen.query(FooterKey) if "-command-palette" not in k.classes]


async def test_a_row_naming_more_files_says_files_not_a_line_count(vault: Path) -> None:
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
async def test_the_footer_shows_what_fits_by_priority(vault: Path, size: tuple[int, int]) -> None:
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


async def test_the_footer_at_80_columns_keeps_its_first_keys(vault: Path) -> None:
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "q" in footer_keys(app), describe=lambda: footer_keys(app))
        keys = footer_keys(app)
        assert keys[:2] == ["enter", "slash"] and keys[-2:] == ["question_mark", "q"], keys
        assert sum(k.size.width + 1 for k in app.screen.query(FooterKey)) <= 80 + 1, keys


async def test_g_and_G_go_to_the_newest_and_oldest_row_and_t_opens_tags(
    connect: Any, vault: Path
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
    connect: Any, vault: Path
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
    connect: Any, vault: Path, theme: str
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

        def drawn() -> list[str]:
            return [seg.text for y in range(pane.size.height) for seg in pane.render_line(y)]

        await until(
            pilot,
            lambda: any("added" in text for text in drawn()),
            "the added line drawn in the pane",
            describe=drawn,
        )
        seen = []
        for y in range(pane.size.height):
            for seg in pane.render_line(y):
                if seg.style is not None and ("added" in seg.text or "one" in seg.text):
                    seen.append((seg.text, str(seg.style.color), str(seg.style.bgcolor)))
                    assert seg.style.color != seg.style.bgcolor, seen[-1]
        assert any("added" in text for text, _, _ in seen), seen


WEEKLY = """types:
  session:
    folder: sessions
    filename: "{date}-{slug}.md"
    required: [date, kind]
    dates: [date]
  周报:
    folder: 每周
    filename: "{year}-W{week}.md"
    required: [week, start]
    dates: [start]
"""


async def test_new_note_keeps_the_title_across_types_and_takes_week_from_start(
    make_vault: Any,
) -> None:
    """N19: changing the doc type cleared the title typed; `周报` asked for `week` although its
    path `每周/2026-W49.md` was computed from `start` already."""
    root = make_vault({"vault.config.yaml": WEEKLY, "a.md": "# A\n"})
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NewNoteForm), describe=lambda: app.screen)
        form = app.screen
        assert isinstance(form, NewNoteForm)
        await until(pilot, lambda: bool(form.query("#f-title")))
        form.query_one("#f-title", Input).value = "第49周"
        form.query_one("#type", Select).value = "周报"
        await until(pilot, lambda: form.built == "周报", describe=lambda: form.built)
        await until(pilot, lambda: bool(form.query("#f-title")))
        assert form.query_one("#f-title", Input).value == "第49周"
        form.field("start").value = "2026-12-02"
        await until(
            pilot,
            lambda: "2026-W49" in getattr(form.field("week"), "placeholder", ""),
            "the week worked out from the start date",
            describe=lambda: form.field("week"),
        )
        week = form.field("week")
        assert isinstance(week, Input) and "2026-W49" in week.placeholder, week
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: (root / "每周/2026-W49.md").exists(),
            describe=lambda: (app.screen, str(app.screen.query("#form-error").first().render())),
        )
    text = (root / "每周/2026-W49.md").read_text()
    assert "week: 2026-W49" in text and "start: 2026-12-02" in text and "# 第49周" in text, text


async def test_the_move_finder_offers_the_rows_note_first_and_keeps_its_hint_at_80x24(
    connect: Any, make_vault: Any
) -> None:
    """N22: with an empty query the list began `CLAUDE.md`, `tags.yaml`, `vault.config.yaml`,
    not the selected row's note, and at 80x24 the hint line fell below the dialog."""
    files = {
        "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
        "tags.yaml": "- crdt\n",
        "CLAUDE.md": "# Rules\n",
    }
    files |= {f"notes/n{i:02d}.md": f"# N{i}\n" for i in range(30)}
    files["zz/读书笔记.md"] = "# 读书笔记\n\n## Log\n- one\n"
    root = make_vault(files)
    async with connect(root) as s:
        res = await s.call("append_section", path="zz/读书笔记.md", heading="Log", content="- ai")
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.index_of(f"c:{res['commit']}") is not None)
        t.move_to(t.index_of(f"c:{res['commit']}") or 0)
        t.focus()
        await pilot.press("m")
        finder = await screen_is(pilot, FileFinder)
        matches = finder.query_one("#matches", OptionList)
        await until(pilot, lambda: matches.option_count > 0)
        # laid out with its options (a settled() would wait on the move's worker, which waits
        # on this very dialog)
        await pilot.pause()
        order = [str(matches.get_option_at_index(i).id) for i in range(matches.option_count)]
        assert order[0] == "zz/读书笔记.md" and matches.highlighted is None, order[:5]
        files_only = [p for p in order if not p.endswith("/")]
        assert files_only[-3:] == ["CLAUDE.md", "tags.yaml", "vault.config.yaml"], files_only
        hint = next(w for w in finder.query(Static) if "enter picks" in str(w.render()))
        dialog = finder.query_one("#dialog")
        assert dialog.region.contains_region(hint.region), (hint.region, dialog.region)
        assert hint.region.bottom <= 24, hint.region
        await pilot.press("down", "enter")  # the row's note, without typing its path
        await until(pilot, lambda: isinstance(app.screen, DestinationPrompt))
        prompt = app.screen
        assert isinstance(prompt, DestinationPrompt) and prompt.source == "zz/读书笔记.md"


@pytest.mark.slow
async def test_the_demo_narrates_without_covering_the_diff_and_says_its_port_is_for_now(
    tmp_path: Path,
) -> None:
    """N26: the scripted assistant's toasts covered half the diff at 80x24, and Connect said
    the port "is kept for this vault across launches" though every demo is a new vault."""
    root = make_demo_vault(tmp_path / "vaultwatch-demo-t" / "vault")
    sup = ServerSupervisor(root)
    sup.start()
    app = _demo_app()(root, supervisor=sup, poll_seconds=0.2)
    covered: list[str] = []
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            t = app.query_one("#timeline", Timeline)
            pane = app.query_one(DiffPane)

            def finished() -> bool:
                for toast in app.screen.query(Toast):
                    if toast.region.overlaps(pane.region) and "finished" not in str(toast.render()):
                        covered.append(str(toast.render()))
                return "finished" in str(t.border_subtitle)

            await until(pilot, lambda: "assistant:" in str(t.border_subtitle), timeout=60)
            await until(pilot, finished, timeout=120, describe=lambda: str(t.border_subtitle))
            assert not covered, covered
            await pilot.press("c")
            await until(pilot, lambda: isinstance(app.screen, ConnectModal))
            said = " ".join(str(s.render()) for s in app.screen.query(Static))
            assert "across launches" not in said and "serves this demo only" in said, said
    finally:
        sup.stop(end_resident=True)


async def test_the_palette_takes_typed_text_after_conflict_delete_and_a_refused_undo(
    connect: Any, make_vault: Any
) -> None:
    """N29 (seen once by the audit, not again in two tries): after a revert-conflict dialog, a
    delete, the review screen with an undo refusal, then `esc` `esc` `ctrl+p`, the command
    palette took no typed text. Walked here key by key; the palette must take the text."""
    root = make_vault({"w.md": "# W\n\n## Log\n- one\n- three\n", "d.md": "# D\n"})
    async with connect(root) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        await s.call("edit_text", path="w.md", old="- one", new="- one, by AI")
    (root / "w.md").write_text((root / "w.md").read_text().replace("- ai four", "- ai four, mine"))
    git(root, "commit", "-qam", "my fix of the AI's line")
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.index_of(f"c:{ai['commit']}") is not None)
        t.move_to(t.index_of(f"c:{ai['commit']}") or 0)
        t.focus()
        await pilot.press("r")
        await until(
            pilot, lambda: isinstance(app.screen, BlockersModal), describe=lambda: app.screen
        )
        await pilot.press("escape")
        await until(pilot, lambda: len(app.screen_stack) == 1, describe=lambda: app.screen_stack)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, FileFinder))
        await pilot.press(*"d.md", "enter")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmModal), describe=lambda: app.screen
        )
        await pilot.press("y")
        await until(pilot, lambda: not (root / "d.md").exists())
        await until(pilot, lambda: len(app.screen_stack) == 1, describe=lambda: app.screen_stack)
        await pilot.press("v")
        await until(
            pilot, lambda: isinstance(app.screen, ReviewScreen), describe=lambda: app.screen
        )
        await until(pilot, lambda: "w.md" in screen_text(app), describe=lambda: screen_text(app))
        await pilot.press("u")
        await until(
            pilot, lambda: "undo refused" in screen_text(app), describe=lambda: screen_text(app)
        )
        await pilot.press("escape", "escape", "ctrl+p")
        await until(
            pilot, lambda: isinstance(app.screen, CommandPalette), describe=lambda: app.screen
        )
        await pilot.press(*"tags")
        box = app.screen.query_one(Input)
        await until(pilot, lambda: box.value == "tags", describe=lambda: box.value)


async def test_the_filter_box_takes_one_line_at_80x24(vault: Path) -> None:
    """Audit turn 2 #30, still open: at 80x24 the `/` box took 3 rows and left the timeline 4."""
    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.row_count > 0 and app.screen.has_class("-narrow"))
        await settled(pilot, ignore=("poll",))  # laid out as narrow
        before = t.scrollable_content_region.height
        await pilot.press("slash")
        box = app.query_one("#filter", Input)
        await until(pilot, lambda: box.has_focus and box.region.height > 0)
        await pilot.pause()  # the timeline laid out beside it in the same pass; drawn
        after = t.scrollable_content_region.height
        assert box.region.height == 1 and before - after <= 1, (box.region, before, after)
        await pilot.press(*"w.md")
        assert box.value == "w.md"
