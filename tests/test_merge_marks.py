"""AI changes another machine made, brought in by a merge (the Obsidian Git plugin's sync in
merge mode): the merge commit is the owner's (the plugin's), yet the lines it brings in are
the other machine's AI's, in AI commits that keep their author and trailers. The review desk
says so: each line is the AI commit's that wrote it, not the merge's; stats count each AI
change once (the merge itself counts nothing); a review mark stays on its commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.services import net_diff, review, stats

from .conftest import git, second_machine

pytestmark = pytest.mark.anyio

NOTE = "# Plan\n\n## Mine\n- m0\n\nmiddle\n\n## Theirs\n- t0\n\n## End\n"


def _two_machines(make_vault: Any, tmp_path: Path) -> tuple[Path, Path, str]:
    root = make_vault({"plan.md": NOTE})
    other, branch = second_machine(root, tmp_path)
    return root, other, branch


async def test_lines_a_merge_brings_in_are_the_other_machines_ai_lines(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    root, other, branch = _two_machines(make_vault, tmp_path)
    async with connect(other) as s:  # the other machine's AI, pushed by its plugin
        theirs = await s.call("append_section", path="plan.md", heading="Theirs", content="- t1")
    git(other, "push", "-q")
    async with connect(root) as s:  # this machine's AI, not pushed yet
        mine = await s.call("append_section", path="plan.md", heading="Mine", content="- m1")
    # the plugin's sync in merge mode: fetch, then merge the tracking branch
    git(root, "fetch", "-q")
    git(root, "merge", "-q", "--no-edit", f"origin/{branch}")
    merge = git(root, "rev-parse", "HEAD").strip()
    assert len(git(root, "rev-parse", f"{merge}^@").split()) == 2
    assert "- t1\n" in (root / "plan.md").read_text() and "- m1\n" in (root / "plan.md").read_text()

    # both AI commits are to review, with their own authors and trailers
    r = review.summaries(root)
    [note] = r.notes
    assert {c.sha for c in note.commits} == {mine["commit"], theirs["commit"]}
    assert r.unreviewed_commits == 2
    # each added line is the AI commit's that wrote it, never the merge's
    [diff] = net_diff.net_diffs(root, [note])
    added = {
        ln.text: ln for h in diff.hunks for ln in h.lines if ln.kind == "+" and ln.text.strip()
    }
    assert set(added) == {"- m1\n", "- t1\n"}, diff.unified()
    assert added["- m1\n"].commit is not None and added["- m1\n"].commit.sha == mine["commit"]
    t1 = added["- t1\n"]
    assert t1.commit is not None and t1.commit.sha == theirs["commit"], (t1.commit, merge)
    assert not t1.owner and all(h.ai for h in diff.hunks)
    # nothing was removed: a line one side lacked is no removal by the other
    assert not [ln for h in diff.hunks for ln in h.lines if ln.kind == "-"], diff.unified()

    # stats: two AI changes, their lines counted once (the net diff's, every one the AI's);
    # the merge is no AI change and adds nothing
    total = stats.compute(root).total
    plus = sum(1 for h in diff.hunks for ln in h.lines if ln.kind == "+")
    assert (total.ai_commits, total.added, total.removed) == (2, plus, 0)

    # marked reviewed, both stay reviewed beside the merge
    assert review.mark_reviewed(root)[0] == 2
    assert review.summaries(root).notes == []
