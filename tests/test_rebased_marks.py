"""Review marks and stats after a rebase (the Obsidian Git plugin's sync in rebase mode): AI
commits get new shas with the same author, date, message and patch. A change the owner marked
reviewed stays reviewed, and a change is counted once (app/services/rewritten.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.services.review import mark_reviewed, summaries
from app.services.rewritten import NOTES_REF
from app.services.stats import compute

from .conftest import git, second_machine

pytestmark = pytest.mark.anyio


def _with_remote_change(root: Path, tmp_path: Path) -> None:
    """A remote the vault tracks, and a commit there the vault does not have yet."""
    other, _ = second_machine(root, tmp_path)
    (other / "elsewhere.md").write_text("# From the laptop\n")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "vault backup: laptop")
    git(other, "push", "-q")


async def _ai_commits(connect: Any, root: Path, n: int) -> list[str]:
    async with connect(root) as s:
        return [
            (await s.call("append_section", path="a.md", heading="Log", content=f"- ai {i}"))[
                "commit"
            ]
            for i in range(n)
        ]


@pytest.mark.parametrize("git_copies_notes", [True, False])
async def test_marks_follow_a_rebased_commit(
    connect: Any, make_vault: Any, tmp_path: Path, git_copies_notes: bool
) -> None:
    root = make_vault({"a.md": "# A\n\n## Log\n"})
    _with_remote_change(root, tmp_path)
    before = await _ai_commits(connect, root, 3)
    mark_reviewed(root)
    assert summaries(root).unreviewed_commits == 0
    after = await _ai_commits(connect, root, 1)  # a change not reviewed yet: stays so
    if not git_copies_notes:  # a clone whose config never had ours: the fallback matches
        git(root, "config", "--unset-all", "notes.rewriteRef")
    git(root, "pull", "-q", "--rebase")  # what the plugin's sync runs
    rebased = git(root, "log", "--format=%H", "-4").split()
    assert not set(rebased) & set(before + after)  # every AI commit got a new sha
    review = summaries(root)
    assert review.unreviewed_commits == 1, [c.sha for n in review.notes for c in n.commits]
    [note] = review.notes
    assert [c.sha for c in note.commits] == [rebased[0]]  # the one not reviewed before
    copied = git(root, "notes", f"--ref={NOTES_REF}", "list").split()
    assert (rebased[1] in copied) == git_copies_notes  # git's own copy, when configured


async def test_stats_count_a_rebased_commit_and_its_original_once(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"a.md": "# A\n\n## Log\n"})
    first = git(root, "rev-parse", "HEAD").strip()
    [x, _y] = await _ai_commits(connect, root, 2)
    # the original and its rewrite both in history: a side branch with the AI commit
    # re-applied (same author, date, message, patch) merged back
    git(root, "checkout", "-q", "-b", "side", first)
    git(root, "cherry-pick", x)
    git(root, "checkout", "-q", "-")
    git(root, "merge", "-q", "--no-edit", "-s", "ours", "side")
    assert len(git(root, "log", "--format=%H", "--author=Claude").split()) == 3
    stats = compute(root)
    assert stats.total.ai_commits == 2  # x and its copy are one change, y another
