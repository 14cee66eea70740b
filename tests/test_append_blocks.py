"""append_section sets its text apart from the section's last block, through the real server.

Glued to the section's last line, the AI's text joined the owner's block and changed how the
note renders: a table row, a line of a callout, part of an HTML block, the end of a paragraph.
Only list items added to a list stay tight (a log of `- ` lines is one list)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import git

pytestmark = pytest.mark.anyio

NOTES = {
    "table.md": "# T\n\n## Data\n| a | b |\n| - | - |\n| 1 | 2 |\n\n## Next\nend\n",
    "callout.md": "# C\n\n## Tips\n> [!tip] Title\n> keep it short\n",
    "html.md": "# H\n\n## Box\n<h6>small print</h6>\n\n## Next\nend\n",
    "para.md": "# P\n\n## Notes\nthe owner's paragraph\n## Next\nend\n",
    "list.md": "# L\n\n## Log\n- Mon: one\n  carried on\n\n## Next\nend\n",
    "empty.md": "# E\n\n## Log\n\n## Next\nend\n",
}


def changed_lines(diff: str) -> list[str]:
    """The + and - lines of a diff, headers left out: the tool's and git's must agree."""
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(dict(NOTES))


@pytest.mark.parametrize(
    ("path", "heading", "content", "expected"),
    [
        (
            "table.md",
            "Data",
            "After the table.",
            "## Data\n| a | b |\n| - | - |\n| 1 | 2 |\n\nAfter the table.\n\n## Next\n",
        ),
        (
            "callout.md",
            "Tips",
            "Not part of the tip.",
            "> [!tip] Title\n> keep it short\n\nNot part of the tip.\n",
        ),
        ("html.md", "Box", "Plain text.", "<h6>small print</h6>\n\nPlain text.\n\n## Next\n"),
        ("para.md", "Notes", "A new paragraph.", "paragraph\n\nA new paragraph.\n## Next\n"),
        (
            "list.md",
            "Log",
            "---\nfake: frontmatter\n---",
            "  carried on\n\n---\nfake: frontmatter\n---\n\n## Next\n",
        ),
        ("list.md", "Log", "A paragraph after the list.", "  carried on\n\nA paragraph"),
    ],
)
async def test_append_is_set_apart_from_the_sections_last_block(
    connect: Any, vault: Path, path: str, heading: str, content: str, expected: str
) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path=path, heading=heading, content=content)
    text = (vault / path).read_text()
    assert expected in text, text
    # nothing of the owner's moved: the note is its old text with the block inserted once
    assert text.replace("\n" + content + "\n", "", 1) == NOTES[path]
    assert changed_lines(res["diff"]) == changed_lines(git(vault, "show", "--format=", "HEAD"))
    # only additions: the content and one blank line (which git, like the tool, may show after
    # the content when a blank line already follows it)
    added = sorted(["+", *(f"+{ln}" for ln in content.split("\n"))])
    assert sorted(changed_lines(res["diff"])) == added


async def test_list_items_appended_to_a_list_stay_one_list(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call(
            "append_section", path="list.md", heading="Log", content="- Tue: two\n- [ ] Wed"
        )
        await s.call("append_section", path="empty.md", heading="Log", content="first")
    assert (vault / "list.md").read_text() == (
        "# L\n\n## Log\n- Mon: one\n  carried on\n- Tue: two\n- [ ] Wed\n\n## Next\nend\n"
    )
    assert changed_lines(res["diff"]) == ["+- Tue: two", "+- [ ] Wed"]
    # an empty section: the text follows its heading, no blank line needed
    assert (vault / "empty.md").read_text() == "# E\n\n## Log\nfirst\n\n## Next\nend\n"


async def test_a_new_subsection_is_set_apart_from_an_html_block(connect: Any, vault: Path) -> None:
    """A missing heading under a parent goes after the parent's last block, a blank line
    between: right after an HTML block the heading would have been part of it."""
    async with connect(vault) as s:
        res = await s.call("append_section", path="html.md", heading="Box/Small", content="x")
    assert (vault / "html.md").read_text() == (
        "# H\n\n## Box\n<h6>small print</h6>\n\n### Small\nx\n\n## Next\nend\n"
    )
    assert changed_lines(res["diff"]) == changed_lines(git(vault, "show", "--format=", "HEAD"))
