"""The owner's feedback on the dashboard, under Pilot on real vaults: `c` in review comments on
the selected hunk (its lines, the AI commit that wrote them), `c` in the note view on the note;
both show the note's feedback; `F` lists it with the answering diff, `x` closes, `r` reopens;
the header counts open and answered. What is saved is read back from git, and the AI's side
through the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.services.feedback import add_feedback, list_feedback
from app.ui.dialogs.comment import CommentModal
from app.ui.screens.feedback_screen import FeedbackScreen
from app.ui.screens.note_screen import NoteScreen
from app.ui.screens.review_screen import ReviewDiff

from .conftest import until
from .desk import screen_text
from .review_desk import W, app_on, header, open_review, shown

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any, settings_dir: Path) -> Path:
    return make_vault({"w.md": W, "a.md": "# A\n\n## Log\n"})


async def type_comment(pilot: Any, text: str) -> None:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, CommentModal))
    for ch in text:
        await pilot.press("space" if ch == " " else ch)
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, CommentModal))


async def test_c_in_review_comments_on_the_selected_hunk(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_review(pilot)
        await shown(pilot, "w.md")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CommentModal))
        assert "hunk 1 of w.md" in screen_text(app) and "- ai four" in screen_text(app)
        await type_comment(pilot, "say why")
        await until(pilot, lambda: "saved: the AI sees it in get_context" in screen_text(app))
        (item,) = list_feedback(vault)
        assert item.path == "w.md" and item.text == "say why"
        assert item.commit == ai["commit"]  # the AI commit that wrote the hunk's lines
        assert item.lines == "7"  # the AI's line in the note now
        assert "+- ai four" in item.quote
        # the diff shows it above the hunks, the header counts it
        await until(
            pilot, lambda: "✎ open · line 7 · say why" in app.screen.query_one(ReviewDiff).plain
        )
        await until(pilot, lambda: "feedback: 1 open, 0 answered (F)" in header(app))
    # the AI sees it first in get_context
    async with connect(vault) as s:
        ctx = await s.call("get_context")
    assert ctx["blocks"][0]["items"][0]["id"] == item.id


async def test_esc_in_the_comment_dialog_saves_nothing(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
    app = app_on(vault)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_review(pilot)
        await shown(pilot, "w.md")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CommentModal))
        await pilot.press("x", "escape")
        await until(pilot, lambda: not isinstance(app.screen, CommentModal))
    assert list_feedback(vault) == []


async def test_c_in_the_note_view_comments_on_the_note(vault: Path) -> None:
    app = app_on(vault)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(NoteScreen(vault, "w.md"))
        await until(
            pilot, lambda: isinstance(app.screen, NoteScreen) and app.screen.view is not None
        )
        note = app.screen
        await pilot.press("c")
        await type_comment(pilot, "shorter")
        await until(pilot, lambda: "✎ open · the note · shorter" in screen_text(app))
        assert app.screen is note
    (item,) = list_feedback(vault)
    assert (item.path, item.text, item.lines, item.commit) == ("w.md", "shorter", None, None)


async def test_F_shows_the_answer_and_closes_and_reopens(connect: Any, vault: Path) -> None:
    item = add_feedback(vault, "w.md", "name the third step", line=6)
    async with connect(vault) as s:
        res = await s.call(
            "edit_text", path="w.md", old="- three", new="- three: drills", answers=[item.id]
        )
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: "feedback: 0 open, 1 answered (F)" in header(app))
        await pilot.press("F")
        await until(
            pilot, lambda: isinstance(app.screen, FeedbackScreen) and bool(app.screen.items)
        )
        text = screen_text(app)
        assert f"answered by {res['commit'][:8]}" in text
        assert "+- three: drills" in text and "-- three" in text  # the answering diff
        await pilot.press("x")
        await until(pilot, lambda: "is closed" in screen_text(app))
        await until(pilot, lambda: "No feedback open or answered." in screen_text(app))
        assert list_feedback(vault, include_closed=True)[0].status == "closed"
        await pilot.press("a")  # closed ones too
        await until(pilot, lambda: "closed shown" in screen_text(app))
        assert any(ln.lstrip("│ ").startswith("closed") for ln in screen_text(app).split("\n"))
        await pilot.press("r")
        await until(pilot, lambda: f"{item.id} is open" in screen_text(app))
        await until(pilot, lambda: "feedback: 1 open, 0 answered (F)" in header(app))
    assert list_feedback(vault)[0].status == "open"


async def test_feedback_written_elsewhere_shows_live(connect: Any, vault: Path) -> None:
    """Another dashboard (or the shell) adds feedback and the AI answers it: this dashboard's
    header follows the ref and the branch."""
    app = app_on(vault)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: "nothing to review" in header(app))
        assert "feedback:" not in header(app), header(app)
        item = add_feedback(vault, "w.md", "from the shell")
        await until(pilot, lambda: "feedback: 1 open, 0 answered (F)" in header(app))
        async with connect(vault) as s:
            await s.call(
                "append_section", path="w.md", heading="Log", content="- x", answers=[item.id]
            )
        await until(pilot, lambda: "feedback: 0 open, 1 answered (F)" in header(app))
