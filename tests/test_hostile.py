"""Hostile and malformed input: every call answers (a result or an isError), none crashes or
writes when it reports failure."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import git

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "notes/a.md": "# A\n\n## Log\n- one\n",
            "notes/Upper.md": "# Upper\n",
            "bad/latin1.md": "# Caf\xe9\n".encode("latin-1"),
            "bad/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "bad/conflicted.md": "# C\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\n",
            "big/longline.md": "# L\n" + "x" * 1_000_000 + "\n",
        }
    )


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("notes/%2e%2e/%2e%2e/etc/passwd.md", "path_encoded"),
        ("notes%2fa.md", "path_encoded"),
        ("notes/a.md\x00.png", "path_nul"),
        ("notes\\a.md", "path_separator"),
        ("notes/\x07bell.md", "path_control"),
        ("/etc/passwd", "path_absolute"),
        (".git/config", "path_hidden"),
        (".obsidian/app.json", "path_hidden"),
    ],
)
async def test_path_tricks_are_refused_by_name(
    connect: Any, vault: Path, raw: str, code: str
) -> None:
    async with connect(vault) as s:
        read = await s.error("read_doc", path=raw)
        write = await s.error("append_section", path=raw, heading="x", content="y")
    assert "rejected" in write
    assert read and write


async def test_case_twins_are_refused(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        msg = await s.error("create_doc", path="notes/upper.md", body="# twin\n")
    assert "path_twin" in msg and "notes/Upper.md" in msg
    assert not (vault / "notes/upper.md").exists()


async def test_symlink_loops_and_outside_links(connect: Any, vault: Path, tmp_path: Path) -> None:
    os.symlink(vault / "notes" / "loop2.md", vault / "notes" / "loop1.md")
    os.symlink(vault / "notes" / "loop1.md", vault / "notes" / "loop2.md")
    (tmp_path / "outside.md").write_text("# outside\n")
    os.symlink(tmp_path / "outside.md", vault / "notes" / "out.md")
    async with connect(vault) as s:
        listed = {d["path"] for d in (await s.call("list_docs", limit=200))["docs"]}
        assert "notes/out.md" not in listed and "notes/loop1.md" not in listed
        assert "outside" in await s.error("read_doc", path="notes/out.md")
        msg = await s.error("append_section", path="notes/out.md", heading="x", content="y")
        assert "rejected" in msg
    assert (tmp_path / "outside.md").read_text() == "# outside\n"


async def test_files_that_are_not_text_are_read_with_a_warning_and_never_written(
    connect: Any, vault: Path
) -> None:
    head = git(vault, "rev-parse", "HEAD")
    async with connect(vault) as s:
        latin = await s.call("read_doc", path="bad/latin1.md")
        assert "UTF-8" in latin["problems"][0]
        binary = await s.call("read_doc", path="bad/binary.md")
        assert any("NUL" in p or "UTF-8" in p for p in binary["problems"])
        for path in ("bad/latin1.md", "bad/binary.md"):
            msg = await s.error("append_section", path=path, heading="x", content="y")
            assert "not_text" in msg
    assert (vault / "bad/latin1.md").read_bytes() == "# Caf\xe9\n".encode("latin-1")
    assert git(vault, "rev-parse", "HEAD") == head


async def test_conflict_markers(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("read_doc", path="bad/conflicted.md")
        assert "conflict markers" in res["problems"][0]
        msg = await s.error(
            "append_section",
            path="notes/a.md",
            heading="Log",
            content="<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> other",
        )
        assert "conflict_markers" in msg


async def test_huge_payloads_and_lines(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        msg = await s.error(
            "append_section", path="notes/a.md", heading="Log", content="x" * 10_000_000
        )
        assert "too_large" in msg
        r = await s.client.call_tool("read_doc", {"path": "big/longline.md"})
        assert not r.is_error and len(r.content[0].text) <= s.vault.config.limits.result_chars
        found = await s.call("search_text", query="xxxxxxxx")
        assert found["hits"] and len(found["hits"][0]["snippets"][0]) < 400


async def test_yaml_bomb_and_deep_nesting_in_a_note(connect: Any, vault: Path) -> None:
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i, k in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        bomb += f"{k}: &{k} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
    bomb += "---\n# Bomb\n"
    deep = "---\nx: " + "[" * 2000 + "]" * 2000 + "\n---\n# Deep\n"
    (vault / "notes/bomb.md").write_text(bomb)
    (vault / "notes/deep.md").write_text(deep)
    async with connect(vault) as s:
        listed = {d["path"]: d for d in (await s.call("list_docs", limit=200))["docs"]}
        assert listed["notes/bomb.md"]["problems"] and listed["notes/deep.md"]["problems"]
        assert (await s.call("read_doc", path="notes/bomb.md"))["problems"]
        # a small change next to the bomb is allowed, and says the frontmatter is still bad
        res = await s.call("update_frontmatter", path="notes/bomb.md", set={"k": 1})
        assert any("frontmatter" in w for w in res["warnings"])
        assert "rejected" in await s.error("update_frontmatter", path="notes/deep.md", set={"k": 1})


async def test_nfc_nfd_twins_are_refused(connect: Any, vault: Path) -> None:
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
    (vault / "notes" / nfc).write_text("# one\n")
    (vault / "notes" / nfd).write_text("# two\n")
    async with connect(vault) as s:
        assert "two files" in await s.error("read_doc", path=f"notes/{nfc}")
        msg = await s.error("append_section", path=f"notes/{nfc}", heading="x", content="y")
        assert "path_twin" in msg
    assert (vault / "notes" / nfc).read_text() == "# one\n" and (
        vault / "notes" / nfd
    ).read_text() == "# two\n"
