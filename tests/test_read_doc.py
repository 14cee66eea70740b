"""read_doc: whole, section, tail, offset; always the hash; never over the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.notes.note import content_hash

pytestmark = pytest.mark.anyio

WEEK = """---
week: 2026-W49
---
# Week 49

## Goals
- finish take-home

## Log
- Mon: mock
- Tue: take-home
  continued on a second line
- Wed: rest

# Week 50

## Log
- Mon: onsite
"""


async def test_whole_note_and_hash(connect: Any, make_vault: Any) -> None:
    root = make_vault({"weeks/w.md": WEEK})
    async with connect(root) as s:
        res = await s.call("read_doc", path="weeks/w.md")
        assert res["content"] == WEEK and res["complete"] is True
        assert res["hash"] == content_hash(WEEK.encode()) and "next" not in res
        assert res["chars"] == len(WEEK)


async def test_section_paths_and_ambiguity(connect: Any, make_vault: Any) -> None:
    root = make_vault({"weeks/w.md": WEEK})
    async with connect(root) as s:
        res = await s.call("read_doc", path="weeks/w.md", section="Week 49/Log")
        assert res["content"].startswith("## Log\n- Mon: mock") and "onsite" not in res["content"]
        assert res["section"] == "Week 49/Log" and res["hash"] == content_hash(WEEK.encode())
        # the whole section asked for: complete, nothing more to get, the outline for the rest
        assert res["complete"] is True and "next" not in res
        assert res["outline"][0]["heading"] == "Week 49"
        goals = await s.call("read_doc", path="weeks/w.md", section="goals")  # case-insensitive
        assert goals["content"] == "## Goals\n- finish take-home\n\n"
        msg = await s.error("read_doc", path="weeks/w.md", section="Log")
        assert "matches 2 headings" in msg and "'Week 50/Log'" in msg
        msg = await s.error("read_doc", path="weeks/w.md", section="Nope")
        assert "no heading 'Nope'" in msg and "Week 49/Goals" in msg


async def test_two_sections_with_one_path_point_to_edit_text(connect: Any, make_vault: Any) -> None:
    """Two '## Log' under one parent: 'give the full heading path' was a dead end (the path is
    the same for both); the error says so and names the tools that can tell them apart."""
    text = "# Dup\n\n## Log\n- a\n\n## Log\n- b\n"
    root = make_vault({"d.md": text})
    async with connect(root) as s:
        for tool, args in (
            ("read_doc", {"section": "Dup/Log"}),
            ("append_section", {"heading": "Log", "content": "- c"}),
        ):
            msg = await s.error(tool, path="d.md", **args)
            assert "matches 2 headings with the same path" in msg, msg
            assert "edit_text" in msg and "full heading path" not in msg, msg
    assert (root / "d.md").read_text() == text


async def test_tail_of_an_entry_too_big_for_one_read_is_its_end(
    connect: Any, make_vault: Any
) -> None:
    """A note of plain lines is one entry; tail=1 showed its first 37,000 characters, the
    oldest text. The newest text is its end: shown from a line start, whole to the last line,
    with where the entry starts for reading it from there."""
    lines = [f"line {i:05d} of a log kept without list marks" for i in range(4_000)]
    text = "\n".join(lines) + "\n"
    root = make_vault({"big.md": text})
    async with connect(root) as s:
        res = await s.call("read_doc", path="big.md", tail=1)
        start, end = res["range"]
        assert end == len(text) and start > 0 and text[start - 1] == "\n", res["range"]
        assert res["content"] == text[start:] and res["content"].endswith(lines[-1] + "\n")
        assert "this is their end" in res["next"] and "offset=0" in res["next"], res["next"]
        whole = await s.call("read_doc", path="big.md", offset=0)
        assert whole["content"].startswith(lines[0])


async def test_tail_of_list_and_of_sections(connect: Any, make_vault: Any) -> None:
    root = make_vault({"weeks/w.md": WEEK})
    async with connect(root) as s:
        res = await s.call("read_doc", path="weeks/w.md", section="Week 49/Log", tail=2)
        assert res["content"] == "- Tue: take-home\n  continued on a second line\n- Wed: rest\n\n"
        assert "last 2 of 3 entries" in res["next"]
        top = await s.call("read_doc", path="weeks/w.md", tail=1)  # entries = top-level sections
        assert top["content"].startswith("# Week 50")


async def test_offset_paging_covers_a_huge_note_exactly(connect: Any, make_vault: Any) -> None:
    lines = [f"- entry {i}: " + "lorem ipsum dolor sit amet " * 4 for i in range(12_000)]
    body = "# Huge\n\n## Log\n" + "\n".join(lines) + "\n"
    root = make_vault({"huge.md": body})
    assert len(body) > 1_000_000
    async with connect(root) as s:
        budget = s.vault.config.limits.result_chars
        got, offset, calls = [], 0, 0
        while True:
            r = await s.client.call_tool("read_doc", {"path": "huge.md", "offset": offset})
            text = r.content[0].text
            assert len(text) <= budget
            res = json.loads(text)
            got.append(res["content"])
            calls += 1
            if res["range"][1] >= res["chars"]:
                break
            assert f"offset={res['range'][1]}" in res["next"]
            offset = res["range"][1]
        assert "".join(got) == body and calls > 25
        sec = await s.call("read_doc", path="huge.md", section="Log", tail=3)
        assert sec["content"].startswith("- entry 11997")


async def test_many_headings_outline_is_capped(connect: Any, make_vault: Any) -> None:
    body = "".join(f"## H{i}\n" + "x" * 200 + "\n" for i in range(3000))
    root = make_vault({"many.md": body})
    async with connect(root) as s:
        r = await s.client.call_tool("read_doc", {"path": "many.md"})
        assert len(r.content[0].text) <= s.vault.config.limits.result_chars
        res = json.loads(r.content[0].text)
        assert res["outline"][-1]["heading"].startswith("… ")


async def test_missing_note_suggests_close_paths(connect: Any, make_vault: Any) -> None:
    root = make_vault({"weeks/2026-W49.md": WEEK})
    async with connect(root) as s:
        msg = await s.error("read_doc", path="weeks/2026-W50.md")
        assert "no note at 'weeks/2026-W50.md'" in msg and "weeks/2026-W49.md" in msg


async def test_read_sees_edits_made_behind_its_back(connect: Any, make_vault: Any) -> None:
    root = make_vault({"n.md": "# one\n"})
    async with connect(root) as s:
        h1 = (await s.call("read_doc", path="n.md"))["hash"]
        (root / "n.md").write_text("# two\n")
        res = await s.call("read_doc", path="n.md")
        assert res["content"] == "# two\n" and res["hash"] != h1


async def test_offset_past_end_is_explained(connect: Any, make_vault: Any) -> None:
    root = make_vault({"n.md": "# short\n"})
    async with connect(root) as s:
        assert "past the end" in await s.error("read_doc", path="n.md", offset=10_000)
        assert "not both" in await s.error("read_doc", path="n.md", offset=1, tail=1)


async def test_crlf_and_nfd_names(connect: Any, make_vault: Any) -> None:
    import unicodedata

    nfd = unicodedata.normalize("NFD", "notes/café.md")
    root = make_vault({nfd: "---\r\ndate: 2026-01-01\r\n---\r\n# Café\r\n\r\n## Log\r\n- a\r\n"})
    async with connect(root) as s:
        listed = await s.call("list_docs")
        nfc = unicodedata.normalize("NFC", "notes/café.md")
        assert [x["path"] for x in listed["docs"]] == [nfc]
        res = await s.call("read_doc", path=nfc, section="Log")
        assert res["content"] == "## Log\r\n- a\r\n"


async def test_reading_until_complete_stops_at_the_last_page(connect: Any, make_vault: Any) -> None:
    """Audit: reading a 202,225-char note by offset, the last page ([201224, 202225] of 202225)
    still said complete:false, with a `next` that named no next step; a client reading "until
    complete" never stopped. The page that reaches the end is complete and has no `next`; so is
    the last page of a section read by offset, and every page before it is not."""
    lines = [f"- entry {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(3_000)]
    body = "# Big\n\n## Log\n" + "\n".join(lines) + "\n\n## After\nend\n"
    root = make_vault({"big.md": body})
    async with connect(root) as s:
        for section in (None, "Log"):
            args: dict[str, Any] = {"section": section} if section else {}
            pages: list[dict[str, Any]] = [await s.call("read_doc", path="big.md", **args)]
            while not pages[-1]["complete"]:
                assert len(pages) < 50, "read_doc never said complete"
                assert "offset=" in pages[-1]["next"], pages[-1]["next"]
                offset = pages[-1]["range"][1] - (body.index("## Log") if section else 0)
                pages.append(await s.call("read_doc", path="big.md", offset=offset, **args))
            assert len(pages) > 3
            last = pages[-1]
            want = body[body.index("## Log") : body.index("## After")] if section else body
            assert "".join(p["content"] for p in pages) == want
            assert "next" not in last and last["range"][1] == body.index(want) + len(want)
            assert all(p["complete"] is False and "next" in p for p in pages[:-1])
        # a tail leaves the older entries out: not complete, and `next` says how to get them
        tail = await s.call("read_doc", path="big.md", section="Log", tail=2)
        assert tail["complete"] is False and "last 2 of 3000 entries" in tail["next"]
