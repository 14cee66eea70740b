"""A note's encoding is the owner's, not the model's: a UTF-8 BOM and old-Mac (CR-only) line
endings survive every write tool, on disk and in git, and neither shows in what the model reads.

The model never sees a BOM (reads strip it), so the write path keeps it; the hash the model is
given stays the one the next write checks against. A lone CR ends a line (as CommonMark and
Obsidian read it), so headings in a CR-only note are found and the note stays CR-only.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from server.notes.note import content_hash

from .conftest import git

pytestmark = pytest.mark.anyio

BOM = b"\xef\xbb\xbf"
BOM_NOTE = "\ufeff---\ntitle: B\n---\n# Log\nx\n".encode()


def head_bytes(root: Path, rel: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(root), "show", f"HEAD:{rel}"], capture_output=True, check=True
    ).stdout


def on_disk_and_in_git(root: Path, rel: str) -> bytes:
    data = (root / rel).read_bytes()
    assert head_bytes(root, rel) == data, "the commit holds other bytes than the file"
    assert git(root, "status", "--porcelain") == ""
    return data


def diff_lines(res: dict[str, Any]) -> list[str]:
    """The changed lines of the tool result's diff (no headers)."""
    return [
        ln
        for ln in res["diff"].splitlines()
        if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
    ]


# ------------------------------------------------------------------------------------------------
# the BOM


async def test_append_section_keeps_the_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    async with connect(root) as s:
        res = await s.call("append_section", path="bom.md", heading="Log", content="added")
    data = on_disk_and_in_git(root, "bom.md")
    assert data == BOM + b"---\ntitle: B\n---\n# Log\nx\n\nadded\n"
    assert diff_lines(res) == ["+", "+added"]  # the BOM is not a change: not in the diff
    assert git(root, "show", "--numstat", "--format=", "HEAD").split() == ["2", "0", "bom.md"]
    assert res["hash"] == content_hash(data)


async def test_update_frontmatter_keeps_the_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    async with connect(root) as s:
        res = await s.call("update_frontmatter", path="bom.md", set={"status": "open"})
    data = on_disk_and_in_git(root, "bom.md")
    assert data == BOM + b"---\ntitle: B\nstatus: open\n---\n# Log\nx\n"
    assert diff_lines(res) == ["+status: open"]
    numstat = git(root, "show", "--numstat", "--format=", "HEAD").split()
    assert numstat == ["1", "0", "bom.md"]  # line 1 (with its BOM) untouched in git too


async def test_edit_text_keeps_the_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    async with connect(root) as s:
        res = await s.call("edit_text", path="bom.md", old="x\n", new="y\n")
    data = on_disk_and_in_git(root, "bom.md")
    assert data == BOM + b"---\ntitle: B\n---\n# Log\ny\n"
    assert diff_lines(res) == ["-x", "+y"]
    assert git(root, "show", "--numstat", "--format=", "HEAD").split() == ["1", "1", "bom.md"]


async def test_edit_text_of_the_first_line_keeps_the_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    async with connect(root) as s:
        await s.call("edit_text", path="bom.md", old="---\ntitle: B", new="---\ntitle: C")
    assert on_disk_and_in_git(root, "bom.md") == BOM + b"---\ntitle: C\n---\n# Log\nx\n"


async def test_replace_doc_keeps_the_bom_and_the_hashes_chain(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    async with connect(root) as s:
        read = await s.call("read_doc", path="bom.md")
        assert "\ufeff" not in read["content"]
        assert read["content"].startswith("---\ntitle: B")
        res = await s.call(
            "replace_doc",
            path="bom.md",
            content="---\ntitle: B\n---\n# Log\nnew\n",
            hash=read["hash"],
        )
        data = on_disk_and_in_git(root, "bom.md")
        assert data == BOM + b"---\ntitle: B\n---\n# Log\nnew\n"
        assert diff_lines(res) == ["-x", "+new"]
        # the hash a write returns is the one the next read shows and the next write checks
        again = await s.call("read_doc", path="bom.md")
        assert res["hash"] == again["hash"] == content_hash(data)
        res2 = await s.call(
            "replace_doc",
            path="bom.md",
            content="---\ntitle: B\n---\n# Log\nnewer\n",
            hash=res["hash"],
        )
        await s.call("append_section", path="bom.md", heading="Log", content="z", hash=res2["hash"])
    assert on_disk_and_in_git(root, "bom.md") == BOM + b"---\ntitle: B\n---\n# Log\nnewer\n\nz\n"


async def test_a_write_that_changes_nothing_in_a_bom_note_commits_nothing(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    before = git(root, "rev-parse", "HEAD")
    async with connect(root) as s:
        read = await s.call("read_doc", path="bom.md")
        res = await s.call("replace_doc", path="bom.md", content=read["content"], hash=read["hash"])
        assert res.get("commit") is None and res["noop"] is True
        res = await s.call("update_frontmatter", path="bom.md", set={"title": "B"})
        assert res.get("commit") is None and res["noop"] is True
    assert git(root, "rev-parse", "HEAD") == before
    assert (root / "bom.md").read_bytes() == BOM_NOTE


async def test_batch_keeps_the_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"bom.md": BOM_NOTE, "plain.md": "# Log\nx\n"})
    async with connect(root) as s:
        res = await s.call(
            "batch",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "bom.md", "heading": "Log", "content": "a"},
                },
                {"tool": "update_frontmatter", "args": {"path": "bom.md", "set": {"s": 1}}},
                {
                    "tool": "append_section",
                    "args": {"path": "plain.md", "heading": "Log", "content": "b"},
                },
            ],
        )
    assert on_disk_and_in_git(root, "bom.md") == BOM + b"---\ntitle: B\ns: 1\n---\n# Log\nx\n\na\n"
    assert on_disk_and_in_git(root, "plain.md") == b"# Log\nx\n\nb\n"  # no BOM added to others
    hashes = {r["path"]: r["hash"] for r in res["results"]}
    assert hashes["bom.md"] == content_hash((root / "bom.md").read_bytes())


async def test_bom_note_reads_and_searches_without_the_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault(
        {"bom.md": "\ufeff---\ntitle: Breadbox\ntags: [k]\n---\n# Log\nsourdough\n".encode()}
    )
    async with connect(root) as s:
        read = await s.call("read_doc", path="bom.md")
        assert "\ufeff" not in read["content"] and read["title"] == "Breadbox"
        assert read["tags"] == ["k"]
        await s.call("append_section", path="bom.md", heading="Log", content="rye")
        hits = (await s.call("search_text", query="rye"))["hits"]
        assert [h["path"] for h in hits] == ["bom.md"]
        read = await s.call("read_doc", path="bom.md")
        assert "\ufeff" not in read["content"] and read["title"] == "Breadbox"


async def test_a_new_note_gets_no_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"bom.md": BOM_NOTE})
    async with connect(root) as s:
        await s.call("create_doc", path="new.md", body="# New\n")
    assert not (root / "new.md").read_bytes().startswith(BOM)


# ------------------------------------------------------------------------------------------------
# old-Mac line endings: a lone CR ends each line

CR_NOTE = b"# Log\rold mac\rline\r"


async def test_append_section_finds_a_heading_in_a_cr_note(connect: Any, make_vault: Any) -> None:
    root = make_vault({"mac.md": CR_NOTE})
    async with connect(root) as s:
        res = await s.call("append_section", path="mac.md", heading="Log", content="added\nmore")
    assert on_disk_and_in_git(root, "mac.md") == b"# Log\rold mac\rline\r\radded\rmore\r"
    assert diff_lines(res) == ["+", "+added", "+more"]


async def test_append_section_in_a_cr_note_with_several_sections(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"mac.md": b"# T\r\r## Log\r- a\r\r## Notes\rend"})
    async with connect(root) as s:
        await s.call("append_section", path="mac.md", heading="Log", content="- b")
        await s.call("append_section", path="mac.md", heading="Notes", content="more")
        await s.call("append_section", path="mac.md", heading="Ideas", content="new")
    assert on_disk_and_in_git(root, "mac.md") == (
        b"# T\r\r## Log\r- a\r- b\r\r## Notes\rend\r\rmore\r\r## Ideas\rnew\r"
    )


async def test_edit_text_in_a_cr_note(connect: Any, make_vault: Any) -> None:
    root = make_vault({"mac.md": CR_NOTE})
    async with connect(root) as s:
        res = await s.call("edit_text", path="mac.md", old="old mac\nline", new="one\ntwo\nthree")
    assert on_disk_and_in_git(root, "mac.md") == b"# Log\rone\rtwo\rthree\r"
    assert diff_lines(res) == ["-old mac", "-line", "+one", "+two", "+three"]


async def test_replace_doc_keeps_a_cr_notes_line_endings(connect: Any, make_vault: Any) -> None:
    """The model writes LF: the note's lone CRs were replaced by LF (every line changed in git)."""
    root = make_vault({"mac.md": CR_NOTE})
    async with connect(root) as s:
        h = (await s.call("read_doc", path="mac.md"))["hash"]
        await s.call("replace_doc", path="mac.md", hash=h, content="# Log\nold mac\nline\nnew\n")
    assert on_disk_and_in_git(root, "mac.md") == b"# Log\rold mac\rline\rnew\r"


async def test_update_frontmatter_in_a_cr_note(connect: Any, make_vault: Any) -> None:
    root = make_vault({"mac.md": b"---\rtitle: M\r# why: kept\rtags: [a]\r---\r# Log\rx\r"})
    async with connect(root) as s:
        await s.call("update_frontmatter", path="mac.md", set={"status": "open"}, add_tags=["b"])
    assert on_disk_and_in_git(root, "mac.md") == (
        b"---\rtitle: M\r# why: kept\rtags: [a, b]\rstatus: open\r---\r# Log\rx\r"
    )


async def test_update_frontmatter_adds_frontmatter_to_a_cr_note(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"mac.md": CR_NOTE})
    async with connect(root) as s:
        await s.call("update_frontmatter", path="mac.md", set={"status": "open"})
    assert on_disk_and_in_git(root, "mac.md") == b"---\rstatus: open\r---\r" + CR_NOTE


async def test_cr_note_with_bom(connect: Any, make_vault: Any) -> None:
    root = make_vault({"mac.md": BOM + b"---\rtitle: M\r---\r# Log\rx\r"})
    async with connect(root) as s:
        await s.call("append_section", path="mac.md", heading="Log", content="y")
        await s.call("update_frontmatter", path="mac.md", set={"n": 2})
    assert on_disk_and_in_git(root, "mac.md") == BOM + b"---\rtitle: M\rn: 2\r---\r# Log\rx\r\ry\r"


async def test_cr_note_reads_with_its_outline_and_sections(connect: Any, make_vault: Any) -> None:
    root = make_vault({"mac.md": b"---\rtitle: M\r---\r# Top\rintro\r## Log\rsourdough\r"})
    async with connect(root) as s:
        read = await s.call("read_doc", path="mac.md", section="Log")
        assert "sourdough" in read["content"] and "intro" not in read["content"]
        whole = await s.call("read_doc", path="mac.md")
        assert whole["title"] == "M"
        hits = (await s.call("search_text", query="sourdough"))["hits"]
        assert [h["path"] for h in hits] == ["mac.md"]


async def test_mixed_cr_and_lf_note_loses_nothing(connect: Any, make_vault: Any) -> None:
    """A note mixing lone CRs and LFs (pasted text): its heading is found, each existing line
    keeps its own ending, the new lines take the ending most of the note uses."""
    root = make_vault({"mix.md": b"# Log\rmac one\rmac two\runix\n# Other\nz"})
    async with connect(root) as s:
        await s.call("append_section", path="mix.md", heading="Log", content="added")
        await s.call("append_section", path="mix.md", heading="Other", content="more")
    assert on_disk_and_in_git(root, "mix.md") == (
        b"# Log\rmac one\rmac two\runix\n\radded\r# Other\nz\r\rmore\r"
    )


async def test_crlf_notes_are_unchanged(connect: Any, make_vault: Any) -> None:
    """The CRLF mechanism this extends: still CRLF, also with a stray lone CR in a line."""
    root = make_vault({"win.md": b"---\r\ntitle: W\r\n---\r\n# Log\r\nx\r\n"})
    async with connect(root) as s:
        await s.call("append_section", path="win.md", heading="Log", content="y\nz")
        await s.call("update_frontmatter", path="win.md", set={"n": 1})
        await s.call("edit_text", path="win.md", old="y\nz", new="w")
    assert on_disk_and_in_git(root, "win.md") == (
        b"---\r\ntitle: W\r\nn: 1\r\n---\r\n# Log\r\nx\r\n\r\nw\r\n"
    )
