"""The owner's uncommitted delete or rename is the owner's, never part of an AI commit.

The owner renamed Slides.md to Slides2.md on disk (not committed); create_doc(path="Slides.md")
then committed, as the AI, 2 insertions and the owner's 40 deleted lines. The deletion is now
committed first as the owner's snapshot, as an edit already was, so the AI commit holds only
the AI's change and the tool's diff is git's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from server.write.journal import read_all

from .conftest import git

pytestmark = pytest.mark.anyio

SLIDES = "# Presenting\n\n" + "".join(f"- slide {i}\n" for i in range(38))


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"Slides.md": SLIDES, "other.md": "# Other\n\n## Log\n- one\n"})


def changed_lines(diff: str) -> list[str]:
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def numstat(root: Path, rev: str) -> list[str]:
    return git(root, "show", "--numstat", "--format=", rev).split("\n")[:-1]


def rename_away(root: Path) -> None:
    (root / "Slides.md").rename(root / "Slides2.md")  # as Obsidian's rename does, uncommitted


async def test_a_note_made_where_the_owner_renamed_one_away(connect: Any, vault: Path) -> None:
    rename_away(vault)
    async with connect(vault) as s:
        res = await s.call("create_doc", path="Slides.md", body="# Slides\nnew\n")
    assert res["created"] is True
    log = git(vault, "log", "-2", "--format=%an|%s").split("\n")
    assert log[0].startswith("Claude|create_doc: Slides.md")
    assert log[1] == "Test Owner|snapshot: Slides.md"
    assert numstat(vault, "HEAD") == ["2\t0\tSlides.md"]  # the AI's two lines, nothing else
    assert numstat(vault, "HEAD~1") == ["0\t40\tSlides.md"]  # the owner's deletion, as theirs
    assert changed_lines(res["diff"]) == changed_lines(git(vault, "show", "--format=", "HEAD"))
    # the owner's new name is left for the owner to commit; nothing else is pending
    assert git(vault, "status", "--porcelain") == "?? Slides2.md\n"
    snaps = [e for e in read_all(vault / ".git/vaultwatch/events.jsonl") if e["kind"] == "commit"]
    assert [e["paths"] for e in snaps if e["tool"] == "snapshot"] == [["Slides.md"]]


async def test_a_batch_commits_only_the_ais_change_too(connect: Any, vault: Path) -> None:
    rename_away(vault)
    async with connect(vault) as s:
        res = await s.call(
            "batch",
            ops=[
                {"tool": "create_doc", "args": {"path": "Slides.md", "body": "# Slides\nnew\n"}},
                {
                    "tool": "append_section",
                    "args": {"path": "other.md", "heading": "Log", "content": "- two"},
                },
            ],
        )
    assert sorted(numstat(vault, "HEAD")) == ["1\t0\tother.md", "2\t0\tSlides.md"]
    assert numstat(vault, "HEAD~1") == ["0\t40\tSlides.md"]
    assert sorted(changed_lines(res["diff"])) == sorted(
        changed_lines(git(vault, "show", "--format=", "HEAD"))
    )


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("append_section", {"path": "Slides.md", "heading": "Slides", "content": "- more"}),
        ("edit_text", {"path": "Slides.md", "old": "- slide 1\n", "new": "- one\n"}),
        ("update_frontmatter", {"path": "Slides.md", "set": {"status": "done"}}),
    ],
)
async def test_a_note_the_owner_deleted_is_not_found(
    connect: Any, vault: Path, tool: str, args: dict[str, Any]
) -> None:
    start = git(vault, "rev-parse", "HEAD")
    (vault / "Slides.md").unlink()
    async with connect(vault) as s:
        msg = await s.error(tool, **args)
        assert "not_found" in msg and "create_doc" in msg, msg
        msg = await s.error("batch", ops=[{"tool": tool, "args": args}])
        assert "not_found" in msg, msg
    assert git(vault, "rev-parse", "HEAD") == start  # no commit, not even a snapshot
    assert not (vault / "Slides.md").exists()
    assert git(vault, "status", "--porcelain") == " D Slides.md\n"
