"""Quitting while an owner's file action is still running: the action's thread finishes its
commit (or rolls back) whatever the dashboard does, and its completion, arriving after the
main screen's widgets are gone, is dropped quietly (it raised NoMatches in
`OwnerActions._done`, and the app ended on a WorkerFailed traceback).

Two ways the dashboard goes while the move runs:
- `q` / `ctrl+q`: Textual cancels every worker when its message loop ends, before it takes the
  screens down: the move's worker is cancelled, its thread is not and commits.
- the screens taken down first (`App._shutdown` with the app still running: how a Pilot run
  ends, and any exit that prunes screens before the workers): the worker comes back into a
  screen whose widgets are gone. That window is held open by real means: a writer holds the
  vault's write lock (as the server does while it writes), so the move waits on it in its
  thread; the lock is let go once the timeline is gone, and the footer does not finish closing
  (so neither does the screen) until the move's worker has come back. A slow machine gives
  that order by chance."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from app.ui.dashboard import Dashboard
from app.ui.dialogs.file_dialogs import DestinationPrompt, FileFinder
from app.ui.dialogs.modals import ConfirmModal
from app.ui.screens.main_screen import MainScreen
from app.ui.widgets.timeline_pane import TimelinePane
from server.core.git_run import git
from server.core.gitrepo import write_lock
from server.core.state_files import state_dir

from .conftest import until

pytestmark = pytest.mark.anyio

FILES = {"inbox/idea.md": "# Idea\n", "index.md": "- [i](inbox/idea.md)\n"}


def _files_worker(app: Dashboard) -> Worker[Any] | None:
    return next((w for w in app.workers if w.group == "files"), None)


async def _move_waiting_on_the_lock(
    pilot: Any, root: Path, held: contextlib.ExitStack
) -> Worker[Any]:
    """`m`, the file, where to, `y`: the move's worker running, its thread waiting for the
    write lock `held` takes (after the preview, which reads under it)."""
    app = pilot.app
    await until(pilot, lambda: bool(app.feed.rows), "the timeline")
    await pilot.press("m")
    await until(pilot, lambda: isinstance(app.screen, FileFinder), "the finder")
    await pilot.press(*"inbox idea", "enter")
    await until(pilot, lambda: isinstance(app.screen, DestinationPrompt), "the prompt")
    await pilot.press("ctrl+u", *"ideas/idea.md", "enter")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "the confirm")
    held.enter_context(write_lock(root))  # another writer is busy: the move will wait
    await pilot.press("y")
    await until(
        pilot,
        lambda: (
            isinstance(app.screen, MainScreen)
            and (w := _files_worker(app)) is not None
            and w.state == WorkerState.RUNNING
        ),
        "the move running",
        describe=lambda: (app.screen, _files_worker(app)),
    )
    worker = _files_worker(app)
    assert worker is not None
    return worker


def _committed(root: Path, before: bytes) -> str:
    """'' once the move is one commit on top of `before`, with nothing left half-done; else
    what is seen."""
    head = git(root, "rev-parse", "HEAD").stdout.strip()
    if head == before:
        return "no commit yet"
    intents = list(state_dir(root).glob("intent.*"))
    if intents:
        return f"intent left: {intents}"
    return ""


def _the_move_was_done_whole(root: Path, before: bytes) -> None:
    deadline = time.monotonic() + 30
    while _committed(root, before) and time.monotonic() < deadline:
        time.sleep(0.05)  # the move's thread, alone now: poll its result on disk, bounded
    assert _committed(root, before) == ""
    assert (root / "ideas/idea.md").read_text() == "# Idea\n"
    assert not (root / "inbox/idea.md").exists()
    assert git(root, "rev-parse", "HEAD~1").stdout.strip() == before
    changed = git(root, "show", "--name-status", "--format=", "HEAD").stdout.decode().split()
    assert "ideas/idea.md" in changed and "inbox/idea.md" in changed, changed
    assert git(root, "status", "--porcelain").stdout.strip() == b""


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_quitting_while_a_move_waits_cancels_its_worker_and_the_move_still_commits(
    make_vault: Any, key: str
) -> None:
    root = make_vault(FILES)
    before = git(root, "rev-parse", "HEAD").stdout.strip()
    held = contextlib.ExitStack()
    app = Dashboard(root, poll_seconds=60)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            worker = await _move_waiting_on_the_lock(pilot, root, held)
            app.simulate_key(key)  # not pilot.press: its wait for the screen outlives the app
            deadline = time.monotonic() + 30
            while not worker.is_finished and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert worker.state == WorkerState.CANCELLED, worker
            held.close()  # the other writer done: the move's thread goes on, on its own
    finally:
        held.close()  # never leave the move's thread waiting on a lock
    assert app.return_code == 0, app.return_code
    _the_move_was_done_whole(root, before)


async def test_a_move_that_ends_after_the_screens_widgets_are_gone_is_dropped_quietly(
    make_vault: Any,
) -> None:
    root = make_vault(FILES)
    before = git(root, "rev-parse", "HEAD").stdout.strip()
    held = contextlib.ExitStack()
    seen: dict[str, object] = {}
    app = Dashboard(root, poll_seconds=60)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            worker = await _move_waiting_on_the_lock(pilot, root, held)
            screen = app.screen
            footer = screen.query_one(Footer)
            timeline = screen.query_one("#timeline", TimelinePane)

            async def hold_the_screen_open() -> None:
                """In the footer's message loop: once the screen is being taken down and its
                timeline is gone, let the other writer go, and keep the footer (so the
                screen) from closing until the move's worker came back; bounded."""
                deadline = time.monotonic() + 30
                while timeline.is_attached and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
                seen["timeline gone"] = not timeline.is_attached
                seen["footer pruning"] = footer._pruning
                held.close()
                while not worker.is_finished and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
                seen["worker"] = worker.state

            footer.call_later(hold_the_screen_open)
            # no pilot call from here: each waits for every widget to be idle, and the footer
            # is not, by design. Leaving the block takes the screens down, the app running.
    finally:
        held.close()
    # the window was the one meant: the screen was going, the worker came back into it
    assert seen == {
        "timeline gone": True,
        "footer pruning": True,
        "worker": WorkerState.SUCCESS,
    }, seen
    assert app.return_code is None, app.return_code  # no exit asked, and no error (1)
    _the_move_was_done_whole(root, before)
