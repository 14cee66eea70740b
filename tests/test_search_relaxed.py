"""search_text relaxes a long CJK word typed without spaces when too few notes hold all of it
(issue 28): the notes holding most of its character pairs come after every note holding all,
the hint says so, and the promises hold: private notes never show, exclusions and quoted
phrases stay exact, a four-character word is never relaxed to one of its halves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

CONFIG = 'private: ["private/**"]\n'
NOTES = {
    "vault.config.yaml": CONFIG,
    # 改写请求路径 as typed: the strict match
    "strict.md": "# 路由\n\n可以改写请求路径，再转发到上游。\n",
    # the same words but 重写 for 改写: three of the four groups (改写 | 写请,请求 | 请求,求路 | 路径)
    "near.md": "# 代理重写\n\n这个插件重写请求路径。\n",
    # only 路径 and 改写: two of four, not a majority
    "far.md": "# 文件\n\n改写配置文件的路径。\n",
    "private/secret.md": "# 私密\n\n重写请求路径的私密做法。\n",
    "draft.md": "# 草稿\n\n重写请求路径 draft\n",
    "halves.md": "# 请求\n\n请求很多，求标二字也在。\n",
}


async def paths(s: Any, query: str, **kw: Any) -> tuple[list[str], dict[str, Any]]:
    r = await s.call("search_text", query=query, limit=10, **kw)
    return [h["path"] for h in r["hits"]], r


async def test_notes_holding_most_of_the_word_follow_those_holding_all(
    connect: Any, make_vault: Any
) -> None:
    root: Path = make_vault(NOTES)
    async with connect(root) as s:
        got, r = await paths(s, "改写请求路径")
        assert got[0] == "strict.md", got
        assert set(got) == {"strict.md", "near.md", "draft.md"}, got
        assert r["total"] == 3
        assert "The first 1 hits hold every word" in r["hint"], r["hint"]
        near = next(h for h in r["hits"] if h["path"] == "near.md")
        # the snippet marks the pairs the note holds (重 is not one of them)
        assert any("重«写请求路径»" in sn for sn in near["snippets"]), near


async def test_relaxed_hits_never_show_a_private_note(connect: Any, make_vault: Any) -> None:
    root: Path = make_vault(NOTES)
    async with connect(root) as s:
        for q in ("改写请求路径", "改写请求路径 -draft", "修改请求路径"):
            got, r = await paths(s, q)
            assert got, q
            assert not any(p.startswith("private/") for p in got), (q, got)
            assert "私密" not in str(r), (q, r)


async def test_exclusions_and_quoted_phrases_stay_exact(connect: Any, make_vault: Any) -> None:
    root: Path = make_vault(NOTES)
    async with connect(root) as s:
        got, _ = await paths(s, "改写请求路径 -draft")
        assert set(got) == {"strict.md", "near.md"}, got
        got, r = await paths(s, '"改写请求路径"')
        assert got == ["strict.md"], got
        assert "hint" not in r, r
        # no note holds it as typed, in quotes: nothing, not the notes holding most of it
        got, r = await paths(s, '"修改请求路径"')
        assert got == [] and r["total"] == 0, got


async def test_a_four_character_word_is_not_relaxed_to_one_half(
    connect: Any, make_vault: Any
) -> None:
    root: Path = make_vault(NOTES)
    async with connect(root) as s:
        got, r = await paths(s, "请求标头")
        assert got == [] and r["total"] == 0, got
    from server.index.search_query import parse, relaxed_query

    assert relaxed_query(parse("请求标头")) is None
    assert relaxed_query(parse("改写请求路径")) is not None
    assert relaxed_query(parse('"改写请求路径"')) is None
    # a pasted passage (more groups than MAX_RELAXED_GROUPS) is not relaxed: a match per group
    passage = " ".join(["改写请求路径的方法"] * 6)  # 6 terms x 7 groups
    assert relaxed_query(parse(passage)) is None
    assert relaxed_query(parse(" ".join(["改写请求路径的方法"] * 4))) is not None


async def test_a_filter_applies_to_the_relaxed_hits(connect: Any, make_vault: Any) -> None:
    root: Path = make_vault({**NOTES, "sub/near2.md": "# 另一个\n\n重写请求路径。\n"})
    async with connect(root) as s:
        got, _ = await paths(s, "改写请求路径", folder="sub")
        assert got == ["sub/near2.md"], got


async def test_pages_run_from_the_strict_hits_into_the_relaxed_ones(
    connect: Any, make_vault: Any
) -> None:
    """A page at a time: every page counts the same total, and the pages together are the
    one-page list (the strict hit first, then the relaxed ones, none twice)."""
    root: Path = make_vault(NOTES)
    async with connect(root) as s:
        whole, r = await paths(s, "改写请求路径")
        got: list[str] = []
        cursor = None
        for _ in range(10):
            args: dict[str, Any] = {"cursor": cursor} if cursor else {}
            r = await s.call("search_text", query="改写请求路径", limit=1, **args)
            assert r["total"] == len(whole) == 3
            got += [h["path"] for h in r["hits"]]
            cursor = r.get("next_cursor")
            if cursor is None:
                break
        assert got == whole
