"""The note view: the share of a note's lines the AI wrote, and the note's history."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from app.services.history import (
    Commit,
)
from app.services.review_marks import _log
from server.core.git_run import git

# ------------------------------------------------------------------------------------------------
# the note view: who wrote its lines, and its history


@dataclass
class NoteView:
    path: str
    lines: int
    ai_lines: int
    history: list[Commit]  # every commit that touched it, newest first
    # each line of the note as on disk and the sha of the commit that wrote it, by `git blame`
    # (forty zeros: not committed yet, the owner's unsaved edit)
    blame: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ai_share(self) -> float:
        return self.ai_lines / self.lines if self.lines else 0.0


def note_view(root: Path, path: str) -> NoteView:
    """The share of the note's lines (as on disk) the AI wrote, by `git blame`, and every
    commit that touched it."""
    history = [m.commit for m in _log(root, "HEAD", "--", path)]
    ai = {c.sha for c in history if c.is_ai}
    r = git(
        root,
        "blame",
        "--porcelain",
        "--contents",
        str(root / path),
        "--",
        path,
        check=False,
    )
    total = ai_lines = 0
    blame: list[tuple[str, str]] = []
    sha = ""
    for line in r.stdout.decode("utf-8", "replace").split("\n"):
        if line.startswith("\t"):  # the line itself, after its commit's header
            blame.append((sha, line[1:]))
            continue
        m = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
        if m:
            sha = m[1]
            total += 1
            ai_lines += m[1] in ai
    return NoteView(path, total, ai_lines, history, blame)
