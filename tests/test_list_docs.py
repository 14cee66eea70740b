"""list_docs through the real MCP client: every filter, group_by, relative dates, paging."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

CONFIG = """\
types:
  application:
    folder: applications
    required: [company, status]
    dates: [applied, next_date]
  session:
    folder: sessions
    dates: [date]
"""


def d(days: int) -> str:
    return (date.today() + timedelta(days=days)).isoformat()


def app(company: str, status: str, applied: int, score: int, tags: str, **extra: Any) -> str:
    lines = [
        f"company: {company}",
        f"status: {status}",
        f"applied: {d(applied)}",
        f"score: {score}",
        f"tags: [{tags}]",
    ]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    return "---\n" + "\n".join(lines) + f"\n---\n# {company}\n"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": CONFIG,
            "applications/acme.md": app(
                "Acme",
                "waiting",
                -40,
                3,
                "area/backend, crdt",
                next_action="send take-home",
                next_date=d(3),
            ),
            "applications/bolt.md": app("Bolt", "applied", -10, 5, "area/frontend"),
            "applications/cygnus.md": app("Cygnus", "rejected", -100, 1, "networking"),
            "applications/星河.md": app("星河科技", "waiting", -5, 4, "同步, 架构"),
            "sessions/s1.md": f"---\ndate: {d(-2)}\nkind: mock\n---\n# S1 #crdt\n",
            "sessions/s2.md": f"---\ndate: {d(-35)}\nkind: leetcode\n---\n# S2\n",
            "sessions/bad.md": "---\ndate: 2026-13-45\nkind: mock\n---\n# Bad date\n",
            "inbox/loose.md": "# Loose note #crdt\n",
        }
    )


async def paths(s: Any, **args: Any) -> list[str]:
    res = await s.call("list_docs", **args)
    return [doc["path"] for doc in res["docs"]]


async def test_type_folder_and_fields(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("list_docs", type="application", sort="company")
        assert [x["fields"]["company"] for x in res["docs"]] == [
            "Acme",
            "Bolt",
            "Cygnus",
            "星河科技",
        ]
        assert res["total"] == 4 and all(len(x["hash"]) == 16 for x in res["docs"])
        assert set(await paths(s, folder="sessions")) == {
            "sessions/s1.md",
            "sessions/s2.md",
            "sessions/bad.md",
        }
        one = (
            await s.call(
                "list_docs", type="application", where={"company": "acme"}, fields=["status"]
            )
        )["docs"][0]
        assert one["fields"] == {"status": "waiting"} and one["type"] == "application"


async def test_where_operators(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        t = "application"
        assert await paths(s, type=t, where={"status": "waiting"}, sort="path") == [
            "applications/acme.md",
            "applications/星河.md",
        ]
        assert len(await paths(s, type=t, where={"status": {"ne": "waiting"}})) == 2
        assert len(await paths(s, type=t, where={"status": {"in": ["applied", "rejected"]}})) == 2
        assert await paths(s, type=t, where={"next_action": {"exists": True}}) == [
            "applications/acme.md"
        ]
        assert len(await paths(s, type=t, where={"next_action": {"exists": False}})) == 3
        assert await paths(s, type=t, where={"score": {"ge": 5}}) == ["applications/bolt.md"]
        assert len(await paths(s, type=t, where={"score": {"lt": 3}})) == 1
        assert len(await paths(s, type=t, where={"score": {"le": 3, "gt": 1}})) == 1
        assert await paths(s, type=t, where={"company": {"contains": "科技"}}) == [
            "applications/星河.md"
        ]
        assert await paths(s, type=t, where={"tags": {"contains": "crdt"}}) == [
            "applications/acme.md"
        ]
        # dates compare as dates, relative or absolute
        assert await paths(s, type=t, where={"applied": {"lt": "-30d"}}, sort="applied") == [
            "applications/cygnus.md",
            "applications/acme.md",
        ]
        assert await paths(s, type=t, where={"next_date": {"le": "+1w"}}) == [
            "applications/acme.md"
        ]
        assert await paths(s, type=t, where={"applied": {"ge": d(-10)}}, sort="applied") == [
            "applications/bolt.md",
            "applications/星河.md",
        ]


async def test_tag_filters_are_nested_and_unicode(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        assert set(await paths(s, tags_any=["area"])) == {
            "applications/acme.md",
            "applications/bolt.md",
        }
        assert await paths(s, tags_all=["area/backend", "crdt"]) == ["applications/acme.md"]
        assert set(await paths(s, tags_any=["crdt"])) == {
            "applications/acme.md",
            "sessions/s1.md",
            "inbox/loose.md",
        }
        assert "applications/acme.md" not in await paths(s, tags_any=["crdt"], tags_none=["area"])
        assert await paths(s, tags_all=["同步"]) == ["applications/星河.md"]
        assert await paths(s, tags_any=["#架构"]) == ["applications/星河.md"]
        assert set(await paths(s, tag_prefix="area/")) == {
            "applications/acme.md",
            "applications/bolt.md",
        }


async def test_date_ranges(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        assert await paths(s, type="session", date_from="-7d") == ["sessions/s1.md"]
        assert await paths(s, type="session", date_to="-30d") == ["sessions/s2.md"]
        assert await paths(s, type="session", date_from="-2m", date_to="today", sort="date") == [
            "sessions/s2.md",
            "sessions/s1.md",
        ]
        recent = await paths(s, date_from="-1d", date_field="modified")
        assert len(recent) == 8  # every file was just written
        assert await paths(s, type="application", date_from=d(2), date_field="next_date") == [
            "applications/acme.md"
        ]


async def test_bad_arguments_say_how_to_fix(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        assert "relative date like -30d" in await s.error("list_docs", date_from="last tuesday")
        assert "unknown type 'job'" in await s.error("list_docs", type="job")
        assert "use one of eq" in await s.error("list_docs", where={"score": {"between": [1, 2]}})
        assert "different query" in await s.error(
            "list_docs", type="session", cursor=(await s.call("list_docs", limit=1))["next_cursor"]
        )


async def test_sort_and_paging(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        first = await s.call("list_docs", type="application", sort="-score", limit=3)
        assert [x["fields"]["score"] for x in first["docs"]] == [5, 4, 3]
        rest = await s.call(
            "list_docs", type="application", sort="-score", limit=3, cursor=first["next_cursor"]
        )
        assert [x["fields"]["score"] for x in rest["docs"]] == [1] and "next_cursor" not in rest
        # notes without the sort field come last, whichever the direction
        by_date = await paths(s, folder="sessions", sort="date")
        assert by_date[-1] == "sessions/bad.md"


async def test_group_by(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("list_docs", type="application", group_by="status")
        assert res["groups"][0] == {"key": "waiting", "count": 2} and "docs" not in res
        tags = {g["key"]: g["count"] for g in (await s.call("list_docs", group_by="tag"))["groups"]}
        assert tags["crdt"] == 3 and tags["同步"] == 1
        types = {
            g["key"]: g["count"] for g in (await s.call("list_docs", group_by="type"))["groups"]
        }
        assert types == {"application": 4, "session": 3, "(no type)": 1}
        months = (await s.call("list_docs", type="session", group_by="month"))["groups"]
        assert [g["key"] for g in months] == sorted((g["key"] for g in months), reverse=True)


async def test_broken_note_still_lists_with_its_problem(connect: Any, make_vault: Any) -> None:
    root = make_vault({"a.md": "---\ntitle: [oops\n---\n# A\n", "b.md": "# B\n"})
    async with connect(root) as s:
        res = await s.call("list_docs", sort="path")
        assert [x["path"] for x in res["docs"]] == ["a.md", "b.md"]
        assert "broken YAML" in res["docs"][0]["problems"][0]


async def test_list_docs_and_search_text_pick_notes_by_one_filter(
    connect: Any, vault: Path
) -> None:
    """Type, folder and tag filters are one rule (`filters.NoteFilter`): list_docs and
    search_text (as its arguments and as `type:`/`path:`/`tag:` in the query) pick the same
    notes, and name an unknown type the same way."""
    cases: list[dict[str, Any]] = [
        {"type": "application"},
        {"folder": "/applications/"},
        {"folder": "sess"},  # a bare name prefix is no folder
        {"tags": ["area"]},  # a tag finds its children
        {"tags": ["#Area/", "crdt"]},
        {"type": "session", "tags": ["crdt"]},
        {"folder": "inbox", "tags": ["crdt"]},
    ]
    async with connect(vault) as s:
        for case in cases:
            listed = {"tags_all": case["tags"]} if "tags" in case else {}
            listed |= {k: v for k, v in case.items() if k != "tags"}
            want = sorted(await paths(s, **listed, limit=200))
            query = " ".join(
                [f"type:{v}" for k, v in case.items() if k == "type"]
                + [f"path:{v}" for k, v in case.items() if k == "folder"]
                + [f"tag:{t}" for t in case.get("tags", [])]
            )
            by_query = await s.call("search_text", query=query, limit=50)
            args = {k: v for k, v in case.items() if k != "folder"}
            scope = f"path:{case.get('folder', '/')}"  # a query needs one term; '/' is all
            by_args = await s.call("search_text", query=scope, limit=50, **args)
            assert sorted(r["path"] for r in by_query["hits"]) == want, case
            assert sorted(r["path"] for r in by_args["hits"]) == want, case
        assert "unknown type 'job'; types in this vault: application, session" in await s.error(
            "search_text", query="type:job"
        )
        assert "unknown type 'job'; types in this vault: application, session" in await s.error(
            "list_docs", type="job"
        )


async def test_a_date_range_over_undated_notes_and_an_unknown_sort_key_are_errors(
    connect: Any, make_vault: Any
) -> None:
    """Audit, on Obsidian's help vault (no note has a `date:`): list_docs(date_from='yesterday')
    answered {"total": 0} with no word of why, and sort='size' was silently ignored (the notes
    came by path). Both now say what happened and what to call instead."""
    root = make_vault(
        {
            "Home.md": "---\naliases: [start]\n---\n# Home\n",
            "Plugins/Canvas.md": "---\npublish: true\n---\n# Canvas\n",
            "Plugins/Graph.md": "# Graph\n",
        }
    )
    async with connect(root) as s:
        msg = await s.error("list_docs", date_from="yesterday")
        assert "none of the 3 notes" in msg and "date_field='modified'" in msg, msg
        assert "'yesterday'" in msg and "-30d" in msg, msg  # the forms date_from takes
        recent = await s.call("list_docs", date_from="yesterday", date_field="modified")
        assert recent["total"] == 3  # the suggested call works: every file was just written
        # a range that keeps nothing among dated notes is an answer, not an error
        assert (await s.call("list_docs", date_from="+1d", date_field="modified"))["total"] == 0
        bad = await s.error("list_docs", date_from="last week")
        assert "'yesterday'" in bad and "YYYY-MM-DD" in bad and "-1y" in bad, bad

        msg = await s.error("list_docs", sort="size")
        assert "no" in msg and "'size'" in msg and "modified" in msg and "title" in msg, msg
        assert "'aliases'" in msg and "'publish'" in msg, msg  # the fields they do have
        by_field = await s.call("list_docs", sort="-publish")  # a field one note has: fine
        assert by_field["docs"][0]["path"] == "Plugins/Canvas.md"
        assert (await s.call("list_docs", sort="-modified"))["total"] == 3
