"""The frames a dashboard under Pilot draws, timed: a screen is open when the frame that shows
it is drawn, not when Pilot's `press` returns (that waits until the process is idle, threads
started by the screen included)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any


async def until(check: Any, timeout: float = 60) -> None:
    """Wait for `check()` without driving the app: Pilot's `pause` forces a screen update each
    time, which would draw frames the app would not have drawn yet, and cost their time."""
    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            raise TimeoutError("the dashboard did not get there")
        await asyncio.sleep(0.002)


ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours and cursor moves between the text


class Frames:
    """Every frame the app draws, as the text a terminal would receive, with its wall and
    process-CPU time. The headless driver composes each frame but writes it nowhere; rendering
    it to the terminal's escape codes here keeps that last step's cost in the figures."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[float, float, str]] = []
        self._display = app._display  # the one place Textual hands a frame to the terminal
        app._display = self._draw

    def _draw(self, screen: Any, update: Any) -> None:
        if update is not None:
            text = update.render_segments(self.app.console)
            wall, cpu = time.perf_counter(), time.process_time()
            self.seen.append((wall, cpu, ESCAPES.sub("", text)))
        self._display(screen, update)

    def first(self, *needles: str) -> tuple[float, float] | None:
        """When the first frame that shows all of `needles` was drawn (wall, CPU)."""
        for wall, cpu, text in self.seen:
            if all(n in text for n in needles):
                return wall, cpu
        return None


async def drawn(frames: Frames, *needles: str) -> tuple[float, float]:
    await until(lambda: frames.first(*needles) is not None)
    found = frames.first(*needles)
    assert found is not None
    return found
