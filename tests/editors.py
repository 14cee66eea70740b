"""The owner's editor at the write's own steps, for the tests of "the owner's text never lost":
hooks on the store's fault points (`crash_point`, a no-op outside the fault tests) that save,
type into or hold a note at a named step, or fail a step as a full disk does. A helper module,
not a test module: test modules import from here, never from each other."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# what a hook does at a step: (the step, every step reached so far, this one last)
Act = Callable[[str, list[str]], None]


def at_steps(monkeypatch: pytest.MonkeyPatch, *acts: Act, commits_too: bool = False) -> list[str]:
    """Run each of `acts` at every step of the store's writes (with `commits_too`, the commit
    builder's steps as well: "branch_moved" is one), before the step's own fault point.
    Returns the steps reached, in order (one "temps" per attempt)."""
    from server.write import commits, store

    steps: list[str] = []

    def hooked(real: Callable[[str], None]) -> Callable[[str], None]:
        def hook(step: str) -> None:
            steps.append(step)
            for act in acts:
                act(step, steps)
            real(step)

        return hook

    monkeypatch.setattr(store, "crash_point", hooked(store.crash_point))
    if commits_too:
        monkeypatch.setattr(commits, "crash_point", hooked(commits.crash_point))
    return steps


def editor_in_the_old_copy(
    monkeypatch: pytest.MonkeyPatch,
    note: Path,
    at_rename: Callable[[int], Any],
    at: str = "renamed",
) -> list[str]:
    """Make the write's first attempt meet an editor that opened the note (for writing, by its
    path) before the write's check, and does `at_rename(fd)` at the write's step `at` (right
    after the rename; "branch_moved": once the commit is made), the fd still naming the old
    copy. Returns the steps reached (one "temps" per attempt)."""
    held: list[int] = []

    def editor(step: str, steps: list[str]) -> None:
        if step == "temps" and steps.count("temps") == 1:
            held.append(os.open(note, os.O_WRONLY))  # opened, nothing written yet
        if step == at and held:
            fd = held.pop()
            try:
                at_rename(fd)
            finally:
                os.close(fd)

    return at_steps(monkeypatch, editor, commits_too=True)


def disk_full_once_at(at: str) -> Act:
    """Fail the first step `at` as a full disk does (as root, a read-only file would not)."""

    def full(step: str, steps: list[str]) -> None:
        if step == at and steps.count(at) == 1:
            raise OSError(28, "No space left on device")

    return full
