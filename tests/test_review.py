"""Review (app/services/review.py) on real repos: AI writes through the real server, the owner's edits
between them; marks in the notes ref, net diffs with every line attributed, hunk undo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.services.actions import ActionError
from app.services.net_diff import net_diff
from app.services.note_view import note_view
from app.services.revert import revert
from app.services.review import mark_reviewed, summaries
from app.services.review_undo import revert_note, undo_hunk
from app.services.rewritten import NOTES_REF

from .conftest import REPO, git
from .review_desk import W, owner_edit, owner_move

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"w.md": W, "a.md": "# A\n\n## Log\n", "b.md": "# B\n\n## Log\n"})


def paths(root: Path) -> list[str]:
    return [n.path for n in summaries(root).notes]


async def test_net_diff_attributes_ai_and_owner_lines(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        a1 = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        own = owner_edit(vault, "w.md", "- two\n", "- two (mine)\n")
        a2 = await s.call("edit_text", path="w.md", old="free text", new="free text, by AI")
    review = summaries(vault)
    assert review.unreviewed_commits == 2
    [note] = review.notes
    assert note.path == "w.md" and note.title == "Week"
    assert [c.sha for c in note.commits] == [a2["commit"], a1["commit"]]
    assert note.tools == ["append_section", "edit_text"] and note.added == 2
    d = net_diff(vault, "w.md")
    by_text = {(ln.kind, ln.text.strip()): ln for h in d.hunks for ln in h.lines}
    assert by_text[("+", "- ai four")].commit.sha == a1["commit"]  # type: ignore[union-attr]
    assert not by_text[("+", "- ai four")].owner
    mine = by_text[("+", "- two (mine)")]
    assert mine.owner and mine.commit.sha == own  # type: ignore[union-attr]
    assert by_text[("-", "- two")].owner  # the owner removed their old line
    assert by_text[("-", "free text")].commit.sha == a2["commit"]  # type: ignore[union-attr]
    assert by_text[("+", "free text, by AI")].commit.sha == a2["commit"]  # type: ignore[union-attr]
    # the unified diff applies to the base and gives the file now
    base = git(vault, "show", f"{a1['commit']}^:w.md")
    (vault / "base.md").write_text(base)
    patch = d.unified().replace("a/w.md", "a/base.md").replace("b/w.md", "b/base.md")
    subprocess.run(["git", "-C", str(vault), "apply", "-"], input=patch.encode(), check=True)
    assert (vault / "base.md").read_text() == (vault / "w.md").read_text()
    assert (d.added, d.removed) == (3, 2)


async def test_pending_owner_edits_are_the_owners_lines(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
    (vault / "w.md").write_text((vault / "w.md").read_text() + "typed, not saved\n")
    d = net_diff(vault, "w.md")
    added = {ln.text.strip(): ln for h in d.hunks for ln in h.lines if ln.kind == "+"}
    assert added["typed, not saved"].owner and added["typed, not saved"].commit is not None
    assert added["typed, not saved"].commit.sha == "worktree"
    assert not added["- ai four"].owner


async def test_reviewed_changed_again_unreviewed_again(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        a1 = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        assert mark_reviewed(vault) == (1, ["w.md"])
        assert paths(vault) == [] and summaries(vault).unreviewed_commits == 0
        note = git(vault, "notes", f"--ref={NOTES_REF}", "show", a1["commit"])
        assert "Reviewed: w.md" in note and "Reviewed-by: " in note
        a2 = await s.call("append_section", path="w.md", heading="Log", content="- ai five")
    [n] = summaries(vault).notes
    assert [c.sha for c in n.commits] == [a2["commit"]]
    d = net_diff(vault, "w.md")  # starts from the reviewed state: only the new line
    assert [(ln.kind, ln.text) for h in d.hunks for ln in h.lines if ln.kind != " "] == [
        ("+", "- ai five\n")
    ]
    # never in the working tree, never a commit on the branch
    assert git(vault, "status", "--porcelain") == ""
    assert "review" not in git(vault, "log", "--format=%s")


async def test_batch_over_three_notes_reviewed_one_note_at_a_time(
    connect: Any, vault: Path
) -> None:
    ops = [
        {"tool": "append_section", "args": {"path": p, "heading": "Log", "content": f"- in {p}"}}
        for p in ("w.md", "a.md", "b.md")
    ]
    async with connect(vault) as s:
        batch = await s.call("batch", ops=ops)
    assert sorted(paths(vault)) == ["a.md", "b.md", "w.md"]
    assert summaries(vault).unreviewed_commits == 1
    mark_reviewed(vault, ["a.md"])
    assert sorted(paths(vault)) == ["b.md", "w.md"]
    # one path of three: the commit is not settled, the next scan reads it again
    assert "Reviewed-all" not in git(vault, "notes", f"--ref={NOTES_REF}", "show", batch["commit"])
    mark_reviewed(vault, ["w.md"])
    assert paths(vault) == ["b.md"] and summaries(vault).unreviewed_commits == 1
    mark_reviewed(vault, ["b.md"])
    assert paths(vault) == [] and summaries(vault).unreviewed_commits == 0
    note = git(vault, "notes", f"--ref={NOTES_REF}", "show", batch["commit"])
    assert {ln for ln in note.splitlines() if ln.startswith("Reviewed: ")} == {
        "Reviewed: a.md",
        "Reviewed: b.md",
        "Reviewed: w.md",
    }
    assert "Reviewed-all: yes" in note.splitlines()
    # a path with nothing to review is refused, and nothing is written
    ref = git(vault, "rev-parse", NOTES_REF)
    with pytest.raises(ActionError, match=r"no unreviewed AI changes to a\.md"):
        mark_reviewed(vault, ["a.md"])
    assert git(vault, "rev-parse", NOTES_REF) == ref


MARK_SCRIPT = (
    "import sys; from pathlib import Path; from app.services.review import mark_reviewed; "
    "print(mark_reviewed(Path(sys.argv[1]), sys.argv[2:] or None))"
)


async def test_marks_survive_a_restart_and_two_processes_share_them(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        for p in ("w.md", "a.md", "b.md"):
            await s.call("append_section", path=p, heading="Log", content=f"- in {p}")
    procs = [
        subprocess.Popen([sys.executable, "-c", MARK_SCRIPT, str(vault), p], cwd=REPO)
        for p in ("a.md", "b.md")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    # a fresh process (the restart) sees both marks: neither lost the other's update
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from app.services.review import "
            "summaries; print([n.path for n in summaries(Path(sys.argv[1])).notes])",
            str(vault),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "['w.md']"


async def test_undo_hunk_keeps_the_owners_lines(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        owner_edit(vault, "w.md", "- three\n", "- three\n- mine, beside it\n")
    d = net_diff(vault, "w.md")
    assert len(d.hunks) == 1 and d.hunks[0].ai
    sha = undo_hunk(vault, "w.md", 0)
    text = (vault / "w.md").read_text()
    assert "- ai four" not in text and "- mine, beside it" in text
    assert text == W.replace("- three\n", "- three\n- mine, beside it\n")
    msg = git(vault, "log", "-1", "--format=%B", sha)
    assert "Vaultwatch-Action: undo" in msg and f"Vaultwatch-Undoes: {ai['commit']}" in msg
    assert git(vault, "status", "--porcelain") == ""
    assert paths(vault) == []  # nothing of the AI's is left there: it counts as reviewed


async def test_undo_hunk_refused_when_the_owner_changed_the_ais_line(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        await s.call("edit_text", path="w.md", old="- one", new="- one, by AI")
        owner_edit(vault, "w.md", "- ai four", "- ai four, fixed by me")
    head, before = git(vault, "rev-parse", "HEAD"), (vault / "w.md").read_text()
    d = net_diff(vault, "w.md")
    assert len(d.hunks) == 1
    with pytest.raises(ActionError, match="changed lines the AI wrote"):
        undo_hunk(vault, "w.md", 0)
    assert git(vault, "rev-parse", "HEAD") == head and (vault / "w.md").read_text() == before


async def test_undo_hunk_restores_a_line_the_ai_removed(connect: Any, vault: Path) -> None:
    long = W.replace("free text\n", "".join(f"filler {i}\n" for i in range(20)))
    (vault / "w.md").write_text(long)
    git(vault, "commit", "-qam", "longer")
    async with connect(vault) as s:
        await s.call("edit_text", path="w.md", old="- two\n", new="")
        await s.call("edit_text", path="w.md", old="filler 18", new="filler 18 by AI")
    d = net_diff(vault, "w.md")
    assert len(d.hunks) == 2
    undo_hunk(vault, "w.md", 0)
    text = (vault / "w.md").read_text()
    assert "- two\n" in text and "filler 18 by AI" in text
    assert paths(vault) == ["w.md"]  # the other hunk is still to review


async def test_revert_note_leaves_owner_commits_and_other_notes(connect: Any, vault: Path) -> None:
    ops = [
        {"tool": "append_section", "args": {"path": p, "heading": "Log", "content": f"- in {p}"}}
        for p in ("w.md", "a.md")
    ]
    async with connect(vault) as s:
        batch = await s.call("batch", ops=ops)
        owner_edit(vault, "w.md", "free text", "free text, mine")
        await s.call("append_section", path="w.md", heading="Log", content="- ai again")
    sha = revert_note(vault, "w.md")
    text = (vault / "w.md").read_text()
    assert text == W.replace("free text", "free text, mine")
    assert "- in a.md" in (vault / "a.md").read_text()
    msg = git(vault, "log", "-1", "--format=%B", sha)
    assert f"Vaultwatch-Reverts-Path: {batch['commit']} w.md" in msg
    assert paths(vault) == ["a.md"]  # the reverted changes count as reviewed


async def test_period_view_shows_reviewed_notes_too(connect: Any, vault: Path) -> None:
    start = git(vault, "rev-parse", "HEAD").strip()
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        mark_reviewed(vault)
        await s.call("append_section", path="a.md", heading="Log", content="- ai in a")
    assert paths(vault) == ["a.md"]
    period = summaries(vault, start)
    assert sorted((n.path, n.reviewed) for n in period.notes) == [("a.md", False), ("w.md", True)]
    assert [n.path for n in summaries(vault, "today").notes] != []
    with pytest.raises(ActionError, match="not last, today"):
        summaries(vault, "yesterday-ish")


async def test_note_view_share_and_history(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        own = owner_edit(vault, "w.md", "free text", "free text, mine")
    v = note_view(vault, "w.md")
    assert v.lines == len(W.splitlines()) + 1 and v.ai_lines == 1
    assert [c.sha for c in v.history[:2]] == [own, ai["commit"]]


async def test_a_commit_reverted_whole_counts_as_reviewed(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        await s.call("append_section", path="a.md", heading="Log", content="- ai in a")
    revert(vault, [ai["commit"]])  # the dashboard's revert
    assert paths(vault) == ["a.md"] and summaries(vault).unreviewed_commits == 1


async def test_marking_many_commits_is_one_notes_commit(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        for i in range(3):
            await s.call("append_section", path="a.md", heading="Log", content=f"- {i}")
            await s.call("append_section", path="b.md", heading="Log", content=f"- {i}")
    assert mark_reviewed(vault) == (6, ["b.md", "a.md"])
    assert git(vault, "rev-list", "--count", NOTES_REF).strip() == "1"  # one ref update
    shas = git(vault, "log", "-6", "--format=%H").split()
    for sha in shas:  # each readable the plain git way
        assert "Reviewed-all: yes" in git(vault, "notes", f"--ref={NOTES_REF}", "show", sha)


# -- a note the owner moved after the AI changed it ----------------------------------------------


IDEA = "---\nstatus: open\n---\n# 孤立的想法\n\n这个笔记没有链接。\n还有一行。\n"


async def test_review_follows_a_note_the_owner_moved(connect: Any, make_vault: Any) -> None:
    """Seen on a Chinese vault: after the owner moved a note the AI had changed, the list
    kept its old path and the diff showed all its lines removed (`+0 −6 net`, `- status: open`),
    never the AI's change; `u` offered to undo in a file that no longer existed, then refused."""
    old, new = "想法/2026-09-01-孤立的想法.md", "归档/二〇二六年/孤立的想法.md"
    root = make_vault({old: IDEA, "b.md": "# B\n\n## Log\n"})
    async with connect(root) as s:
        ai = await s.call("update_frontmatter", path=old, set={"status": "closed"})
        await s.call("append_section", path="b.md", heading="Log", content="- b")
    owner_move(root, old, new)
    review = summaries(root)
    assert sorted(n.path for n in review.notes) == sorted([new, "b.md"])
    [note] = [n for n in review.notes if n.path == new]
    assert note.moved_from == old and note.path_in(ai["commit"]) == old
    assert (note.added, note.removed) == (1, 1) and note.title == "孤立的想法"
    d = net_diff(root, new)
    assert (d.added, d.removed) == (1, 1)  # the AI's change, not the whole note removed
    [hunk] = d.hunks
    changed = [(ln.kind, ln.text, ln.commit.sha if ln.commit else None) for ln in hunk.lines]
    assert ("-", "status: open\n", ai["commit"]) in changed
    assert ("+", "status: closed\n", ai["commit"]) in changed
    assert all(not ln.owner for ln in hunk.lines if ln.kind != " ")  # the move changed no line
    # a revert works on the path each commit wrote: refused in words, nothing written
    head = git(root, "rev-parse", "HEAD")
    with pytest.raises(ActionError, match=f"moved from {old}.*nothing changed.*\\(u\\)"):
        revert_note(root, new)
    assert git(root, "rev-parse", "HEAD") == head
    # undo works where the note is now, and the note back as it was has nothing to review
    sha = undo_hunk(root, new, 0)
    assert (root / new).read_text() == IDEA and not (root / old).exists()
    assert (
        git(root, "-c", "core.quotePath=false", "show", "--format=", "--name-only", sha).strip()
        == new
    )
    assert paths(root) == ["b.md"]
    note_text = git(root, "notes", f"--ref={NOTES_REF}", "show", ai["commit"])
    assert f"Reviewed: {old}" in note_text  # the mark names the path that commit wrote


async def test_a_note_moved_twice_is_marked_under_its_old_names(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"a.md": "# A\n\n## Log\n- one\n"})
    async with connect(root) as s:
        one = await s.call("append_section", path="a.md", heading="Log", content="- ai one")
        owner_move(root, "a.md", "notes/b.md")
        two = await s.call("append_section", path="notes/b.md", heading="Log", content="- ai two")
        owner_move(root, "notes/b.md", "archive/c.md")
        # a new note at the first name is another note: it does not take the old one's changes
        (root / "a.md").write_text("# A again\n")
        git(root, "add", "a.md")
        git(root, "commit", "-qm", "a new a.md")
        three = await s.call("append_section", path="a.md", heading="Log", content="- ai three")
    review = summaries(root)
    assert sorted(n.path for n in review.notes) == ["a.md", "archive/c.md"]
    [moved] = [n for n in review.notes if n.path == "archive/c.md"]
    assert [c.sha for c in moved.commits] == [two["commit"], one["commit"]]
    assert moved.moved_from == "a.md"
    d = net_diff(root, "archive/c.md")
    added = [ln.text for h in d.hunks for ln in h.lines if ln.kind == "+"]
    assert added == ["- ai one\n", "- ai two\n"] and d.removed == 0
    [fresh] = [n for n in review.notes if n.path == "a.md"]
    assert [c.sha for c in fresh.commits] == [three["commit"]] and fresh.moved_from is None
    mark_reviewed(root, ["archive/c.md"])
    assert paths(root) == ["a.md"]
    assert "Reviewed: a.md" in git(root, "notes", f"--ref={NOTES_REF}", "show", one["commit"])
    assert "Reviewed: notes/b.md" in git(root, "notes", f"--ref={NOTES_REF}", "show", two["commit"])
