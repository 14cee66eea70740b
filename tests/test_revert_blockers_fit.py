"""The revert-blocked dialog names who made each later commit and when before its path: on a
vault with long Chinese paths the path used to push `— AI, time` off the line, and whether a
ticked commit is the AI's or the owner's is what the tick decision depends on."""

from __future__ import annotations

from typing import Any

import pytest
from rich.cells import cell_len
from textual.widgets import Checkbox

from app.ui.dashboard import Dashboard
from app.ui.dialogs.revert_dialog import BlockerBox, BlockersModal

from .conftest import git, screen_is, until
from .desk import screen_text, select_commit

pytestmark = pytest.mark.anyio


async def boxes_laid_out(pilot: Any) -> None:
    """The blockers dialog is up and both its commits' boxes have their width (each draws its
    line for the width it has)."""
    screen = await screen_is(pilot, BlockersModal)

    def widths() -> list[int]:
        return [b.content_size.width for b in screen.query(BlockerBox)]

    await until(
        pilot,
        lambda: len(widths()) == 2 and all(widths()),
        "the blockers' boxes laid out",
        describe=widths,
    )
    await pilot.pause()  # and drawn at that width


LONG = "项目/二〇二六年/第四季度/很长很长的文件夹名字/会议记录与后续行动计划.md"


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_blockers_show_author_and_time_whole_and_cut_the_path(
    connect: Any, make_vault: Any, size: tuple[int, int]
) -> None:
    vault = make_vault({LONG: "# 会议\n\n## 行动\n- 一\n"})
    async with connect(vault) as s:
        target = await s.call("append_section", path=LONG, heading="行动", content="- AI 的一行")
        later = await s.call("edit_text", path=LONG, old="- AI 的一行", new="- AI 的一行，改过")
        note = vault / LONG
        note.write_text(note.read_text().replace("改过", "改过，我的话"))
        git(vault, "commit", "-qam", f"编辑 {LONG}")
    mine = git(vault, "rev-parse", "HEAD").strip()
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        await select_commit(pilot, app, target["commit"])
        await pilot.press("r")
        await boxes_laid_out(pilot)
        # each box as drawn at its width (the dialog scrolls: at 80x24 the second is below)
        lines = {b.id: b.render().plain for b in app.screen.query(BlockerBox)}
        assert lines["blocker-0"].strip() in screen_text(app)
        owner, ai = lines["blocker-0"], lines["blocker-1"]
        assert mine[:8] in owner and "you (Test Owner)," in owner, owner
        assert later["commit"][:8] in ai and "AI · " in ai, ai
        for box in app.screen.query(BlockerBox):
            assert cell_len(lines[box.id]) <= box.content_size.width  # nothing cropped after
        for line in (owner, ai):
            assert "…" in line, line  # the path gives way, cut in its middle
            # the time is whole: month-day hour:minute
            assert any(
                len(w) == 5 and w[2] == ":" and w.replace(":", "").isdigit() for w in line.split()
            ), line
        # the end of the note's path (its file name) stays at 120 columns
        if size[0] >= 120:
            assert "行动计划.md" in owner and "行动计划.md" in ai
        boxes = list(app.screen.query(Checkbox))
        assert [b.value for b in boxes] == [False, True]


async def test_an_unticked_commit_has_no_x(connect: Any, make_vault: Any) -> None:
    """N15: ticked and unticked boxes both drew an X, told apart only by its colour (151 against
    17 on 59): the owner's unticked commit read as ticked. Now the X is the tick."""
    vault = make_vault({LONG: "# 会议\n\n## 行动\n- 一\n"})
    async with connect(vault) as s:
        target = await s.call("append_section", path=LONG, heading="行动", content="- AI 的一行")
        await s.call("edit_text", path=LONG, old="- AI 的一行", new="- AI 的一行，改过")
        note = vault / LONG
        note.write_text(note.read_text().replace("改过", "改过，我的话"))
        git(vault, "commit", "-qam", f"编辑 {LONG}")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await select_commit(pilot, app, target["commit"])
        await pilot.press("r")
        await boxes_laid_out(pilot)
        boxes = {b.id: b for b in app.screen.query(BlockerBox)}
        mine, ai = boxes["blocker-0"], boxes["blocker-1"]
        assert not mine.value and ai.value
        assert "X" not in mine.render().plain[:3] and "X" in ai.render().plain[:3]
        mine.focus()
        await pilot.press("space")  # ticked by the owner: the X appears
        await until(pilot, lambda: mine.value)
        assert "X" in mine.render().plain[:3]
