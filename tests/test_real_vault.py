"""Promises that hold on a real vault (issue 15): Obsidian's help notes in English and Chinese,
tables with `\\|` links, headings made of inline code, a cloned vault's dates."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.anyio

FILLER_EN = "Obsidian stores notes as plain text files in a folder on your device.\n\n"
FILLER_ZH = "Obsidian 把笔记保存为设备上文件夹里的纯文本文件。\n\n"

# Shaped like the Obsidian help vault: long "main" notes and short ones whose titles share a word.
REAL: dict[str, str] = {
    "en/Internal links.md": (
        "# Internal links\n\nLink notes to each other with internal links.\n\n"
        "## Embed a note\n\nTo embed a note, add an exclamation mark before the link.\n\n"
        + FILLER_EN
        * 6
    ),
    "en/Link to blocks.md": "# Link to blocks\n\nLink to one block of a note.\n",
    "en/Outgoing links.md": "# Outgoing links\n\nThe outgoing links pane lists links.\n",
    "en/Backlinks.md": "# Backlinks\n\nNotes that link to this one.\n",
    "en/Graph view.md": "# Graph view\n\nThe graph shows notes and the links between them.\n",
    "zh/内部链接.md": (
        "# 内部链接\n\n用内部链接把笔记连接起来。\n\n## 嵌入文件\n\n在链接前加感叹号即可嵌入。\n\n"
        + FILLER_ZH * 6
    ),
    "zh/外部链接.md": "# 外部链接\n\n指向网页的链接。\n",
    "zh/块链接.md": "# 块链接\n\n链接到笔记中的一个块。\n",
    "zh/关系图谱.md": "# 关系图谱\n\n图谱显示笔记和它们之间的链接。\n",
}


async def all_hits(s: Any, query: str, limit: int = 2) -> tuple[list[str], set[int]]:
    """Every hit over every page, and every `total` the pages reported."""
    seen: list[str] = []
    totals: set[int] = set()
    cursor = None
    while True:
        args: dict[str, Any] = {"query": query, "limit": limit}
        if cursor:
            args["cursor"] = cursor
        res = await s.call("search_text", **args)
        seen += [h["path"] for h in res["hits"]]
        totals.add(res["total"])
        cursor = res.get("next_cursor")
        if not cursor:
            return seen, totals


@pytest.mark.parametrize(
    ("query", "excluded"),
    [
        ("links -embed", {"en/Internal links.md"}),
        ("link -exclamation", {"en/Internal links.md"}),
        ("链接 -嵌入", {"zh/内部链接.md"}),
        ("链接 -感叹号", {"zh/内部链接.md"}),
    ],
)
async def test_exclusion_applies_to_the_whole_note_not_only_the_title(
    connect: Any, make_vault: Any, query: str, excluded: set[str]
) -> None:
    root = make_vault(REAL)
    async with connect(root) as s:
        seen, totals = await all_hits(s, query)
        assert not excluded & set(seen), seen
        assert len(seen) == len(set(seen)), "a page repeated a note"
        assert totals == {len(seen)}, (totals, seen)  # total counts what paging returns


async def test_total_and_paging_agree_with_title_and_body_matches(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(REAL)
    async with connect(root) as s:
        for query in ("links", "链接", "notes"):
            seen, totals = await all_hits(s, query, limit=1)
            assert len(seen) == len(set(seen)), seen
            assert totals == {len(seen)}, (query, totals, seen)


async def test_title_is_a_strong_weight_not_a_tier(connect: Any, make_vault: Any) -> None:
    """The note about links, with the word all through its body, outranks short notes that
    only have the word in their title; among equals a title match still wins."""
    main_zh = "# 双向引用\n\n" + "".join(
        f"第{i}段：链接可以指向笔记、标题或块，链接会随文件改名而更新。\n\n" for i in range(8)
    )
    main_en = "# Connecting notes\n\n" + "".join(
        f"Part {i}: links point to notes, headings or blocks; links follow renames.\n\n"
        for i in range(8)
    )
    files = {
        "zh/双向引用.md": main_zh,
        "en/Connecting notes.md": main_en,
        **{f"zh/链接{i}.md": f"# 链接{i}\n\n{FILLER_ZH}" for i in range(5)},
        **{f"en/Links {i}.md": f"# Links {i}\n\n{FILLER_EN}" for i in range(5)},
        "en/Same a.md": "# Notes\n\nraft is a consensus protocol.\n",
        "en/Raft.md": "# Raft\n\nraft is a consensus protocol.\n",
    }
    root = make_vault(files)
    async with connect(root) as s:
        zh = (await s.call("search_text", query="链接", limit=10))["hits"]
        assert zh[0]["path"] == "zh/双向引用.md", [h["path"] for h in zh]
        en = (await s.call("search_text", query="links", limit=10))["hits"]
        assert en[0]["path"] == "en/Connecting notes.md", [h["path"] for h in en]
        raft = (await s.call("search_text", query="raft", limit=10))["hits"]
        assert [h["path"] for h in raft] == ["en/Raft.md", "en/Same a.md"]


async def test_an_index_of_an_older_layout_is_rebuilt_and_keeps_recalls_tables(
    connect: Any, make_vault: Any
) -> None:
    import sqlite3

    root = make_vault(REAL)
    async with connect(root) as s:
        await s.call("search_text", query="links")
    db_path = root / ".git" / "vaultwatch" / "index.sqlite"
    db = sqlite3.connect(db_path)
    db.execute("UPDATE meta SET value='1' WHERE key='schema'")
    db.execute("CREATE TABLE vectors_keep(x)")
    db.execute("INSERT INTO vectors_keep VALUES (42)")
    db.commit()
    db.close()
    async with connect(root) as s:
        seen, _ = await all_hits(s, "links -embed")
        assert seen and "en/Internal links.md" not in seen
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT x FROM vectors_keep").fetchall() == [(42,)]
    assert db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] != "1"
    db.close()


FOLDERS: dict[str, str] = {
    "sessions/a.md": "# A\n\nkafka consumer lag\n",
    "sessions/deep/b.md": "# B\n\nkafka consumer groups\n",
    "session-notes/c.md": "# C\n\nkafka consumer rebalancing\n",
    "sess.md": "# Sess\n\nkafka consumer\n",
    "other/Kafka.md": "# Streams\n\nKAFKA Consumer offsets\n",
}


async def test_folder_is_that_folder_and_its_subfolders_in_every_tool(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(FOLDERS)
    want = ["sessions/a.md", "sessions/deep/b.md"]
    async with connect(root) as s:
        for folder in ("sessions", "sessions/", "/sessions"):
            got = await s.call("search_text", query="consumer", folder=folder)
            assert sorted(h["path"] for h in got["hits"]) == want, folder
            listed = await s.call("list_docs", folder=folder)
            assert sorted(d["path"] for d in listed["docs"]) == want, folder
        inline = await s.call("search_text", query="consumer path:sessions")
        assert sorted(h["path"] for h in inline["hits"]) == want
        for bare in ("sess", "session"):  # a name prefix is not a folder
            assert (await s.call("search_text", query="consumer", folder=bare))["total"] == 0
            assert (await s.call("search_text", query=f"consumer path:{bare}"))["total"] == 0
            assert (await s.call("list_docs", folder=bare))["docs"] == []
        tools = {t.name: t for t in (await s.client.list_tools()).tools}
        for name in ("list_docs", "search_text", "recall"):
            desc = tools[name].input_schema["properties"]["folder"]["description"]
            assert "sub-folders" in desc and "prefix" not in desc, (name, desc)
        q = tools["recall"].input_schema["properties"]["query"]["description"]
        assert "case" in q.lower(), q


def test_one_exclusion_rule_for_search_and_recall() -> None:
    from server.index.search_query import excluded, parse

    pq = parse("consumer -kafka")
    assert excluded(pq, "KAFKA Consumer offsets")
    assert excluded(pq, "ＫＡＦＫＡ consumer")  # full width folds too
    assert not excluded(pq, "consumer offsets")
    assert excluded(pq, "kafkaesque consumer")  # the prefix rule the index applies to words


@pytest.mark.semantic
async def test_recall_applies_the_same_folder_and_exclusion_rules(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(FOLDERS)
    async with connect(root) as s:
        r = await s.call("recall", query="kafka consumer", folder="sessions", limit=10)
        for _ in range(120):  # the first call starts embedding; a small vault is quick
            if r["ready"]:
                break
            await anyio.sleep(0.5)
            r = await s.call("recall", query="kafka consumer", folder="sessions", limit=10)
        assert sorted(h["path"] for h in r["hits"]) == ["sessions/a.md", "sessions/deep/b.md"], r
        assert (await s.call("recall", query="kafka consumer", folder="sess"))["hits"] == []
        r = await s.call("recall", query="kafka consumer path:sess")
        assert r["hits"] == []
        r = await s.call("recall", query="consumer offsets -kafka", limit=10)
        assert r["hits"] == [], r  # every note says kafka, in some case


TABLE_NOTE = (
    "# Formats\n\n| Note | Picture |\n| --- | --- |\n"
    "| [[Internal links\\|links]] | ![[diagram.png\\|100]] |\n"
)


async def test_table_links_with_escaped_pipes_count_everywhere(
    connect: Any, make_vault: Any
) -> None:
    from app.services.remove_action import plan_remove

    root = make_vault({**REAL, "en/Formats.md": TABLE_NOTE, "en/diagram.png": b"\x89PNG\r\n"})
    plan = plan_remove(root, "en/Internal links.md")
    assert [(src, line) for src, line, _ in plan.backlinks] == [("en/Formats.md", 5)]
    plan = plan_remove(root, "en/diagram.png")
    assert [written for _, _, written in plan.backlinks] == ["![[diagram.png\\|100]]"]
    async with connect(root) as s:
        made = await s.call(
            "create_doc",
            path="en/Pictures.md",
            body="| a | b |\n| - | - |\n| ![[diagram.png\\|100]] | x |\n",
        )
        assert made["path"] == "en/Pictures.md"


CLI_NOTE = (
    "# Obsidian CLI\n\nRun commands from a terminal.\n\n## General commands\n\n"
    "### `daily`\n\nOpen today's daily note.\n\n"
    "### `daily:path`\n\nPrint the daily note's path.\n\n"
    "### `search` and `search:context`\n\nSearch the vault.\n\n"
    "## 常见问题\n\n### 为什么要用命令行？\n\n因为快。\n"
)


async def test_headings_made_of_inline_code_are_sections(connect: Any, make_vault: Any) -> None:
    root = make_vault({"en/Obsidian CLI.md": CLI_NOTE})
    async with connect(root) as s:
        r = await s.call("read_doc", path="en/Obsidian CLI.md", section="`daily:path`")
        assert r["section"] == "Obsidian CLI/General commands/`daily:path`"
        assert r["content"].startswith("### `daily:path`\n\nPrint")
        assert "### `search`" not in r["content"]
        heads = [o["heading"] for o in r["outline"]]
        assert len(heads) == len(set(heads)), heads  # no repeated 'General commands/'
        assert "Obsidian CLI/General commands/`search` and `search:context`" in heads
        # the model may leave out the backticks
        r = await s.call("read_doc", path="en/Obsidian CLI.md", section="daily:path")
        assert r["content"].startswith("### `daily:path`")
        # section names are NFKC-folded: ? finds ？
        r = await s.call("read_doc", path="en/Obsidian CLI.md", section="为什么要用命令行?")
        assert r["content"].startswith("### 为什么要用命令行？")
        await s.call(
            "append_section", path="en/Obsidian CLI.md", heading="`daily:path`", content="- new"
        )
        text = (root / "en/Obsidian CLI.md").read_text(encoding="utf-8")
        assert text.count("`daily:path`") == 1, text
        assert "Print the daily note's path.\n\n- new\n" in text, text


async def test_tail_takes_entries_below_a_lone_title_heading(connect: Any, make_vault: Any) -> None:
    weeks = "".join(f"## Week {i}\n\n- did {i}\n\n" for i in range(1, 6))
    root = make_vault({"log.md": "# Training log\n\nIntro.\n\n" + weeks, "cli.md": CLI_NOTE})
    async with connect(root) as s:
        r = await s.call("read_doc", path="log.md", tail=2)
        assert r["content"].startswith("## Week 4\n"), r["content"][:80]
        assert "the last 2 of 5 entries" in r["next"]
        r = await s.call("read_doc", path="cli.md", tail=1)  # H1, then 2 H2s: the H2s
        assert r["content"].startswith("## 常见问题"), r["content"][:80]


def _commit(root: Path, when: str, message: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", message], check=True, env=env)


@pytest.fixture
def cloned(make_vault: Any, tmp_path: Path) -> Path:
    """A vault with a year of history, cloned: every file has the clone's mtime."""
    origin = make_vault({"old.md": "# Old\n\n#alpha\n"}, git=False, name="origin")
    subprocess.run(["git", "-C", str(origin), "init", "-q"], check=True)
    _commit(origin, "2025-01-05T10:00:00+00:00", "old")
    (origin / "mid.md").write_text("# Mid\n\n#alpha\n", encoding="utf-8")
    _commit(origin, "2025-06-01T10:00:00+00:00", "mid")
    (origin / "new.md").write_text("# New\n\n#beta\n", encoding="utf-8")
    (origin / "sub").mkdir()
    (origin / "sub/也是.md").write_text("# 也是\n", encoding="utf-8")
    _commit(origin, "2025-11-20T10:00:00+00:00", "new")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    return clone


async def test_a_cloned_vault_dates_notes_by_their_last_commit(connect: Any, cloned: Path) -> None:
    async with connect(cloned) as s:
        docs = (await s.call("list_docs", sort="-modified"))["docs"]
        assert [(d["path"], d["modified"][:10]) for d in docs] == [
            ("new.md", "2025-11-20"),
            ("sub/也是.md", "2025-11-20"),
            ("mid.md", "2025-06-01"),
            ("old.md", "2025-01-05"),
        ]
        ctx = (await s.call("get_context"))["blocks"]
        recent = next(b for b in ctx if b["title"] == "Recently changed")
        assert [d["path"] for d in recent["docs"]][:3] == ["new.md", "sub/也是.md", "mid.md"]
        tags = {t["tag"]: t for t in (await s.call("list_tags", days=30))["tags"]}
        assert tags["alpha"]["in_window"] == 0 and tags["alpha"]["trend"] == "quiet"
        old = await s.call("list_docs", date_field="modified", date_to="2025-03-01")
        assert [d["path"] for d in old["docs"]] == ["old.md"]
        hit = (await s.call("search_text", query="mid"))["hits"][0]
        assert hit["modified"][:10] == "2025-06-01"

        # the owner's uncommitted edit: its mtime; an AI commit: the commit's time
        (cloned / "old.md").write_text("# Old\n\n#alpha\nedited\n", encoding="utf-8")
        await s.call("append_section", path="mid.md", heading="Log", content="- today")
        today = dt.date.today().isoformat()
        docs = (await s.call("list_docs", sort="-modified"))["docs"]
        assert {d["path"] for d in docs[:2]} == {"old.md", "mid.md"}
        assert all(d["modified"][:10] == today for d in docs[:2])
        assert docs[2]["modified"][:10] == "2025-11-20"


async def test_dates_follow_edits_and_commits_without_a_new_log_pass(
    connect: Any, cloned: Path
) -> None:
    """After the first pass, an edit on disk re-checks only that note and a commit on top of
    HEAD reads only the new commit; both show in the next listing."""
    async with connect(cloned) as s:
        await s.call("list_docs")
        modified = s.vault.modified
        passes = modified.log_passes
        (cloned / "new.md").write_text("# New\n\nedited\n", encoding="utf-8")
        docs = (await s.call("list_docs", sort="-modified"))["docs"]
        assert (
            docs[0]["path"] == "new.md" and docs[0]["modified"][:10] == dt.date.today().isoformat()
        )
        _commit(cloned, "2025-12-01T10:00:00+00:00", "owner commits in a terminal")
        docs = (await s.call("list_docs", sort="-modified"))["docs"]
        assert (docs[0]["path"], docs[0]["modified"][:10]) == ("new.md", "2025-12-01")
        assert modified.log_passes == passes
        # the file is as committed again, git status says so: it takes the commit's time
        assert "new.md" not in modified._dirty


def test_eval_on_a_missing_vault_says_so_without_a_traceback(tmp_path: Path) -> None:
    import sys

    queries = tmp_path / "q.yaml"
    queries.write_text("- {q: x, expect: [a.md]}\n", encoding="utf-8")
    for args in (
        ["--vault", str(tmp_path / "nowhere"), "--queries", str(queries)],
        ["--vault", str(tmp_path), "--queries", str(tmp_path / "missing.yaml")],
    ):
        cmd = [sys.executable, "-m", "server.protocol.cli", "eval", *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode != 0
        assert "Traceback" not in r.stderr, r.stderr
        assert "nowhere" in r.stderr or "missing.yaml" in r.stderr, r.stderr


async def test_a_query_of_punctuation_says_what_is_wrong(connect: Any, make_vault: Any) -> None:
    root = make_vault({"a.md": "# A\n\nwords\n"})
    async with connect(root) as s:
        for q in ("?!", "— … ？", "-- //"):
            msg = await s.error("search_text", query=q)
            assert "only excludes" not in msg and "no words" in msg, (q, msg)
        assert "only excludes" in await s.error("search_text", query="-words")


CONFIG_YAML = """\
types:
  task:
    folder: tasks
    required: [done]
    dates: [due]
    values: {done: [true, false], status: [open, closed]}
"""


async def test_messages_show_values_as_yaml_and_identical_embeds_are_counted(
    connect: Any, make_vault: Any
) -> None:
    files: dict[str, str | bytes] = {
        "vault.config.yaml": CONFIG_YAML,
        "tasks/t.md": "---\ntype: task\ndone: false\nstatus: open\n---\n# T\n",
        "img.png": b"\x89PNG\r\n",
        "pics.md": "# Pics\n\n![[img.png]]\n\n![[img.png]]\n",
    }
    root = make_vault(files)
    async with connect(root) as s:
        msg = await s.error("update_frontmatter", path="tasks/t.md", set={"status": False})
        assert "False" not in msg and "status: false is not allowed" in msg, msg
        assert "use one of: open, closed" in msg, msg
        msg = await s.error("update_frontmatter", path="tasks/t.md", set={"due": True})
        assert "True" not in msg and "due: true is not a date" in msg, msg
        h = (await s.call("read_doc", path="pics.md"))["hash"]
        msg = await s.error(
            "replace_doc", path="pics.md", hash=h, content="# Pics\n\n![[img.png]]\n"
        )
        assert "drops one of 2 embeds of img.png" in msg, msg


def test_a_new_process_reuses_the_saved_pass(cloned: Path) -> None:
    from server.vault import Vault

    first = Vault(cloned)
    dates = {p: e.modified_ns for p, e in first.entries().items()}
    assert first.modified.log_passes == 1
    first.close()
    (cloned / "mid.md").write_text("# Mid\n\n#alpha\nmore\n", encoding="utf-8")
    _commit(cloned, "2025-12-24T10:00:00+00:00", "after the pass was saved")
    second = Vault(cloned)
    again = {p: e.modified_ns for p, e in second.entries().items()}
    assert second.modified.log_passes == 0  # the saved pass, and only the commit since
    assert again == {**dates, "mid.md": again["mid.md"]}
    assert dt.datetime.fromtimestamp(again["mid.md"] / 1e9, dt.UTC).date() == dt.date(2025, 12, 24)
    second.close()
