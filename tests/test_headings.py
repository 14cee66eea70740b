"""Headings are addressable whatever they contain (issue 28), through the real server: a heading
named exactly wins over the `/` path reading and over a looser match (### `vault` is not its
parent ## Vault), the outline's own paths (cut ones too) name their heading and never create a
new one, and a heading that is not there is answered with the closest ones by full path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.notes.note import parse_doc
from server.notes.reading import outline

pytestmark = pytest.mark.anyio

CODE = "## Vault\nthe vault\n\n### `vault`\nthe code\n\n### Backup\nnightly\n\n## Other\nend\n"
SLASH = (
    "# S\n\n## TCP/UDP 代理\none\n\n## UDP 代理\ntwo\n\n## a // b\nthree\n\n"
    "## trailing/\nfour\n\n## /leading\nfive\n\n## Foo\nsix\n\n## foo\nseven\n\n"
    "## [[Note|alias]] 链接\neight\n\n## 第一章：开始\nnine\n\n## " + "长" * 400 + "\nten\n"
)


def after(text: str, heading_line: str) -> str:
    """The first non-blank line after `heading_line`'s section's first body line."""
    lines = text.splitlines()
    return next(ln for ln in lines[lines.index(heading_line) + 2 :] if ln.strip())


async def test_a_code_span_heading_is_not_its_parent(connect: Any, make_vault: Any) -> None:
    root = make_vault({"c.md": CODE})
    async with connect(root) as s:
        await s.call("append_section", path="c.md", heading="`vault`", content="added")
    assert (root / "c.md").read_text() == (
        "## Vault\nthe vault\n\n### `vault`\nthe code\n\nadded\n\n### Backup\nnightly\n\n"
        "## Other\nend\n"
    )


async def test_every_outline_path_names_its_heading(connect: Any, make_vault: Any) -> None:
    """Each heading's path exactly as read_doc's outline prints it (the 400-character one cut
    to fit) appends under that heading: no new heading, none other touched."""
    root = make_vault({"s.md": SLASH})
    # read_doc's outline (it shows one when the note is paged; this note fits in one read)
    paths = [row["heading"] for row in outline(parse_doc("s.md", SLASH.encode()))][1:]
    async with connect(root) as s:
        assert len(paths) == 10 and paths[-1].endswith("…"), paths
        for i, p in enumerate(paths):
            await s.call("append_section", path="s.md", heading=p, content=f"added {i}")
    text = (root / "s.md").read_text()
    heads = [ln for ln in SLASH.splitlines() if ln.startswith("## ")]
    assert [ln for ln in text.splitlines() if ln.startswith("#")] == ["# S", *heads]
    for i, h in enumerate(heads):
        assert after(text, h) == f"added {i}", (h, text)


async def test_headings_by_their_own_text(connect: Any, make_vault: Any) -> None:
    """A heading's text as written finds it, `/`, case and CJK included; one that names
    nothing with a `/` in it becomes a heading of that text, not of its last part."""
    root = make_vault({"s.md": SLASH})
    async with connect(root) as s:
        for heading, line in (
            ("TCP/UDP 代理", "## TCP/UDP 代理"),
            ("UDP 代理", "## UDP 代理"),
            ("a // b", "## a // b"),
            ("trailing/", "## trailing/"),
            ("/leading", "## /leading"),
            ("Foo", "## Foo"),
            ("foo", "## foo"),
            ("[[Note|alias]] 链接", "## [[Note|alias]] 链接"),
            ("第一章：开始", "## 第一章：开始"),
        ):
            await s.call("append_section", path="s.md", heading=heading, content=f"+{heading}")
            assert after((root / "s.md").read_text(), line) == f"+{heading}", heading
        await s.call("append_section", path="s.md", heading="HTTP/3", content="new one")
    assert (root / "s.md").read_text().endswith("\n\n## HTTP/3\nnew one\n")


async def test_a_missing_heading_names_the_closest_by_full_path(
    connect: Any, make_vault: Any
) -> None:
    sections = "".join(f"## Part {i}\n\n### Step {i}\nx\n\n" for i in range(300))
    long = "## " + "目录" * 3000 + "\n\n### Install guide\nhow\n"
    root = make_vault({"big.md": f"# Big\n\n{sections}{long}"})
    async with connect(root) as s:
        msg = await s.error("read_doc", path="big.md", section="Instal guide")
        assert "no heading 'Instal guide'" in msg and "Install guide" in msg, msg
        assert "Big/Part 1/Step 1'" not in msg or msg.index("Install guide") < msg.index("Step")
        assert "more: read_doc without section lists them" in msg
        # its path is too long to pass: its own text, which names it alone, is shown instead
        shown = msg.split("pass them: ", 1)[1].split("; ")[0].strip("'")
        assert shown == "Install guide", msg
        res = await s.call("read_doc", path="big.md", section=shown)
        assert res["content"] == "### Install guide\nhow\n"
        assert len(json.dumps(msg, ensure_ascii=False)) < 4_000
        # the long heading itself: its path cut to fit, which names it as shown
        msg = await s.error("read_doc", path="big.md", section="目录目")
        shown = msg.split("pass them: ", 1)[1].split("; ")[0].strip("'")
        assert shown.startswith("Big/目录") and shown.endswith("…"), msg
        res = await s.call("read_doc", path="big.md", section=shown)
        assert res["section"].startswith(shown[:-1]) and "Install guide" in res["content"]
