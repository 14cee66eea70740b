"""The owner's revert (app/services/revert.py) on real repos, with AI commits made by the real server:
it never leaves git mid-operation, commits exactly the revert, names the blockers by line, and
every dashboard action can itself be undone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.services.actions import ActionError
from app.services.create_action import apply_create, plan_create
from app.services.history import read_commits, reverted_by
from app.services.move_action import apply_move, plan_move
from app.services.remove_action import apply_remove, plan_remove
from app.services.revert import (
    NothingToRevert,
    RevertConflict,
    abort_operation,
    offered,
    plan_revert,
    revert,
)
from server.core.gitrepo import operation_in_progress
from server.vault import Vault
from server.write.journal import read_all

from .conftest import REPO, git

pytestmark = pytest.mark.anyio

LOG = "# W\n\n## Log\n- one\n"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"w.md": LOG, "other.md": "# Other\n"})


def clean(root: Path) -> bool:
    """git is in no operation, nothing staged or changed, no state files left behind."""
    return (
        operation_in_progress(root) is None
        and not (root / ".git/sequencer").exists()
        and git(root, "status", "--porcelain") == ""
        and not list((root / ".git/vaultwatch").glob("intent*.json"))
    )


async def test_reverting_twice_says_already_reverted_and_leaves_git_clean(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        first = revert(vault, [res["commit"]])
        head = git(vault, "rev-parse", "HEAD")
        with pytest.raises(NothingToRevert) as info:
            revert(vault, [res["commit"]])
        assert info.value.by == first and f"already reverted by {first[:8]}" in str(info.value)
        assert git(vault, "rev-parse", "HEAD") == head and clean(vault)
        # the AI can still write: the vault is not stuck mid-revert
        await s.call("append_section", path="w.md", heading="Log", content="- later")
    assert clean(vault)


async def test_a_revert_made_with_git_itself_is_recognised(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    git(vault, "revert", "--no-edit", res["commit"])  # the owner, in a terminal
    by = git(vault, "rev-parse", "HEAD").strip()
    with pytest.raises(NothingToRevert) as info:
        revert(vault, [res["commit"]])
    assert info.value.by == by and f"undone by {by[:8]}" in str(info.value)
    assert clean(vault)


async def test_the_revert_commits_exactly_the_revert_not_what_the_owner_staged(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    (vault / "draft.md").write_text("# A draft I staged\n")
    (vault / "other.md").write_text("# Other, staged edit\n")
    git(vault, "add", "draft.md", "other.md")
    sha = revert(vault, [res["commit"]])
    assert git(vault, "show", "--name-only", "--format=", sha).split() == ["w.md"]
    # still staged, still the owner's, untouched
    assert git(vault, "diff", "--cached", "--name-only").split() == ["draft.md", "other.md"]
    assert (vault / "other.md").read_text() == "# Other, staged edit\n"
    assert (vault / "w.md").read_text() == LOG
    msg = git(vault, "log", "-1", "--format=%an%n%B", sha)
    assert msg.startswith("Test Owner\nRevert ")
    assert "Vaultwatch-Action: revert" in msg and f"Vaultwatch-Reverts: {res['commit']}" in msg
    assert read_commits(vault, limit=1)[0].reverts == (res["commit"],)


async def test_blockers_are_the_commits_on_the_same_lines_with_the_owners_left_to_the_owner(
    connect: Any, make_vault: Any
) -> None:
    far = "".join(f"- filler {i}\n" for i in range(30))
    root = make_vault({"w.md": f"# W\n\n## Log\n- one\n\n## Far\n{far}"})
    async with connect(root) as s:
        target = await s.call("edit_text", path="w.md", old="- one", new="- one, said the AI")
        # same file, far from the target's line: not in the way
        elsewhere = await s.call("edit_text", path="w.md", old="- filler 20", new="- filler XX")
        ai_on_it = await s.call(
            "edit_text", path="w.md", old="- one, said the AI", new="- one, said the AI twice"
        )
        text = (root / "w.md").read_text().replace("said the AI twice", "said the AI twice, and I")
        (root / "w.md").write_text(text)
        git(root, "commit", "-qam", "my edit on that line")
        mine = git(root, "rev-parse", "HEAD").strip()
        await s.call("append_section", path="w.md", heading="Far", content="- the end")
    before = (root / "w.md").read_text(), git(root, "rev-parse", "HEAD")
    with pytest.raises(RevertConflict) as info:
        plan_revert(root, [target["commit"]])
    blockers = info.value.blockers
    assert [c.sha for c in blockers] == [mine, ai_on_it["commit"]]  # newest first
    assert elsewhere["commit"] not in {c.sha for c in blockers}
    assert [offered(c) for c in blockers] == [False, True]  # the owner's: not ticked by default
    assert "my edit on that line" in str(info.value) and "Test Owner" in str(info.value)
    # the AI blockers alone do not go: the owner's edit is still on that line
    with pytest.raises(RevertConflict) as again:
        revert(root, [target["commit"], ai_on_it["commit"]])
    assert [c.sha for c in again.value.blockers] == [mine]
    assert ((root / "w.md").read_text(), git(root, "rev-parse", "HEAD")) == before and clean(root)
    # ticked by the owner, it goes, and the far edits stay
    revert(root, [target["commit"], ai_on_it["commit"], mine])
    text = (root / "w.md").read_text()
    assert "- one\n" in text and "filler XX" in text and "- the end" in text and clean(root)


async def test_unsaved_edits_in_the_way_are_named_and_kept(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    mine = (vault / "w.md").read_text().replace("- ai line", "- ai line, fixed by me")
    (vault / "w.md").write_text(mine)
    head = git(vault, "rev-parse", "HEAD")
    with pytest.raises(RevertConflict) as info:
        revert(vault, [res["commit"]])
    assert info.value.uncommitted == ["w.md"] and info.value.blockers == []
    assert "your unsaved edits to w.md" in str(info.value)
    assert (vault / "w.md").read_text() == mine and git(vault, "rev-parse", "HEAD") == head


async def test_the_preview_is_the_diff_the_revert_applies(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    (change,) = plan_revert(vault, [res["commit"]]).changes()
    assert change.path == "w.md" and "- ai line" in change.old and "- ai line" not in change.new


async def test_every_dashboard_action_can_be_undone(connect: Any, vault: Path) -> None:
    (vault / "a.md").write_text("# A\n\nsee [[b]]\n")
    (vault / "b.md").write_text("# B\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "two notes")
    start = git(vault, "ls-tree", "-r", "HEAD")
    moved = apply_move(vault, plan_move(vault, "b.md", "folder/b2.md"))
    assert "[[b2]]" in (vault / "a.md").read_text()
    removed = apply_remove(vault, plan_remove(vault, "other.md"))
    undo_remove = revert(vault, [removed])
    undo_move = revert(vault, [moved])
    assert git(vault, "ls-tree", "-r", "HEAD") == start
    assert not (vault / "folder").exists()  # the folder the move made went with it
    assert all(offered(c) for c in read_commits(vault, limit=4))
    # a revert is undone like anything else: the move comes back, and the marks follow
    redo = revert(vault, [undo_move])
    assert (vault / "folder/b2.md").read_text() == "# B\n"
    marks = reverted_by(read_commits(vault))
    assert marks == {removed: undo_remove, undo_move: redo}  # the move is live again
    assert clean(vault)


async def test_a_created_note_is_undone_and_its_folder_pruned(make_vault: Any) -> None:
    root = make_vault(
        {
            "vault.config.yaml": "types:\n  idea:\n    folder: ideas\n    required: [topic]\n",
        }
    )
    note = plan_create(root, "idea", {"topic": "sleep"}, "Sleep more")
    sha = apply_create(root, note)
    assert (root / note.path).exists()
    revert(root, [sha])
    assert not (root / note.path).exists() and not (root / "ideas").exists() and clean(root)


async def test_a_recreated_file_is_a_conflict_not_a_loss(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        made = await s.call("create_doc", path="n.md", body="# N\n")
        await s.call("append_section", path="n.md", heading="N", content="more")
    with pytest.raises(RevertConflict):
        revert(vault, [made["commit"]])
    assert "more" in (vault / "n.md").read_text() and clean(vault)


REVERT_SCRIPT = """
import sys
from pathlib import Path
from app.services.revert import revert
revert(Path(sys.argv[1]), [sys.argv[2]])
"""


async def test_a_dashboard_killed_mid_revert_is_rolled_back_at_the_next_start(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({f"n{i}.md": f"# N{i}\n\n## Log\n" for i in range(3)})
    async with connect(root) as s:
        args = [{"path": f"n{i}.md", "heading": "Log", "content": "- ai"} for i in range(3)]
        ops = [{"tool": "append_section", "args": a} for a in args]
        res = await s.call("batch", ops=ops)
    head = git(root, "rev-parse", "HEAD")
    env = {**os.environ, "VAULTWATCH_FAULT": "after_write:2"}  # killed after two of three files
    proc = subprocess.run(
        [sys.executable, "-c", REVERT_SCRIPT, str(root), res["commit"]],
        cwd=REPO,
        env=env,
        capture_output=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert list((root / ".git/vaultwatch").glob("intent*.json"))
    assert git(root, "status", "--porcelain").count(" M ") == 2  # half a revert on disk
    # the next start: the server the dashboard starts rolls the interrupted write back first
    vault = Vault(root)
    vault.store.recover()  # what server/protocol/cli.py does before it serves
    vault.close()
    (event,) = [
        e for e in read_all(root / ".git/vaultwatch/events.jsonl") if e["kind"] == "recovered"
    ]
    assert sorted(event["paths"]) == ["n0.md", "n1.md"] and "interrupted revert" in event["message"]
    assert git(root, "rev-parse", "HEAD") == head and clean(root)
    assert all("- ai" in (root / f"n{i}.md").read_text() for i in range(3))
    revert(root, [res["commit"]])  # and the revert can simply be done again
    assert not any("- ai" in (root / f"n{i}.md").read_text() for i in range(3))


async def test_a_git_operation_left_half_way_is_shown_and_aborted(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        first = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, edited")
    # what the old dashboard (or the owner's own `git revert`) could leave behind
    r = subprocess.run(
        ["git", "-C", str(vault), "revert", "--no-edit", first["commit"]], capture_output=True
    )
    assert r.returncode != 0 and operation_in_progress(vault) == ("revert", "a revert")
    with pytest.raises(Exception, match="middle of a revert") as err:
        revert(vault, [first["commit"]])
    assert "git revert --abort" in str(err.value) and "owner" not in str(err.value)
    assert abort_operation(vault) == "a revert"
    assert operation_in_progress(vault) is None and clean(vault)
    async with connect(vault) as s:  # AI writes work again
        await s.call("append_section", path="w.md", heading="Log", content="- after")


async def test_one_file_in_the_way_stops_the_whole_revert(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        args = [
            {"path": "w.md", "heading": "Log", "content": "- ai line"},
            {"path": "other.md", "heading": "Other", "content": "- ai too"},
        ]
        both = await s.call("batch", ops=[{"tool": "append_section", "args": a} for a in args])
        later = await s.call("edit_text", path="other.md", old="- ai too", new="- ai too, v2")
    before = {p: (vault / p).read_text() for p in ("w.md", "other.md")}
    head = git(vault, "rev-parse", "HEAD")
    with pytest.raises(RevertConflict) as info:
        revert(vault, [both["commit"]])
    assert info.value.paths == ["other.md"]
    assert [c.sha for c in info.value.blockers] == [later["commit"]]
    # w.md alone would have gone; nothing at all was written
    assert {p: (vault / p).read_text() for p in before} == before
    assert git(vault, "rev-parse", "HEAD") == head and clean(vault)


async def test_a_blocker_already_reverted_is_not_in_the_way(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        target = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        on_it = await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, v2")
        back = await s.call("edit_text", path="w.md", old="- ai line, v2", new="- ai line, v3")
    undo = revert(vault, [back["commit"]])  # the newest edit is undone: v2 is back
    with pytest.raises(RevertConflict) as info:
        plan_revert(vault, [target["commit"]])
    shas = [c.sha for c in info.value.blockers]
    assert shas == [on_it["commit"]]  # neither the reverted edit nor its revert is listed
    assert back["commit"] not in shas and undo not in shas
    revert(vault, [target["commit"], *shas])
    assert (vault / "w.md").read_text() == LOG and clean(vault)


async def test_what_is_not_a_commit_here_is_refused_by_name(vault: Path) -> None:
    git(vault, "checkout", "-q", "-b", "side")
    (vault / "w.md").write_text("# on a side branch\n")
    git(vault, "commit", "-qam", "side")
    side = git(vault, "rev-parse", "HEAD").strip()
    git(vault, "checkout", "-q", "-")
    for bad in (side, "0123456789abcdef", ""):
        with pytest.raises(ActionError, match="not a commit on this branch"):
            plan_revert(vault, [bad])
    assert clean(vault)
