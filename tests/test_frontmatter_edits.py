"""update_frontmatter keeps the owner's comments and blank lines, and never reports a change it did
not make (audit findings 4 and 5): the edit function itself, then the tool through the server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.notes.note import parse_doc
from server.write.edit_base import EditError
from server.write.frontmatter_edits import update_frontmatter
from server.write.journal import read_all

from .conftest import git

# ------------------------------------------------------------------------------------------------
# the edit function


def test_remove_tag_keeps_a_comment_line_inside_the_block_list() -> None:
    text = "---\ntags:\n  - a\n  # owner comment line\n  - b\n---\n# C\n"
    out = update_frontmatter(text, remove_tags=["a"])
    assert out == "---\ntags:\n  # owner comment line\n  - b\n---\n# C\n"


def test_add_tag_to_a_block_list_keeps_comments_and_quoting() -> None:
    text = '---\ntags:\n  - a  # why a\n\n  # owner comment line\n  - "b"\nnext: 1\n---\n# C\n'
    out = update_frontmatter(text, add_tags=["c"])
    assert out == (
        '---\ntags:\n  - a  # why a\n\n  # owner comment line\n  - "b"\n  - c\nnext: 1\n---\n# C\n'
    )


def test_column_zero_comment_between_block_items_stays_inside_the_list() -> None:
    text = "---\ntags:\n- a\n# owner\n- b\ntitle: T\n---\n"
    out = update_frontmatter(text, remove_tags=["b"], add_tags=["c"])
    assert out == "---\ntags:\n- a\n# owner\n- c\ntitle: T\n---\n"
    assert parse_doc("n.md", out.encode()).frontmatter == {"tags": ["a", "c"], "title": "T"}


def test_flow_list_keeps_its_trailing_comment() -> None:
    out = update_frontmatter("---\ntags: [a, b] # owner comment\n---\n# C\n", add_tags=["c"])
    assert out == "---\ntags: [a, b, c] # owner comment\n---\n# C\n"


def test_scalar_keeps_its_trailing_comment_and_spacing() -> None:
    text = "---\nstatus: open  # reopened after Tuesday call\nnext: x\n---\n# K\n"
    out = update_frontmatter(text, {"status": "closed"})
    assert out == "---\nstatus: closed  # reopened after Tuesday call\nnext: x\n---\n# K\n"


def test_a_hash_inside_a_quoted_value_is_not_a_comment() -> None:
    text = '---\ntitle: "a # b"   # owner\n---\n'
    out = update_frontmatter(text, {"title": "c"})
    assert out == "---\ntitle: c   # owner\n---\n"


def test_unset_removes_exactly_the_keys_lines() -> None:
    text = "---\na: 1\n\nb: 2\n\nc: 3\n---\n# U\n"
    assert update_frontmatter(text, unset=["b"]) == "---\na: 1\n\n\nc: 3\n---\n# U\n"
    text = "---\na: 1\n# comment about b\nb: 2\nc:\n  - x\n\n# trailing owner note\n---\n# U\n"
    assert update_frontmatter(text, unset=["a"]) == text.replace("a: 1\n", "")
    assert update_frontmatter(text, unset=["c"]) == text.replace("c:\n  - x\n", "")


def test_any_edit_keeps_blank_lines_after_a_block_value() -> None:
    text = "---\nc:\n  - x\n\n# owner note\nd: 1\n---\n"
    assert update_frontmatter(text, {"d": 2}) == text.replace("d: 1", "d: 2")


def test_unset_keeps_full_line_comments_inside_the_value() -> None:
    text = "---\ntags:\n  - a\n  # owner comment line\n  - b\nx: 1\n---\n"
    assert update_frontmatter(text, unset=["tags"]) == "---\n  # owner comment line\nx: 1\n---\n"


def test_a_comment_inside_a_replaced_value_is_refused_not_dropped() -> None:
    text = "---\nnested:\n  # owner: why a is 1\n  a: 1\n---\n"
    with pytest.raises(EditError) as info:
        update_frontmatter(text, {"nested": {"a": 2}})
    err = info.value
    assert err.code == "comment_in_value"
    assert "line 3" in err.message and "edit_text" in (err.hint or "")


def test_a_literal_block_with_hash_lines_is_content_not_a_comment() -> None:
    text = "---\nnotes: |\n  # heading in the text\n  more\nnext: x\n---\n"
    out = update_frontmatter(text, {"notes": "ai"})
    assert out == "---\nnotes: ai\nnext: x\n---\n"


def test_duplicate_key_is_refused_with_its_lines() -> None:
    text = "---\nstatus: open\ntitle: X\nstatus: waiting\n---\n# D\n"
    for kwargs in ({"set_": {"status": "closed"}}, {"unset": ["status"]}):
        with pytest.raises(EditError) as info:
            update_frontmatter(text, **kwargs)
        assert info.value.code == "duplicate_key"
        assert "lines 2 and 4" in info.value.message and "edit_text" in (info.value.hint or "")
    # a duplicate the call does not touch is left alone, and the change it asks for is made
    out = update_frontmatter(text, {"title": "Y"})
    assert out == text.replace("title: X", "title: Y")


def test_duplicate_tags_key_is_refused_for_tag_changes() -> None:
    text = "---\ntags: [a]\ntags: [b]\n---\n"
    with pytest.raises(EditError) as info:
        update_frontmatter(text, add_tags=["c"])
    assert info.value.code == "duplicate_key"


def test_every_other_key_unchanged_and_every_asked_key_set() -> None:
    # `"status"` (quoted) and `status` are one key to YAML: the guard sees it even if the line
    # matcher did not
    text = '---\n"status": open\nstatus: waiting\n---\n'
    with pytest.raises(EditError) as info:
        update_frontmatter(text, {"status": "closed"})
    assert info.value.code in ("duplicate_key", "edit_unchecked")


def test_the_read_back_refuses_what_the_line_edit_got_wrong() -> None:
    # YAML reads `no:` as the key False: the line matcher takes it for "no", and the edit
    # would leave False gone and "no" added
    with pytest.raises(EditError) as info:
        update_frontmatter("---\nno: 1\nx: 2\n---\n", {"no": 2})
    assert info.value.code == "edit_unchecked" and "False" in info.value.message
    # a quoted value's second line at column 0 looks like a key of its own
    with pytest.raises(EditError) as info:
        update_frontmatter('---\ntitle: "a\nb: c"\nx: 1\n---\n', {"title": "z"})
    assert info.value.code == "edit_unchecked" and "edit_text" in (info.value.hint or "")


def test_removing_the_last_tag_of_a_block_list_leaves_an_empty_list() -> None:
    assert (
        update_frontmatter("---\ntags:\n  - a\n---\n", remove_tags=["a"]) == "---\ntags: []\n---\n"
    )
    text = "---\ntags:  # mine\n  - a\n---\n"
    assert update_frontmatter(text, add_tags=["b"]) == "---\ntags:  # mine\n  - a\n  - b\n---\n"


# ------------------------------------------------------------------------------------------------
# through the server


@pytest.mark.anyio
async def test_tool_keeps_owner_comments_in_frontmatter(connect: Any, make_vault: Any) -> None:
    notes = {
        "comment.md": "---\ntags: [a, b] # owner comment\n---\n# C\n",
        "comment2.md": "---\ntags:\n  - a\n  # owner comment line\n  - b\n---\n# C2\n",
        "kc.md": "---\nstatus: open  # reopened after Tuesday call\nnext: x\n---\n# K\n",
        "un.md": "---\na: 1\n# comment about b\nb: 2\nc:\n  - x\n\n# trailing owner note\n---\n# U\n",
    }
    root = make_vault(notes)
    async with connect(root) as s:
        await s.call("update_frontmatter", path="comment.md", add_tags=["c"])
        await s.call("update_frontmatter", path="comment2.md", remove_tags=["a"])
        await s.call("update_frontmatter", path="kc.md", set={"status": "closed"})
        await s.call("update_frontmatter", path="un.md", unset=["a"])
    assert (root / "comment.md").read_text() == notes["comment.md"].replace("b]", "b, c]")
    assert (root / "comment2.md").read_text() == notes["comment2.md"].replace("  - a\n", "")
    assert (root / "kc.md").read_text() == notes["kc.md"].replace("status: open", "status: closed")
    assert (root / "un.md").read_text() == notes["un.md"].replace("a: 1\n", "")
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.anyio
async def test_tool_refuses_a_duplicate_key_and_journals_it(connect: Any, make_vault: Any) -> None:
    text = "---\nstatus: open\ntitle: X\nstatus: waiting\n---\n# Dupkeys\n"
    root = make_vault({"dupkeys.md": text})
    before = git(root, "rev-parse", "HEAD")
    async with connect(root) as s:
        msg = await s.error("update_frontmatter", path="dupkeys.md", set={"status": "closed"})
        listed = await s.call("list_docs", where={"status": "waiting"})
    assert "rejected (duplicate_key)" in msg and "lines 2 and 4" in msg
    assert "edit_text" in msg and "Nothing was written" in msg
    assert (root / "dupkeys.md").read_text() == text
    assert git(root, "rev-parse", "HEAD") == before
    events = read_all(root / ".git/vaultwatch/events.jsonl")
    assert not [e for e in events if e["kind"] == "commit"]
    ev = [e for e in events if e["kind"] == "rejected"][-1]
    assert ev["code"] == "duplicate_key"
    assert ev["paths"] == ["dupkeys.md"]
    assert "dupkeys.md" in str(listed)


@pytest.mark.anyio
async def test_no_write_adds_a_key_written_twice(connect: Any, make_vault: Any) -> None:
    """Only update_frontmatter refused duplicates: replace_doc or edit_text could write
    `status` twice, after which the note said `open` on its first line and `closed` to every
    reader, and update_frontmatter on `status` was refused for good."""
    text = "---\nstatus: open\ntags: [a]\n---\n# Note\nbody\n"
    nested = "---\nstatus: open\nmeta:\n  owner: me\n---\n# Nested\n"
    root = make_vault({"a.md": text, "n.md": nested})
    before = git(root, "rev-parse", "HEAD")
    async with connect(root) as s:
        h = (await s.call("read_doc", path="a.md"))["hash"]
        doubled = text.replace("status: open\n", "status: open\nstatus: closed\n")
        errs = [
            await s.error("replace_doc", path="a.md", hash=h, content=doubled),
            await s.error(
                "edit_text", path="a.md", old="status: open", new="status: open\nstatus: x"
            ),
            await s.error(
                "edit_text", path="n.md", old="  owner: me", new="  owner: me\n  owner: you"
            ),
        ]
        for err in errs:
            assert "written twice" in err and "Nothing was written" in err, err
    assert (root / "a.md").read_text() == text and (root / "n.md").read_text() == nested
    assert git(root, "rev-parse", "HEAD") == before


@pytest.mark.anyio
async def test_a_note_the_owner_wrote_a_key_twice_in_still_takes_other_writes(
    connect: Any, make_vault: Any
) -> None:
    text = "---\nstatus: open\nstatus: waiting\n---\n# Log\n"
    root = make_vault({"d.md": text})
    async with connect(root) as s:
        read = await s.call("read_doc", path="d.md")
        assert "written twice" in json.dumps(read), read  # the owner's problem is shown
        await s.call("append_section", path="d.md", heading="Log", content="- a line")
    assert (root / "d.md").read_text() == text + "- a line\n"


@pytest.mark.anyio
async def test_tool_refuses_to_drop_a_comment_inside_a_replaced_value(
    connect: Any, make_vault: Any
) -> None:
    text = "---\nnested:\n  # owner: why a is 1\n  a: 1\n---\n# N\n"
    root = make_vault({"n.md": text})
    async with connect(root) as s:
        msg = await s.error("update_frontmatter", path="n.md", set={"nested": {"a": 2}})
    assert "rejected (comment_in_value)" in msg and "edit_text" in msg
    assert (root / "n.md").read_text() == text


def test_the_read_back_is_quick_next_to_a_yaml_bomb() -> None:
    # the values share their parts through aliases: compared as a tree they would be 10**10
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i, k in enumerate("bcdefghij"):
        bomb += f"{k}: &{k} [" + ", ".join([f"*{'abcdefghij'[i]}"] * 10) + "]\n"
    out = update_frontmatter(bomb + "---\n", {"k": 1})
    assert out == bomb + "k: 1\n---\n"
