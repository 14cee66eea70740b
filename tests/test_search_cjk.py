"""search_text on a real Chinese docs folder (tests/apisix_docs, Apache-2.0): Chinese queries
typed without spaces find notes whose words stand apart, a note titled like the query comes
first in both languages (issue 28). The query sets were written before the ranking changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from server.core.gitrepo import ensure_repo
from server.services.text_search import search_text
from server.vault import Vault

from .conftest import REPO

APISIX = REPO / "tests" / "apisix_docs"
SETS = {"zh": "search_zh_nospace.yaml", "en": "search_en_titles.yaml"}


def run_set(lang: str, root: Path) -> dict[str, Any]:
    """recall@5 of the `nospace` queries and how many `title` queries rank their note first."""
    shutil.copytree(APISIX / lang, root)
    ensure_repo(root)
    queries = yaml.safe_load((APISIX / SETS[lang]).read_text(encoding="utf-8"))
    vault = Vault(root)
    found = {"nospace": 0, "title": 0}
    count = {"nospace": 0, "title": 0}
    misses = []
    try:
        for q in queries:
            got = [h["path"] for h in search_text(vault, q["q"], limit=5)["hits"]]
            kind = q["kind"]
            count[kind] += 1
            ok = (
                bool(set(got) & set(q["expect"]))
                if kind == "nospace"
                else got[:1] == q["expect"][:1]
            )
            found[kind] += ok
            if not ok:
                misses.append((q["q"], q["expect"], got))
    finally:
        vault.close()
    return {"found": found, "count": count, "misses": misses}


def test_chinese_queries_without_spaces_find_their_notes(tmp_path: Path) -> None:
    r = run_set("zh", tmp_path / "zh")
    n, f = r["count"]["nospace"], r["found"]["nospace"]
    print(
        f"\nzh no-space recall@5 {f}/{n} = {f / n:.3f}; titles first {r['found']['title']}/{r['count']['title']}"
    )
    for m in r["misses"]:
        print("  miss:", m)
    assert n >= 30
    # 39 of 40 (0.425 before issue 28, 0.925 with every pair required). Two of the three that
    # ask in words the notes do not use (改写 for 重写, 请求头 for 请求标头) are found by the
    # relaxed match (most of the word's pairs, search_query.relaxed_query); 改写响应头 holds
    # one group of three in its note (响应): no such rule finds that, recall by meaning does.
    assert f / n >= 0.95, r["misses"]
    assert r["found"]["title"] == r["count"]["title"], r["misses"]


def test_a_note_titled_like_the_query_ranks_first_in_english(tmp_path: Path) -> None:
    r = run_set("en", tmp_path / "en")
    print(f"\nen titles first {r['found']['title']}/{r['count']['title']}")
    for m in r["misses"]:
        print("  miss:", m)
    assert r["count"]["title"] >= 20
    assert r["found"]["title"] == r["count"]["title"], r["misses"]


def test_which_terms_may_match_apart() -> None:
    """Unquoted words with CJK in them; not phrases, exclusions or pasted passages (a run of
    more than MAX_APART_RUN characters, which would cost a group per character)."""
    from server.index.search_query import MAX_APART_RUN, parse

    def apart(q: str) -> list[bool]:
        return [t.apart is not None for t in parse(q).terms]

    assert apart("停用插件 CRDT 周报") == [True, False, False]  # 周报: one pair, nothing apart
    assert apart('"停用插件" -死锁条件 IP黑名单') == [False, False, True]
    assert apart("停" * MAX_APART_RUN) == [True]
    assert apart("停" * (MAX_APART_RUN + 1)) == [False]
