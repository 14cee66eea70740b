"""Waiting for a dashboard under Pilot to settle: an event (nothing left to change the picture),
not the clock. A helper module, not a test module: test modules import it (and conftest)."""

from __future__ import annotations

from typing import Any

from textual.worker import WorkerState

from .conftest import until

# each screen's own "loaded" mark: None until its first read has come back from its thread
LOADED = {
    "ReviewScreen": ("review",),
    "HealthScreen": ("report",),
    "ReadsScreen": ("report", "preview"),
    "StatsScreen": ("stats",),
    "NoteScreen": ("view",),
}
PAINT_FLAGS = ("_layout_required", "_scroll_required", "_repaint_required", "_recompose_required")


def unsettled(
    app: Any,
    *,
    toasts: bool = True,
    threads_only: bool = False,
    ignore: tuple[str, ...] = (),
) -> list[str]:
    """What would still change the picture, in words (empty: nothing):
    - workers pending or running, but those of the groups in `ignore` (a dashboard polling
      every 0.1 s always has a "poll" worker about) and, with `threads_only`, async workers
      (a dialog's flow waits in one for the owner's answer);
    - the screen's first read not in yet (LOADED);
    - what Textual has still to lay out, restyle, paint or call after its refresh (its own
      flags, on the screen and each of its widgets: the next frame would differ);
    - the dashboard's history not all read yet;
    - a notification on screen, unless `toasts`."""
    busy = (WorkerState.PENDING, WorkerState.RUNNING)
    seen = [
        f"worker {w.group}/{w.name}"
        for w in app.workers
        if w.state in busy and w.group not in ignore and (w._thread_worker or not threads_only)
    ]
    screen = app.screen
    seen += [
        f"{type(screen).__name__}.{a} is None"
        for a in LOADED.get(type(screen).__name__, ())
        if getattr(screen, a, None) is None
    ]
    for node in screen.walk_children(with_self=True):
        flags = [f for f in PAINT_FLAGS if getattr(node, f, False)]
        if getattr(node, "_refresh_styles_required", False):
            flags.append("_refresh_styles_required")
        seen += [f"{type(node).__name__}#{node.id}.{f}" for f in flags]
    if screen._dirty_widgets:
        seen.append(f"{len(screen._dirty_widgets)} widgets to paint")
    if screen._callbacks:
        seen.append(f"{len(screen._callbacks)} calls after the refresh")
    feed = getattr(app, "feed", None)
    if feed is not None and not feed.complete:
        seen.append("the history still being read")
    if not toasts and app._notifications:
        seen.append(f"{len(app._notifications)} notifications")
    return seen


async def settled(
    pilot: Any,
    what: str = "the screen to settle",
    *,
    threads_only: bool = False,
    ignore: tuple[str, ...] = (),
) -> None:
    """Until `unsettled` is empty (notifications left as they are); on timeout, what was not."""
    app = pilot.app
    await until(
        pilot,
        lambda: not unsettled(app, threads_only=threads_only, ignore=ignore),
        what,
        describe=lambda: unsettled(app, threads_only=threads_only, ignore=ignore),
    )
