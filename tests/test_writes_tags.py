"""Every tag the AI writes is one Obsidian can use, through the real server.

update_frontmatter(add_tags=["has space"]) wrote a tag Obsidian cannot use (its tags are one
word: letters of any script, digits but not only digits, _, - and / for nesting). Refused now,
naming the tag, the rule and a fix, whichever way the tag comes: add_tags, create_doc's tags or
its fields, set, replace_doc, a batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import head

pytestmark = pytest.mark.anyio

NOTE = "---\ntitle: N\ntags: [crdt]\n---\n# N\ntext\n"
OWNERS = "---\ntags: [owner tag]\n---\n# Mine\ntext\n"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"n.md": NOTE, "mine.md": OWNERS})


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("update_frontmatter", {"path": "n.md", "add_tags": ["has space"]}),
        ("create_doc", {"path": "new.md", "body": "# New\n", "tags": ["has space"]}),
        ("create_doc", {"path": "new.md", "body": "# New\n", "fields": {"tags": ["has space"]}}),
        ("update_frontmatter", {"path": "n.md", "set": {"tags": ["crdt", "has space"]}}),
        (
            "batch",
            {
                "ops": [
                    {"tool": "edit_text", "args": {"path": "n.md", "old": "text", "new": "t"}},
                    {"tool": "update_frontmatter", "args": {"path": "n.md", "add_tags": ["ok"]}},
                    {
                        "tool": "update_frontmatter",
                        "args": {"path": "n.md", "add_tags": ["has space"]},
                    },
                ]
            },
        ),
    ],
)
async def test_a_tag_with_a_space_is_refused(
    connect: Any, vault: Path, tool: str, args: dict[str, Any]
) -> None:
    start = head(vault)
    async with connect(vault) as s:
        msg = await s.error(tool, **args)
    assert "bad_tag" in msg and "'has space'" in msg and "'has-space'" in msg, msg
    assert "Obsidian tags cannot" in msg, msg
    assert head(vault) == start and not (vault / "new.md").exists()
    assert (vault / "n.md").read_text() == NOTE


async def test_replace_doc_may_not_add_such_a_tag(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        h = (await s.call("read_doc", path="n.md"))["hash"]
        msg = await s.error(
            "replace_doc", path="n.md", hash=h, content=NOTE.replace("[crdt]", "[crdt, 1984]")
        )
    assert "bad_tag" in msg and "'1984'" in msg and "only digits" in msg, msg
    assert (vault / "n.md").read_text() == NOTE


async def test_only_digits_is_no_tag(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        msg = await s.error("update_frontmatter", path="n.md", add_tags=["1984"])
    assert "bad_tag" in msg and "'y1984'" in msg, msg


async def test_tags_obsidian_takes_are_written(connect: Any, vault: Path) -> None:
    good = ["系统设计", "crdt/sync", "system-design", "snake_case", "y1984", "2024-q1x"]
    async with connect(vault) as s:
        res = await s.call("update_frontmatter", path="n.md", add_tags=good)
        assert res["commit"]
        res = await s.call(
            "create_doc", path="new.md", body="# New\n", fields={"tags": ["a/b"]}, tags=["c"]
        )
        assert res["created"] is True
    assert "tags: [crdt, 系统设计, crdt/sync, system-design, snake_case, y1984, 2024-q1x]" in (
        vault / "n.md"
    ).read_text(encoding="utf-8")
    # a tag given as a field is a tag: written with the others, not dropped
    assert (vault / "new.md").read_text() == "---\ntags: [c, a/b]\n---\n# New\n"


async def test_the_owners_own_bad_tag_leaves_the_note_writable(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("edit_text", path="mine.md", old="text", new="more text")
    assert res["commit"] and any("'owner tag'" in w for w in res["warnings"]), res
