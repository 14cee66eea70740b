"""list_tags trends and vocabulary; get_context blocks and oldest-first trimming."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


def d(days: int) -> str:
    return (date.today() + timedelta(days=days)).isoformat()


def session(days: int, tags: str, body: str = "") -> str:
    return f"---\ndate: {d(days)}\nkind: mock\ntags: [{tags}]\n---\n# S\n{body}"


CONFIG = """\
tags: {vocabulary: tags.yaml, unknown: reject}
types:
  session: {folder: sessions, dates: [date]}
  week: {folder: weeks, dates: [start]}
  improvement: {folder: improvements}
context:
  - rules
  - {title: This week, type: week, latest: 1}
  - {title: Open items, type: improvement, where: {status: open}, fields: [exit_criteria]}
  - {title: Recent sessions, type: session, latest: 3}
  - {title: Top tags, tags: {days: 30, limit: 5}}
"""


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": CONFIG,
            "tags.yaml": "- crdt\n- caching\n- 架构\n- never-used\n",
            "CLAUDE.md": "# Rules\nBe careful.\n",
            "sessions/a.md": session(-1, "crdt, 架构"),
            "sessions/b.md": session(-3, "crdt"),
            "sessions/c.md": session(-5, "crdt"),
            "sessions/d.md": session(-40, "caching"),
            "sessions/e.md": session(-45, "caching"),
            "sessions/f.md": session(-50, "caching, crdt"),
            "sessions/g.md": session(-10, "ad-hoc"),
            "weeks/w1.md": f"---\nstart: {d(-7)}\n---\n# Last week\n",
            "weeks/w2.md": f"---\nstart: {d(-1)}\n---\n# This week\n## Log\n- today\n",
            "improvements/i1.md": "---\nstatus: open\nexit_criteria: three clean mocks\n---\n# I1\n",
            "improvements/i2.md": "---\nstatus: closed\nexit_criteria: done\n---\n# I2\n",
        }
    )


async def test_tag_counts_trends_and_vocabulary(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("list_tags", days=30)
        rows = {r["tag"]: r for r in res["tags"]}
        assert rows["crdt"]["count"] == 4 and rows["crdt"]["in_window"] == 3
        assert rows["crdt"]["trend"] == "rising" and rows["crdt"]["last_used"] == d(-1)
        assert rows["caching"]["trend"] == "quiet" and rows["caching"]["in_window"] == 0
        assert rows["架构"]["trend"] == "steady" and rows["架构"]["in_vocabulary"] is True
        assert rows["ad-hoc"]["in_vocabulary"] is False
        assert res["unused_vocabulary"] == ["never-used"]
        assert res["tags"][0]["tag"] == "crdt"  # most used in the window first
        only = await s.call("list_tags", prefix="ca")
        assert [r["tag"] for r in only["tags"]] == ["caching"]
        paged = await s.call("list_tags", limit=2)
        assert len(paged["tags"]) == 2 and paged["next_cursor"]
        more = await s.call("list_tags", limit=2, cursor=paged["next_cursor"])
        assert {r["tag"] for r in more["tags"]}.isdisjoint({r["tag"] for r in paged["tags"]})


async def test_context_blocks_in_config_order(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("get_context")
        blocks = res["blocks"]
        assert [b["title"] for b in blocks] == [
            "Rules",
            "This week",
            "Open items",
            "Recent sessions",
            "Top tags",
        ]
        assert blocks[0]["content"] == "# Rules\nBe careful.\n"
        assert [x["path"] for x in blocks[1]["docs"]] == ["weeks/w2.md"]
        assert "## Log\n- today" in blocks[1]["docs"][0]["content"]
        assert [x["path"] for x in blocks[2]["docs"]] == ["improvements/i1.md"]
        assert blocks[2]["docs"][0]["fields"] == {"exit_criteria": "three clean mocks"}
        assert [x["path"] for x in blocks[3]["docs"]] == [
            "sessions/a.md",
            "sessions/b.md",
            "sessions/c.md",
        ]
        assert blocks[4]["tags"][0] == {"tag": "crdt", "count": 3, "trend": "rising"}
        assert res["trimmed"] == []


async def test_context_trims_oldest_first_and_keeps_the_end(connect: Any, vault: Path) -> None:
    big = "".join(f"- old entry {i} " + "x" * 80 + "\n" for i in range(300))
    (vault / "sessions" / "a.md").write_text(session(-1, "crdt", big + "- NEWEST ENTRY\n"))
    (vault / "sessions" / "c.md").write_text(session(-5, "crdt", big))
    (vault / "sessions" / "b.md").write_text(session(-3, "crdt", big))
    async with connect(vault) as s:
        r = await s.client.call_tool("get_context", {})
        budget = s.vault.config.limits.result_chars
        assert len(r.content[0].text) <= budget
        res = r.structured_content
        docs = {x["path"]: x for x in res["blocks"][3]["docs"]}
        assert res["trimmed"][0] == "sessions/c.md"  # the oldest went first
        assert docs["sessions/a.md"]["content"].endswith("- NEWEST ENTRY\n")
        assert "read_doc('sessions/c.md')" in docs["sessions/c.md"]["left_out"]


async def test_context_without_config_uses_defaults(connect: Any, make_vault: Any) -> None:
    root = make_vault({"CLAUDE.md": "rules", "n.md": "# N #x\n"})
    async with connect(root) as s:
        res = await s.call("get_context")
        assert [b["kind"] for b in res["blocks"]] == ["rules", "recent", "tags"]
        assert res["blocks"][1]["docs"][0]["path"] == "n.md"


async def test_config_error_shows_in_context(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        (vault / "vault.config.yaml").write_text(CONFIG + "bogus: 1\n")
        import os

        st = (vault / "vault.config.yaml").stat()
        os.utime(vault / "vault.config.yaml", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        res = await s.call("get_context")
        assert "unknown key 'bogus'" in res["warnings"][0]
        assert res["blocks"][0]["title"] == "Rules"  # still served from the last good config


async def test_private_notes_are_invisible_everywhere(connect: Any, example_vault: Path) -> None:
    """private/** never lists, reads, searches, counts a tag, or lands in the context."""
    (example_vault / "private" / "diary.md").write_text(
        "---\ntags: [secret-tag]\ntype: study\n---\n# Diary\nmoonlight confession\n"
    )
    async with connect(example_vault) as s:
        listed = await s.call("list_docs", limit=200)
        assert listed["docs"] and not any(d["path"].startswith("private/") for d in listed["docs"])
        grouped = await s.call("list_docs", group_by="folder")
        assert "private" not in {g["key"] for g in grouped["groups"]}
        tags = await s.call("list_tags", days=3650, limit=500)
        assert "secret-tag" not in {t["tag"] for t in tags["tags"]}
        assert (await s.call("search_text", query="moonlight"))["total"] == 0
        assert "private" in await s.error("read_doc", path="private/diary.md")
        ctx = await s.call("get_context")
        assert "moonlight" not in str(ctx) and "private/" not in str(ctx)
        assert "private" in await s.error(
            "append_section", path="private/diary.md", heading="x", content="y"
        )
        assert "private" in await s.error("create_doc", path="private/new.md", body="x")


async def test_dashboard_tags_screen_and_list_tags_give_the_same_trends(
    connect: Any, vault: Path
) -> None:
    """One trend rule (`server.services.tags`): the Tags screen marks, counts and orders the tags as
    list_tags and get_context's tags block do, on the same vault and day."""
    from app.services.tag_trends import MARKS, tag_trends
    from server.vault import Vault

    (vault / "sessions" / "h.md").write_text(session(-20, "CRDT, caching, typescript"))
    (vault / "tags.yaml").write_text("- crdt\n- caching\n- 架构\n- never-used\n- TypeScript\n")
    opened = Vault(vault)
    try:
        screen, notes = tag_trends(opened)
    finally:
        opened.close()
    async with connect(vault) as s:
        listed = (await s.call("list_tags", days=30))["tags"]
        top = (await s.call("get_context"))["blocks"][4]["tags"]
    assert [r["tag"] for r in screen] == [r["tag"] for r in listed]
    assert [r["mark"] for r in screen] == [MARKS[r["trend"]] for r in listed]
    assert [(r["recent"], r["total"]) for r in screen] == [
        (r["in_window"], r["count"]) for r in listed
    ]
    assert [t["trend"] for t in top] == [r["trend"] for r in listed if r["in_window"]][:5]
    assert {r["tag"]: r["mark"] for r in screen}["crdt"] == "↑ rising"
    assert {r["tag"]: r["mark"] for r in screen}["caching"] == ""  # 1 in 30 d, 3 before
    assert len(notes["crdt"]) == 5
    assert "TypeScript" in notes  # spelled as the vocabulary spells it, on both sides
