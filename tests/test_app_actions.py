"""Dashboard actions and history on real repos, with commits made by the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.services.history import commit_changes, read_commits
from app.services.revert import RevertConflict, revert

from .conftest import git

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"w.md": "# W\n\n## Log\n- one\n", "other.md": "# Other\n"})


async def test_history_reads_ai_and_human_commits(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- two")
        await s.call("create_doc", path="n/new.md", body="# New\n")
    commits = read_commits(vault)
    assert [c.subject for c in commits] == [
        "create_doc: n/new.md",
        "append_section: w.md § Log",
        "import",
    ]
    ai = commits[1]
    assert ai.is_ai and ai.tool == "append_section" and ai.client and ai.files == ("w.md",)
    assert commits[2].action == "import" and not commits[2].is_ai
    (change,) = commit_changes(vault, ai.sha)
    assert (change.path, change.status) == ("w.md", "M")
    assert change.old.endswith("- one\n") and change.new.endswith("- one\n- two\n")
    (added,) = commit_changes(vault, commits[0].sha)
    assert added.status == "A" and added.old == "" and added.new == "# New\n"


async def test_revert_a_clean_ai_commit(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    sha = revert(vault, [res["commit"]])
    assert (vault / "w.md").read_text() == "# W\n\n## Log\n- one\n"
    msg = git(vault, "log", "-1", "--format=%an|%s|%b")
    assert msg.startswith('Test Owner|Revert "append_section: w.md § Log"|')
    assert "Vaultwatch-Action: revert" in msg and res["commit"] in msg
    assert (
        read_commits(vault, limit=1)[0].action == "revert"
        and sha == git(vault, "rev-parse", "HEAD").strip()
    )


async def test_revert_with_pending_human_edits_keeps_them(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    (vault / "w.md").write_text(
        (vault / "w.md").read_text().replace("# W\n", "# W (edited by me)\n")
    )
    (vault / "other.md").write_text("# Other, unsaved work\n")
    revert(vault, [res["commit"]])
    text = (vault / "w.md").read_text()
    assert "ai line" not in text and "# W (edited by me)" in text  # the owner's edit survives
    assert git(vault, "log", "-2", "--format=%s").split("\n")[1] == "snapshot: w.md"
    assert (vault / "other.md").read_text() == "# Other, unsaved work\n"  # untouched, uncommitted


async def test_conflicting_revert_leaves_the_vault_unchanged_and_names_the_blockers(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        first = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        second = await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, edited")
    before = (
        (vault / "w.md").read_text(),
        git(vault, "rev-parse", "HEAD"),
        git(vault, "status", "--porcelain"),
    )
    with pytest.raises(RevertConflict) as info:
        revert(vault, [first["commit"]])
    assert [c.sha for c in info.value.blockers] == [second["commit"]]
    after = (
        (vault / "w.md").read_text(),
        git(vault, "rev-parse", "HEAD"),
        git(vault, "status", "--porcelain"),
    )
    assert after == before
    assert not (vault / ".git/REVERT_HEAD").exists() and not (vault / ".git/sequencer").exists()
    # offered: revert the blockers too, newest first, as one action
    revert(vault, [first["commit"], second["commit"]])
    assert (vault / "w.md").read_text() == "# W\n\n## Log\n- one\n"
    assert git(vault, "log", "-1", "--format=%s").strip() == "Revert 2 commits"
