"""A code fence the AI opens and never closes makes the note worse, through the real server.

append_section(content="```python\\nprint('x')") was committed, and every later heading of the
note was gone: CommonMark (Obsidian, every read of ours) takes the rest of the note for code.
Such a fence is a problem of the note now, as broken YAML is: no write may add one, and a note
that already had one stays writable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import git, head

pytestmark = pytest.mark.anyio

BOOKMARKS = (
    "# Bookmarks\n\n## Add a bookmark\nUse the star.\n\n```bash\nls\n```\n\n"
    "## Remove a bookmark\nUse the menu.\n"
)
OWNER_OPEN = "# Draft\n\n## Intro\nhello\n\n## Code\n~~~~\nnever closed\n~~~\n"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"Bookmarks.md": BOOKMARKS, "draft.md": OWNER_OPEN})


async def test_append_with_an_unclosed_fence_is_refused(connect: Any, vault: Path) -> None:
    start = head(vault)
    async with connect(vault) as s:
        msg = await s.error(
            "append_section",
            path="Bookmarks.md",
            heading="Add a bookmark",
            content="```python\nprint('x')",
        )
        assert "unclosed_fence" in msg and "never closes" in msg and "```" in msg, msg
        assert "end the code with a line ```" in msg, msg
        # the later fence (```bash) does not rescue it: ## Remove a bookmark would be code
        msg = await s.error(
            "append_section", path="Bookmarks.md", heading="Add a bookmark", content="```python"
        )
        assert "unclosed_fence" in msg, msg
        read = await s.call("read_doc", path="Bookmarks.md", section="Remove a bookmark")
        assert read["content"].startswith("## Remove a bookmark")
        # a closed fence is fine
        ok = await s.call(
            "append_section",
            path="Bookmarks.md",
            heading="Add a bookmark",
            content="```python\nprint('x')\n```",
        )
        read = await s.call("read_doc", path="Bookmarks.md", section="Remove a bookmark")
        assert read["content"].startswith("## Remove a bookmark")
    assert ok["commit"] == head(vault)
    assert git(vault, "rev-list", "--count", f"{start}..HEAD").strip() == "1"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("edit_text", {"path": "Bookmarks.md", "old": "Use the menu.", "new": "```\nmenu"}),
        (
            "create_doc",
            {"path": "new.md", "body": "# New\n\n~~~~\ncode\n~~~\n\n## Later\ntext\n"},
        ),
        (
            "batch",
            {
                "ops": [
                    {
                        "tool": "edit_text",
                        "args": {"path": "Bookmarks.md", "old": "Use the menu.", "new": "x"},
                    },
                    {
                        "tool": "edit_text",
                        "args": {"path": "Bookmarks.md", "old": "x", "new": "```js\nx"},
                    },
                ]
            },
        ),
    ],
)
async def test_no_write_may_leave_a_fence_open(
    connect: Any, vault: Path, tool: str, args: dict[str, Any]
) -> None:
    start = head(vault)
    async with connect(vault) as s:
        msg = await s.error(tool, **args)
    assert "unclosed_fence" in msg and "is never closed" in msg, msg
    assert "close the code block" in msg, msg
    assert head(vault) == start and not (vault / "new.md").exists()
    assert (vault / "Bookmarks.md").read_text() == BOOKMARKS


async def test_replace_doc_may_not_leave_a_fence_open(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        h = (await s.call("read_doc", path="Bookmarks.md"))["hash"]
        msg = await s.error(
            "replace_doc", path="Bookmarks.md", hash=h, content=BOOKMARKS.replace("```\n\n", "")
        )
    assert "unclosed_fence" in msg and "line 6" in msg, msg
    assert (vault / "Bookmarks.md").read_text() == BOOKMARKS


async def test_a_note_whose_fence_was_already_open_stays_writable(
    connect: Any, vault: Path
) -> None:
    """~~~ does not close ~~~~ (a closing fence is at least as long): the owner's note had a
    fence open before any write, so writes to it go on, with the problem shown as a warning."""
    async with connect(vault) as s:
        res = await s.call("append_section", path="draft.md", heading="Intro", content="more")
        assert res["commit"] and any("never closed" in w for w in res["warnings"]), res
        res = await s.call("edit_text", path="draft.md", old="hello", new="hi")
        assert res["commit"], res
    assert (vault / "draft.md").read_text() == OWNER_OPEN.replace("hello\n", "hi\n\nmore\n")


async def test_fences_are_read_as_obsidian_reads_them(connect: Any, make_vault: Any) -> None:
    """Obsidian's help writes fences inside <pre> blocks (```</code></pre> is no fence there),
    and ``` followed by text with backticks is inline code, not a fence: neither is an
    unclosed fence, and every heading after them is found. ```yaml does not close a fence."""
    root = make_vault(
        {
            "pre.md": "# P\n\n<pre><code>```js\nx\n```</code></pre>\n\n## After\ntext\n",
            "inline.md": "# I\n\n```Stack1``` is a stack\n\n## After\ntext\n",
            "yaml.md": "# Y\n\n```yaml\na: 1\n```yaml\n\n## Inside\n",
        }
    )
    async with connect(root) as s:
        for path in ("pre.md", "inline.md"):
            read = await s.call("read_doc", path=path, section="After")
            assert read["content"].startswith("## After"), read
            res = await s.call("append_section", path=path, heading="After", content="more")
            assert "warnings" not in res, res
        msg = await s.error("read_doc", path="yaml.md", section="Inside")
        assert "no heading" in msg, msg
