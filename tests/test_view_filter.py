"""The dashboard's `/` filter reads its text as search_text reads a query (issue 28): a Chinese
word typed without spaces matches a row or a commit's change that holds its words apart, a
"phrase" only in one piece, -word drops; text with no word in it is matched as typed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.services.feed import Row
from app.services.view_rows import Filters, commits_mentioning, finder, visible

from .conftest import git


def row(key: str, summary: str, paths: tuple[str, ...] = ()) -> Row:
    return Row(key, datetime.now(UTC), "ai", "claude-code", paths, summary)


def test_rows_match_by_the_search_rule() -> None:
    rows = [
        row("apart", "append_section: 如何停用某个插件"),
        row("whole", "create_doc: 停用插件之前"),
        row("neither", "create_doc: 使用插件"),
        row("path", "edit_text: x", ("notes/停用/插件.md",)),
        row("mark", "edit_text: a+b (c)"),
    ]

    def keys(text: str) -> list[str]:
        return [r.key for r in visible(rows, Filters(text=text))]

    assert keys("停用插件") == ["apart", "whole", "path"]
    assert keys('"停用插件"') == ["whole"]
    assert keys("插件 -停用插件") == ["apart", "neither", "path"]
    assert keys("+b (") == ["mark"]  # words: b; as typed it also matches
    assert keys("(") == ["mark"]  # no word at all: matched as typed


def test_commits_whose_change_holds_the_words_apart(make_vault: Any) -> None:
    root: Path = make_vault({"a.md": "# A\n"})

    def commit(text: str) -> str:
        (root / f"{len(text)}.md").write_text(f"# A\n\n{text}\n", encoding="utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "edit")
        return git(root, "rev-parse", "HEAD").strip()

    apart = commit("如何停用某个插件")
    whole = commit("停用插件之前先备份 (v1.2)")
    commit("使用插件")  # 用插 only, the pair across the two words: not a match
    assert commits_mentioning(root, "停用插件") == {apart, whole}
    assert commits_mentioning(root, '"停用插件"') == {whole}
    assert commits_mentioning(root, "(v1.2)") == {whole}  # ERE specials taken literally


def test_n_finds_in_the_diff_what_the_filter_found() -> None:
    holds = finder("停用插件")
    assert holds("+如何停用某个插件") and not holds("+使用插件")
    assert finder("zebra crossing")("+- zebra crossing") and not finder("zebra q")("+zebra")
    assert finder("(")("+a (b") and not finder("(")("+a b")
