"""The owner's review, for the review tests (services, screens, feedback): the week note the AI
writes in, the owner's own commits between its writes, and the review screen opened under
Pilot. A helper module, not a test module: test modules import from here, never from each
other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.ui.dashboard import Dashboard
from app.ui.screens.review_screen import ReviewScreen

from .conftest import git, until
from .desk import screen_text

W = "# Week\n\n## Log\n- one\n- two\n- three\n\n## Notes\nfree text\n"


def owner_edit(root: Path, path: str, old: str, new: str) -> str:
    """The owner replaces `old` by `new` in a note and commits it; returns the commit."""
    p = root / path
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    git(root, "commit", "-qam", f"owner edits {path}")
    return git(root, "rev-parse", "HEAD").strip()


def owner_move(root: Path, old: str, new: str) -> str:
    """The dashboard's move (`m`): one owner commit git sees as a rename."""
    from app.services.move_action import apply_move, plan_move

    return apply_move(root, plan_move(root, old, new))


def app_on(root: Path) -> Dashboard:
    return Dashboard(root, poll_seconds=0.05)


def header(app: Dashboard) -> str:
    return screen_text(app).split("\n")[0]


async def open_review(pilot: Any) -> ReviewScreen:
    app = pilot.app
    await until(pilot, lambda: app.review_watch.count is not None)
    await pilot.press("v")
    await until(pilot, lambda: isinstance(app.screen, ReviewScreen))
    screen = app.screen
    await until(pilot, lambda: screen.review is not None)
    await until(pilot, lambda: screen.shown is not None or not screen.review.notes)
    return screen


async def shown(pilot: Any, path: str) -> None:
    screen = pilot.app.screen
    await until(pilot, lambda: screen.shown is not None and screen.shown.note.path == path)
