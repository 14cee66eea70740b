"""The library health screen (`H`) under Pilot on a real vault: findings grouped with counts, open
at the link's line, ignore and bring back, move and delete through the owner's flows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.widgets import DataTable, Static

from app.ui.dashboard import Dashboard
from app.ui.dialogs.file_dialogs import DestinationPrompt
from app.ui.dialogs.modals import ConfirmModal
from app.ui.screens.health_screen import HealthScreen, NoteModal
from app.ui.widgets.cells import cut_middle, note_label
from app.ui.widgets.lines import LinesView
from server.vault import Vault

from .conftest import git, until, workers_done
from .desk import screen_text
from .health_vault import FILES, LATER, embed, open_health, select

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return make_vault(FILES)


def table_text(screen: HealthScreen) -> str:
    t = screen.query_one("#findings", DataTable)
    return "\n".join(
        " ".join(str(getattr(c, "plain", c)) for c in t.get_row_at(i)) for i in range(t.row_count)
    )


def make_app(vault: Path) -> Dashboard:
    app = Dashboard(vault, poll_seconds=0.1)
    app.today = LATER
    return app


async def test_the_screen_groups_findings_and_never_shows_private_notes(vault: Path) -> None:
    app = make_app(vault)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        text = table_text(screen)
        for heading in (
            "Problems under the config (1)",
            "Broken links (6)",
            "Orphans (1)",
            "Stale open items (1)",
            "Too big to read in one call (1)",
        ):
            assert heading in text
        assert "salary" not in text and "private" not in text
        title = screen.query_one("#health-title", Static).render()
        assert "10 findings" in str(title)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HealthScreen))


async def test_open_shows_the_note_at_the_broken_links_line(vault: Path) -> None:
    app = make_app(vault)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        await select(pilot, screen, "broken_link:notes/a.md:[[ghost\\|alias]]")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, NoteModal))
        modal = app.screen
        assert isinstance(modal, NoteModal) and modal.at == 9
        view = modal.query_one("#dialog-body", LinesView)
        assert "9 | x | [[ghost\\|alias]] |" in view.plain
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)


async def test_ignore_and_bring_back(vault: Path) -> None:
    app = make_app(vault)
    orphan = "orphan:notes/lonely.md"
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        await select(pilot, screen, orphan)
        await pilot.press("i")
        await until(pilot, lambda: orphan in screen.ignored)
        await until(pilot, lambda: "Orphans" not in table_text(screen))
        saved = json.loads((vault / ".git/vaultwatch/health-ignore.json").read_text())
        assert list(saved["ignored"]) == [orphan]
        assert "1 ignored (a shows them)" in str(screen.query_one("#health-title", Static).render())

        await pilot.press("a")  # ignored ones shown, marked
        await until(pilot, lambda: "lonely.md  notes/ ignored · no links" in table_text(screen))
        await select(pilot, screen, orphan)
        await pilot.press("i")
        await until(pilot, lambda: orphan not in screen.ignored)
    saved = json.loads((vault / ".git/vaultwatch/health-ignore.json").read_text())
    assert saved["ignored"] == {}
    assert git(vault, "status", "--porcelain") == ""  # ignoring changes no note


async def test_move_an_orphan_through_the_owner_flow(vault: Path) -> None:
    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        await select(pilot, screen, "orphan:notes/lonely.md")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, DestinationPrompt))
        await pilot.press("ctrl+u", *"archive/lonely.md", "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        preview = app.screen.query_one("#dialog-body", LinesView).plain
        assert "notes/lonely.md  →  archive/lonely.md" in preview
        await pilot.press("y")
        await until(pilot, lambda: app.screen is screen)
        await until(pilot, lambda: "archive/lonely.md" in json.dumps(screen.data()))
        await until(pilot, lambda: "notes/lonely.md" not in json.dumps(screen.data()))
    assert (vault / "archive/lonely.md").exists() and not (vault / "notes/lonely.md").exists()
    assert "Vaultwatch-Action: move" in git(vault, "log", "-1", "--format=%B")


async def test_delete_a_note_through_the_owner_flow(vault: Path) -> None:
    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        await select(pilot, screen, "too_big:big.md")
        assert screen.check_action("delete", ()) is None  # too big: delete is not offered for it
        await pilot.press("x")
        await pilot.pause()  # the key handled: it started no delete
        assert app.screen is screen
        assert not [w for w in app.workers if w.group == "health-files"]
        await select(pilot, screen, "orphan:notes/lonely.md")
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: "orphan:notes/lonely.md" not in screen.by_id)
    assert not (vault / "notes/lonely.md").exists()
    assert "Vaultwatch-Action: remove" in git(vault, "log", "-1", "--format=%B")


def test_paths_are_shortened_in_cells_never_to_nothing() -> None:
    name = "非常长的项目名称-离线同步与冲突解决方案的设计评审记录-第三版.md"
    short = cut_middle(name, 20)
    from rich.cells import cell_len

    assert cell_len(short) <= 20 and short.endswith("第三版.md") and "…" in short
    assert cut_middle("a.md", 20) == "a.md"
    assert cut_middle(name, 1) == "…"
    cell = note_label("项目/二零二六年度/" + name, 30)
    assert cell.cell_length <= 30 and cell.plain.startswith("非常")


def _title(screen: HealthScreen) -> str:
    return str(screen.query_one("#health-title", Static).render())


async def test_the_other_findings_show_before_the_near_duplicates_are_compared(
    vault: Path,
) -> None:
    """The screen shows every finding but the near-duplicates as soon as they are found, and
    says it is still comparing; the whole report then takes their place, the title without it."""
    from textual.app import App

    from server.services.health_findings import Report

    shown: list[tuple[str, str, Report]] = []

    class Watched(HealthScreen):
        def _show_partial(self, report: Report) -> None:
            super()._show_partial(report)
            shown.append(("partial", _title(self) + "\n" + table_text(self), report))

        def _show(self, report: Report) -> None:
            super()._show(report)
            shown.append(("whole", _title(self) + "\n" + table_text(self), report))

    class Host(App[None]):
        """A bare app that hands the screen a Vault as the dashboard does (app.ui.navigation)."""

        def vault(self) -> Vault:
            return opened

    opened = Vault(vault)

    app = Host()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = Watched(vault, today=LATER)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.report is not None, "the health check")
        await workers_done(app)
        assert [k for k, _, _ in shown] == ["partial", "whole"]
        (_, first, partial), (_, whole, report) = shown
        assert "looking for near-duplicates…" in first
        assert "looking for" not in whole and "looking for" not in _title(screen)
        opened.close()
        for heading in ("Broken links (6)", "Orphans (1)", "Stale open items (1)"):
            assert heading in first and heading in whole
        assert not partial.duplicates_checked and not partial.by_kind("duplicate")
        assert [f.id for f in partial.findings] == [
            f.id for f in report.findings if f.kind != "duplicate"
        ]
        assert "private" not in first and "private" not in whole


async def test_near_duplicates_not_listed_are_counted_on_the_screen(vault: Path) -> None:
    """More pairs than are listed: the group says how many there are in all, and the warning
    how many are not listed (nothing left out unsaid)."""
    from server.services.health_findings import Finding

    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        report = screen.report
        assert report is not None
        pairs = [
            Finding("duplicate", "notes/a.md", "alike", other="notes/b.md", score=0.99),
            Finding("duplicate", "notes/c.md", "alike", other="notes/d.md", score=0.98),
        ]
        report.findings = [*report.findings, *pairs]
        report.duplicates_unlisted = 331_337
        report.warnings = [
            "near-duplicates: 331,337 more pairs at or above 0.85 not listed (the closest 2 are)"
        ]
        screen._show(report)
        await pilot.pause()
        assert "Near-duplicates (2 of 331,339)" in table_text(screen)
        warned = str(screen.query_one("#health-warnings", Static).render())
        assert "331,337 more pairs at or above 0.85 not listed" in warned


async def test_the_cursor_goes_to_the_first_finding_when_near_duplicates_come_unless_moved(
    vault: Path,
) -> None:
    """Near-duplicates come after the rest and are listed above some of it: a cursor the owner
    has not moved goes to the first finding of the whole list; one the owner moved stays on
    its finding."""
    from server.services.health_findings import Finding, Report

    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        whole = screen.report
        assert whole is not None
        later = [f for f in whole.findings if f.kind in ("stale", "too_big")]
        assert len(later) == 2
        pair = Finding("duplicate", "notes/a.md", "alike", other="notes/b.md", score=0.99)

        def rest() -> Report:
            return Report(notes=whole.notes, findings=list(later), ignored=[])

        def full() -> Report:
            return Report(notes=whole.notes, findings=[pair, *later], ignored=[])

        screen._show_partial(rest())
        await pilot.pause()
        assert screen.selected() == later[0]
        screen._show(full())
        await pilot.pause()
        assert screen.selected() == pair  # the first finding, not where the rest put it

        screen._show_partial(rest())
        await pilot.pause()
        await pilot.press("j")  # the owner moves to the second finding
        await until(pilot, lambda: screen.selected() == later[1], "the cursor on the second")
        screen._show(full())
        await pilot.pause()
        assert screen.selected() == later[1]


async def test_a_note_in_the_wrong_folder_is_moved_from_its_problem(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding says 'put it under tasks/'; `m` on it said 'move is not offered'."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({**FILES, "notes/misplaced.md": "---\ntype: task\nstatus: done\n---\n# M\n"})
    app = make_app(root)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        problem = next(
            f
            for f in screen.by_id.values()
            if f.path == "notes/misplaced.md" and f.kind == "problem"
        )
        assert problem.code == "wrong_folder" and "move" in problem.actions
        await select(pilot, screen, problem.id)
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, DestinationPrompt))
        await pilot.press("ctrl+u", *"tasks/misplaced.md", "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: problem.id not in screen.by_id and screen.partial is None)
    assert (root / "tasks/misplaced.md").exists()


async def test_the_footer_dims_what_the_finding_does_not_offer(vault: Path) -> None:
    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        await select(pilot, screen, "too_big:big.md")
        assert screen.check_action("delete", ()) is None  # shown dimmed, not run
        assert screen.check_action("move", ()) is True
        await select(pilot, screen, "orphan:notes/lonely.md")
        assert screen.check_action("delete", ()) is True


async def test_home_end_and_the_group_keys(vault: Path) -> None:
    """End did nothing (only ctrl+End, which lands on a row of nothing); with hundreds of
    near-duplicates the groups below were a long way down."""
    app = make_app(vault)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        t = screen.query_one("#findings", DataTable)
        keys = [str(k.value) for k in t.rows]
        findings = [k for k in keys if k in screen.by_id]
        heads = [i for i, k in enumerate(keys) if k.startswith("group:")]
        await pilot.press("end")
        assert screen.selected() is not None and screen.selected().id == findings[-1]  # type: ignore[union-attr]
        await pilot.press("home")
        assert screen.selected() is not None and screen.selected().id == findings[0]  # type: ignore[union-attr]
        for head in heads[1:]:
            await pilot.press("]")
            assert t.cursor_row == head + 1, (keys, t.cursor_row)
        await pilot.press("[")
        assert t.cursor_row == heads[-2] + 1
        await pilot.press("G", "g")
        assert screen.selected() is not None and screen.selected().id == findings[0]  # type: ignore[union-attr]


async def test_after_a_move_the_cursor_stays_where_the_finding_was(vault: Path) -> None:
    """It went back to the first problem, at the top of the list."""
    app = make_app(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        t = screen.query_one("#findings", DataTable)
        await select(pilot, screen, "orphan:notes/lonely.md")
        row = t.cursor_row
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, DestinationPrompt))
        await pilot.press("ctrl+u", *"tasks/sub/lonely.md", "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: app.screen is screen and screen.report is not None)
        await until(
            pilot,
            lambda: "orphan:notes/lonely.md" not in screen.by_id and screen.partial is None,
            "the whole re-check shown",
        )
        keys = [str(k.value) for k in t.rows]
        rows = [i for i, k in enumerate(keys) if k in screen.by_id]
        assert t.cursor_row == next(i for i in rows if i >= row), (keys, row, t.cursor_row)


async def test_deleting_one_of_a_near_duplicate_pair_lists_both(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The picker was filled with the second path, so only that one was listed."""
    monkeypatch.delenv("VAULTWATCH_SEMANTIC", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    from app.ui.dialogs.file_dialogs import FileFinder

    same = "# Offline sync\n\nOffline sync merges every replica's edits with a causal clock.\n"
    root = make_vault(
        {
            "vault.config.yaml": "semantic: {model: hash-ngrams}\n",
            "a.md": same + "[[b]]\n",
            "b.md": same.replace("# Offline sync", "# Offline sync, again") + "[[a]]\n",
        }
    )
    from server.vault import Vault

    v = Vault(root)
    try:
        embed(v)
    finally:
        v.close()
    app = make_app(root)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        await until(pilot, lambda: screen.partial is None and screen.report is not None)
        pair = next(f for f in screen.by_id.values() if f.kind == "duplicate")
        await select(pilot, screen, pair.id)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, FileFinder))
        from textual.widgets import OptionList

        listed = app.screen.query_one("#matches", OptionList)
        assert listed.option_count == 2
        await pilot.press("escape")


# -- audit 3: N7, N28 -------------------------------------------------------------------------------


def marked_line_in_view(modal: NoteModal) -> bool:
    view = modal.query_one("#dialog-body", LinesView)
    assert modal.at is not None
    row = view._starts[modal.at - 1]
    return view.scroll_y <= row < view.scroll_y + view.scrollable_content_region.height


async def test_open_keeps_the_findings_line_in_view_at_80x24(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N7: in the demo (`H`, the broken link, `o`) at 80x24 the note opened at line 1 with line
    21 marked off screen; a terminal made smaller with the note open left it below the fold."""
    from server.notes.bundled import make_demo_vault

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_demo_vault(tmp_path / "demo")
    app = Dashboard(root, poll_seconds=60)
    link = "applications/northwind-labs-backend-engineer.md"
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        [finding] = [f for f in screen.shown_findings() if f.path == link]
        await select(pilot, screen, finding.id)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, NoteModal))
        modal = app.screen
        assert isinstance(modal, NoteModal) and modal.at == 21
        await until(pilot, lambda: marked_line_in_view(modal))
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: app.size == (80, 24))
        await until(
            pilot,
            lambda: marked_line_in_view(modal),
            describe=lambda: modal.query_one("#dialog-body", LinesView).scroll_y,
        )
        assert "21 They care about exactly-once effects" in screen_text(app)
        view = modal.query_one("#dialog-body", LinesView)
        await pilot.press("g")  # the owner's scroll is the owner's: a resize keeps it
        await until(pilot, lambda: view.scroll_y == 0)
        before = view.size
        await pilot.resize_terminal(80, 23)
        await until(pilot, lambda: view.size != before, "the note laid out again at 80x23")
        await pilot.pause()  # what the resize asked for after the refresh has run
        assert view.scroll_y == 0


async def test_the_open_notes_title_keeps_its_line_number_whole(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N28: at 80 columns a long Chinese path's title wrapped inside its line number
    (`…技术文档写作.md:1` over `9`): the path wraps by cell_wrap's rule, `md:19` stays whole."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # 64 cells of path: at 80 columns the title's row (66 cells) ends inside `:19`
    path = "写作与表达/分布式系统设计/团队知识库/关于怎样写好技术文档写作.md"
    assert cell_len(path) == 64
    body = "".join(f"第{i}行\n" for i in range(1, 19)) + "见 [[不存在的笔记]]\n"
    root = make_vault({path: body})
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_health(pilot)
        [finding] = [f for f in screen.shown_findings() if f.kind == "broken_link"]
        await select(pilot, screen, finding.id)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, NoteModal))
        modal = app.screen
        assert isinstance(modal, NoteModal) and modal.at == 19
        title = modal.query_one("#dialog-title")
        await until(pilot, lambda: title.content_region.height > 0, "the dialog laid out")
        await pilot.pause()
        r = title.content_region
        strips = app.screen._compositor.render_strips()[r.y : r.bottom]
        rows = [strip.crop(r.x, r.right).text.strip() for strip in strips]  # by cells
        assert len(rows) == 2, rows
        assert any("md:19" in row for row in rows), rows
        assert "".join(rows) == f"{path}:19", rows
