"""Revert from the dashboard under Pilot, with a real vault and AI commits from the real server:
reverted rows are marked and `r` on one says so, blockers come with author, time and diff and
the owner's are never reverted unless ticked, a git operation left half-way shows in the header
with a key to abort it, and what the owner does can be undone from the timeline."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Checkbox, Static

from app.ui.dashboard import Dashboard
from app.ui.dialogs.modals import ConfirmModal
from app.ui.dialogs.revert_dialog import BlockersModal
from app.ui.widgets.lines import LinesView
from app.ui.widgets.timeline import cells
from server.core.gitrepo import operation_in_progress

from .conftest import git, screen_is, until
from .desk import find, select_commit, timeline

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"w.md": "# W\n\n## Log\n- one\n"})


def said(app: Dashboard) -> str:
    return "\n".join(str(n.message) for n in app._notifications)


def clean(root: Path) -> bool:
    return operation_in_progress(root) is None and git(root, "status", "--porcelain") == ""


async def test_a_reverted_commit_is_marked_r_says_so_and_the_revert_can_be_undone(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    ai = res["commit"]
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        await select_commit(pilot, app, ai)
        await pilot.press("r")
        await screen_is(pilot, ConfirmModal)
        body = app.screen.query_one("#dialog-body", LinesView)
        await until(pilot, lambda: "The revert will change:" in body.plain)  # filled on mount
        assert "- ai line" in body.plain
        await pilot.press("y")
        revert_sha = ""

        def reverted() -> bool:
            nonlocal revert_sha
            row = timeline(app).rows[timeline(app).index_of(f"c:{ai}") or 0]
            revert_sha = row.reverted_by or ""
            return bool(revert_sha)

        await until(pilot, reverted)
        # the new revert is selected: the next key acts on what was just made
        await until(pilot, lambda: timeline(app).current.key == f"c:{revert_sha}")  # type: ignore[union-attr]
        row = timeline(app).rows[timeline(app).index_of(f"c:{ai}")]  # type: ignore[index]
        assert "↺ reverted" in "".join(c.plain for c in cells(row, row.time))
        await select_commit(pilot, app, ai)
        detail = app.main.query_one("#detail", LinesView)
        await until(pilot, lambda: f"reverted by {revert_sha[:8]}" in detail.plain)
        # r again: says so, asks nothing, changes nothing, leaves git clean
        head = git(vault, "rev-parse", "HEAD")
        await pilot.press("r")
        await until(pilot, lambda: f"already reverted by {revert_sha[:8]}" in said(app))
        assert not isinstance(app.screen, ConfirmModal)
        assert git(vault, "rev-parse", "HEAD") == head and clean(vault)
        # the revert itself is undone from the timeline: the AI's line comes back, the mark goes
        await select_commit(pilot, app, revert_sha)
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: "- ai line" in (vault / "w.md").read_text())
        await until(
            pilot,
            lambda: timeline(app).rows[timeline(app).index_of(f"c:{ai}") or 0].reverted_by is None,
        )
    assert clean(vault)


async def test_r_on_a_row_it_cannot_revert_says_why(vault: Path) -> None:
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        imported = git(vault, "rev-parse", "HEAD").strip()
        await select_commit(pilot, app, imported)
        await pilot.press("r")
        await until(pilot, lambda: "is your own edit" in said(app))
        assert not isinstance(app.screen, ConfirmModal)


async def test_blockers_show_who_when_and_the_diff_and_the_owners_stay_unticked(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        target = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        ai_on_it = await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, v2")
        (vault / "w.md").write_text((vault / "w.md").read_text().replace("v2", "v2 and mine"))
        git(vault, "commit", "-qam", "my words on that line")
    mine = git(vault, "rev-parse", "HEAD").strip()
    mine_subject = "my words on that line"
    before = (vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 44)) as pilot:
        await select_commit(pilot, app, target["commit"])
        await pilot.press("r")
        await screen_is(pilot, BlockersModal)
        boxes = list(app.screen.query(Checkbox))
        labels = [str(b.label) for b in boxes]
        assert labels[0].startswith(mine[:8]) and "you (Test Owner)" in labels[0]
        assert labels[1].startswith(ai_on_it["commit"][:8]) and "AI · " in labels[1]
        assert [b.value for b in boxes] == [False, True]  # the owner's edit: not ticked
        diffs = " ".join(str(w.render()) for w in app.screen.query(".blocker-diff"))
        assert "v2 and mine" in diffs
        # the AI's alone cannot go (the owner's line is in the way): the dialog says so before
        # `y`, names the owner's commit, and does not offer the revert (audit 3 N15)
        dialog = app.screen
        assert isinstance(dialog, BlockersModal)
        warning = dialog.query_one("#ticks-fail", Static)
        await until(pilot, lambda: "cannot apply" in str(warning.render()))
        assert f"{mine[:8]} (yours)" in str(warning.render())
        assert dialog.query_one("#yes", Button).disabled
        await pilot.press("y")
        # y is answered with the reason, and the dialog stays
        await until(
            pilot, lambda: dialog.why_not in said(app), "y answered", describe=lambda: said(app)
        )
        assert app.screen is dialog
        assert ((vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")) == before
        assert clean(vault)
        # ticked by the owner, all three go as one revert
        await pilot.press("space")  # the owner's box has the focus
        await until(pilot, lambda: not dialog.query_one("#yes", Button).disabled)
        await pilot.press("y")
        # the file is in place a moment before its commit lands: wait for the commit
        await until(pilot, lambda: git(vault, "log", "-1", "--format=%s").strip() != mine_subject)
        assert (vault / "w.md").read_text() == "# W\n\n## Log\n- one\n"
    assert git(vault, "log", "-1", "--format=%s").strip() == "Revert 3 commits" and clean(vault)


async def test_a_git_operation_in_progress_shows_in_the_header_and_A_aborts_it(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        first = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, edited")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        header = app.main.query_one("#header", Static)
        await until(pilot, lambda: bool(timeline(app).rows))
        assert "git mid-" not in str(header.render())
        # the owner's own `git revert` in a terminal stops on a conflict
        git_revert = ["revert", "--no-edit", first["commit"]]
        subprocess.run(["git", "-C", str(vault), *git_revert], capture_output=True)
        assert operation_in_progress(vault) is not None
        # whole, key included, even at 80 columns
        await until(
            pilot, lambda: "git mid-revert: AI writes refused · A aborts" in str(header.render())
        )
        await pilot.press("r")  # a revert now is refused at once, and says why
        await until(pilot, lambda: "middle of a revert" in said(app))
        # said to the owner, with their way out (not the model's "tell the owner")
        assert "A in the dashboard" in said(app) and "owner" not in said(app), said(app)
        assert not isinstance(app.screen, ConfirmModal)
        await pilot.press("A")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: "git mid-" not in str(header.render()))
        assert "aborted a revert" in said(app)
    assert clean(vault)


async def test_r_right_after_an_owner_action_undoes_it_and_r_again_redoes_it(
    make_vault: Any,
) -> None:
    root = make_vault({"inbox/mock.md": "# Mock\n", "index.md": "- [[mock]]\n"})
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await find(pilot, "x", "inbox mock")
        await screen_is(pilot, ConfirmModal)
        await pilot.press("y")
        # the commit the delete made is selected: r acts on it, no cursor moves needed
        await until(pilot, lambda: getattr(timeline(app).current, "kind", "") == "remove")
        await pilot.press("r")
        await screen_is(pilot, ConfirmModal)
        await pilot.press("y")
        await until(pilot, lambda: (root / "inbox/mock.md").exists())
        await until(pilot, lambda: getattr(timeline(app).current, "kind", "") == "revert")
        await pilot.press("r")  # and the undo is undone the same way
        await screen_is(pilot, ConfirmModal)
        await pilot.press("y")
        # gone from disk a moment before the commit lands: wait for the commit too
        await until(pilot, lambda: not (root / "inbox/mock.md").exists() and clean(root))
    assert clean(root) and not (root / "inbox").exists()
