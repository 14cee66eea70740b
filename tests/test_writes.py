"""The write tools through the real client: commits, rejections, conflicts, snapshots, journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from server.core.tool_names import ToolName
from server.notes.note import content_hash
from server.write import store_errors
from server.write.journal import read_all
from server.write.write_ops import WRITE_OPS

from .conftest import git, git_log, head

pytestmark = pytest.mark.anyio

CONFIG = """\
tags: {vocabulary: tags.yaml, unknown: reject}
types:
  session:
    folder: sessions
    filename: "{date}-{slug}.md"
    required: [date, kind]
    dates: [date]
    values: {kind: [mock, leetcode]}
"""


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": CONFIG,
            "tags.yaml": "- crdt\n- caching\n- 架构\n",
            "CLAUDE.md": "# Rules\n",
            "weeks/w.md": "# Week\n\n## Goals\n- a\n\n## Log\n- Mon: one\n\n## Notes\nend\n",
            "sessions/2026-11-01-old.md": "---\ndate: 2026-11-01\nkind: mock\ntags: [crdt]\n---\n# Old\n",
            "sessions/2026-11-02-bad.md": "---\ndate: 2026-13-45\nkind: mock\n---\n# Bad\n",
            "img/pic.png": b"\x89PNG\r\n",
            "notes/with-image.md": "# Pic\n\n![[pic.png]]\n\ntext\n",
        }
    )


async def test_append_is_one_ai_commit_with_trailers(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="weeks/w.md", heading="Log", content="- Tue: two")
    text = (vault / "weeks/w.md").read_text()
    assert text == "# Week\n\n## Goals\n- a\n\n## Log\n- Mon: one\n- Tue: two\n\n## Notes\nend\n"
    assert res["hash"] == content_hash(text.encode()) and res["commit"] == head(vault)
    msg = git(vault, "log", "-1", "--format=%an <%ae>|%cn|%B")
    assert msg.startswith(
        "Claude <claude@vaultwatch.local>|Claude|append_section: weeks/w.md § Log\n"
    )
    assert "Vaultwatch-Tool: append_section\n" in msg and "Vaultwatch-Client: " in msg
    assert git(vault, "show", "--name-only", "--format=", "HEAD").split() == ["weeks/w.md"]
    assert git(vault, "status", "--porcelain") == ""
    ev = [e for e in read_all(vault / ".git/vaultwatch/events.jsonl") if e["kind"] == "commit"][-1]
    assert ev["sha"] == res["commit"] and ev["paths"] == ["weeks/w.md"] and ev["chars"] > 0


async def test_append_creates_missing_heading_and_nested(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="weeks/w.md", heading="Ideas", content="- new")
        await s.call("append_section", path="weeks/w.md", heading="Week/Later", content="x")
    text = (vault / "weeks/w.md").read_text()
    assert (
        text.endswith("## Notes\nend\n## Later\nx\n\n## Ideas\n- new\n")
        or "## Ideas\n- new\n" in text
    )
    assert text.startswith("# Week\n\n## Goals\n- a\n\n## Log\n- Mon: one\n")


async def test_a_heading_is_one_line_of_at_most_six_hashes_and_some_text(
    connect: Any, vault: Path
) -> None:
    """A newline in the heading wrote a second, top-level heading into the note; a 100,000
    character heading became the commit's subject; '#' and '####### Seven' were written as
    headings of those characters. Each is refused, directly and in a batch, nothing written."""
    before, commit = (vault / "weeks/w.md").read_bytes(), head(vault)
    bad = {
        "Log\n# Injected top heading": "a heading is one line",
        "x" * 100_000: "at most 200 characters, not 100,000",
        "#": "the heading has no text",
        "####### Seven": "at most six #",
    }
    async with connect(vault) as s:
        for heading, said in bad.items():
            args = {"path": "weeks/w.md", "heading": heading, "content": "- x"}
            msg = await s.error("append_section", **args)
            assert "rejected (bad_arguments)" in msg and "heading" in msg and said in msg, msg
            assert len(msg) < 1_000
            msg = await s.error("batch", ops=[{"tool": "append_section", "args": args}])
            assert said in msg, msg
        ok = await s.call("append_section", path="weeks/w.md", heading="### Deep", content="- y")
    assert (vault / "weeks/w.md").read_text() == before.decode() + "\n### Deep\n- y\n"
    assert git(vault, "rev-list", "--count", f"{commit}..HEAD").strip() == "1" and ok["commit"]


async def test_create_doc_path_from_type_dedupe_and_folders(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call(
            "create_doc",
            type="session",
            fields={"date": "2026-12-01", "kind": "mock", "title": "Mock with Ana"},
            body="# Mock with Ana\n\nfine\n",
            tags=["crdt"],
        )
        assert res["path"] == "sessions/2026-12-01-mock-with-ana.md" and res["created"] is True
        text = (vault / res["path"]).read_text()
        assert text.startswith(
            "---\ndate: 2026-12-01\nkind: mock\ntitle: Mock with Ana\ntags: [crdt]\n---\n"
        )
        again = await s.call(
            "create_doc",
            type="session",
            fields={"date": "2026-12-09", "kind": "mock", "title": "Mock with Ana"},
            body="# Mock with Ana\n",
        )
        assert again["created"] is False and again["path"] == res["path"] and "commit" not in again
        assert again["hash"] == content_hash(text.encode())
        deep = await s.call("create_doc", path="new/deeper/folder/n.md", body="# N\n")
        assert (vault / deep["path"]).is_file()
        assert (await s.call("search_text", query="fine"))["hits"][0]["path"] == res["path"]
    assert git_log(vault, "--format=%s").splitlines()[:2] == [
        "create_doc: new/deeper/folder/n.md",
        "create_doc: sessions/2026-12-01-mock-with-ana.md",
    ]


async def test_create_mode_adds_new_tags_to_vocabulary_in_the_same_commit(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: create}\n",
            "tags.yaml": "- crdt\n",
        }
    )
    async with connect(root) as s:
        res = await s.call("create_doc", path="n.md", body="# N\n", tags=["crdt", "brand-new"])
    assert (root / "tags.yaml").read_text() == "- crdt\n- brand-new\n"
    assert sorted(git(root, "show", "--name-only", "--format=", res["commit"]).split()) == [
        "n.md",
        "tags.yaml",
    ]


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        (
            "create_doc",
            {"type": "session", "fields": {"date": "2026-12-01", "title": "T"}},
            "missing_field",
        ),
        (
            "create_doc",
            {"type": "session", "fields": {"date": "2026-12-01", "kind": "chat", "title": "T"}},
            "bad_value",
        ),
        (
            "create_doc",
            {"type": "session", "fields": {"date": "soon", "kind": "mock", "title": "T"}},
            "bad_date",
        ),
        (
            "create_doc",
            {"path": "sessions/whatever.md", "fields": {"date": "2026-12-01", "kind": "mock"}},
            "wrong_filename",
        ),
        ("create_doc", {"path": "n.md", "tags": ["nonsense"]}, "unknown_tag"),
        ("create_doc", {"path": "n.md", "body": "![[missing.png]]\n"}, "missing_attachment"),
        ("create_doc", {"type": "nope"}, "unknown_type"),
        (
            "update_frontmatter",
            {"path": "sessions/2026-11-01-old.md", "set": {"kind": "chat"}},
            "bad_value",
        ),
        (
            "update_frontmatter",
            {"path": "sessions/2026-11-01-old.md", "unset": ["kind"]},
            "missing_field",
        ),
        (
            "update_frontmatter",
            {"path": "sessions/2026-11-01-old.md", "add_tags": ["zzz"]},
            "unknown_tag",
        ),
        ("update_frontmatter", {"path": "sessions/2026-11-01-old.md"}, "empty_change"),
        (
            "append_section",
            {"path": "weeks/w.md", "heading": "Log", "content": "#nonsense tag"},
            "unknown_tag",
        ),
        (
            "append_section",
            {"path": "weeks/w.md", "heading": "Log", "content": "  "},
            "empty_content",
        ),
        (
            "append_section",
            {"path": "weeks/nope.md", "heading": "Log", "content": "x"},
            "not_found",
        ),
        (
            "append_section",
            {"path": "CLAUDE.md", "heading": "Rules", "content": "obey"},
            "protected",
        ),
        (
            "append_section",
            {"path": "vault.config.yaml", "heading": "x", "content": "x"},
            "path_extension",
        ),
        ("edit_text", {"path": "weeks/w.md", "old": "- Mon: uno", "new": "x"}, "no_match"),
        ("edit_text", {"path": "weeks/w.md", "old": "- ", "new": "* "}, "match_count"),
        ("edit_text", {"path": "../w.md", "old": "a", "new": "b"}, "path_escape"),
        (
            "replace_doc",
            {"path": "notes/with-image.md", "content": "# Pic\n\ntext\n", "hash": "x"},
            "CONFLICT",
        ),
    ],
)
async def test_each_rejection_has_a_code_and_writes_nothing(
    connect: Any, vault: Path, tool: str, args: dict[str, Any], code: str
) -> None:
    before_head = head(vault)
    before = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".git" not in p.parts}
    async with connect(vault) as s:
        msg = await s.error(tool, **args)
    if code == "CONFLICT":
        assert "conflict" in msg and "read_doc" in msg
    else:
        assert f"rejected ({code})" in msg and "To fix:" in msg and "Nothing was written" in msg
    after = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before and head(vault) == before_head
    assert git(vault, "status", "--porcelain") == ""
    kinds = [e["kind"] for e in read_all(vault / ".git/vaultwatch/events.jsonl")]
    assert kinds[-1] == ("conflict" if code == "CONFLICT" else "rejected")


async def test_a_refused_path_says_what_to_do_about_it(connect: Any, make_vault: Any) -> None:
    """A folder named like a note was reported as a conflict ('changed while the write was being
    prepared, call read_doc', which then found no note); a private folder's refusal said 'use a
    path inside the vault', which it was."""
    root = make_vault(
        {
            "vault.config.yaml": 'private: ["secret/"]\n',
            "dir.md/inner.md": "# Inner\n",
            "secret/s.md": "# S\n",
        }
    )
    async with connect(root) as s:
        folder = await s.error("create_doc", path="dir.md", body="# X\n")
        private = await s.error("create_doc", path="secret/new.md", body="# X\n")
    assert "rejected (path_is_folder): dir.md is a folder, not a note" in folder, folder
    assert "such as dir.md/note.md" in folder and "conflict" not in folder
    assert "rejected (path_private)" in private and "write the note somewhere else" in private
    assert "inside the vault" not in private, private
    assert (root / "dir.md").is_dir() and not (root / "secret/new.md").exists()


async def test_frontmatter_keys_a_person_could_write_and_one_frontmatter(
    connect: Any, vault: Path
) -> None:
    """`{"": 1}` was written as `? ''`, a key `---` as a line that ends the frontmatter, and a
    body with its own frontmatter beside fields as a note with two. Each is refused."""
    note = "sessions/2026-11-01-old.md"
    before = (vault / note).read_bytes()
    async with connect(vault) as s:
        empty = await s.error("update_frontmatter", path=note, set={"": 1})
        fence = await s.error("update_frontmatter", path=note, set={"---": 1})
        broken = await s.error("update_frontmatter", path=note, unset=["a\nb"])
        made = await s.error(
            "create_doc",
            path="notes/two.md",
            fields={"status": "open"},
            body="---\nkind: x\n---\n# Two\n",
        )
        ok = await s.call("create_doc", path="notes/one.md", body="---\nkind: x\n---\n# One\n")
    assert "a frontmatter key is empty" in empty, empty
    assert "reads as syntax" in fence and "line break" in broken, (fence, broken)
    assert "rejected (two_frontmatters)" in made and not (vault / "notes/two.md").exists()
    assert (vault / note).read_bytes() == before
    assert ok["created"] and (vault / "notes/one.md").read_text().startswith("---\nkind: x\n---")


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("notes/zw\u200b.md", "invisible character (U+200B)"),
        ("notes/\u202egnp.md", "invisible character (U+202E)"),
        ("sessions\uff0fx.md", "looks like a folder's slash"),
        ("notes/a:b.md", "Windows and Obsidian do not allow"),
        ("notes/what?.md", "Windows and Obsidian do not allow"),
        ("notes/CON.md", "a device name on Windows"),
        ("new folder./x.md", "ending in a space or a dot"),
    ],
)
async def test_a_new_notes_name_cannot_mislead_or_fail_to_sync(
    connect: Any, vault: Path, path: str, said: str
) -> None:
    """create_doc took names a reader cannot tell from others (a zero-width space, a name shown
    backwards, a full-width slash that reads as a folder) and names Windows or Obsidian refuse."""
    async with connect(vault) as s:
        msg = await s.error("create_doc", path=path, body="# X\n")
    assert "rejected (bad_name)" in msg and said in msg, msg
    assert git(vault, "status", "--porcelain") == ""
    assert not any(p.name.startswith(("zw", "CON", "a:b")) for p in vault.rglob("*.md"))


async def test_an_owners_folder_with_any_name_takes_new_notes(
    connect: Any, make_vault: Any
) -> None:
    """Only what the note creates is checked: the owner's own folder keeps its name."""
    root = make_vault({"Q&A: notes?/old.md": "# Old\n"})
    async with connect(root) as s:
        res = await s.call("create_doc", path="Q&A: notes?/new.md", body="# New\n")
    assert res["created"] and (root / "Q&A: notes?/new.md").is_file()


async def test_rejected_event_carries_the_attempted_diff(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.error("update_frontmatter", path="sessions/2026-11-01-old.md", set={"kind": "chat"})
    ev = read_all(vault / ".git/vaultwatch/events.jsonl")[-1]
    assert ev["code"] == "bad_value" and "use one of: mock, leetcode" in ev["hint"]
    assert "-kind: mock\n+kind: chat" in ev["diff"] and ev["paths"] == [
        "sessions/2026-11-01-old.md"
    ]


async def test_old_problems_are_warnings_not_rejections(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call(
            "append_section", path="sessions/2026-11-02-bad.md", heading="Log", content="- ok"
        )
        assert res["commit"] and any("not a date" in w for w in res["warnings"])
        msg = await s.error("update_frontmatter", path="sessions/2026-11-02-bad.md", unset=["kind"])
        assert "missing_field" in msg


@pytest.mark.parametrize(
    "secret",
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "aws key AKIAIOSFODNN7EXAMPLE",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
        "slack xoxb-123456789012-abcdefghijkl",
        "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
        "stripe sk_live_abcdefghijklmnop1234",
        "google AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "db postgres://admin:s3cretpass@db.example.com/prod",
        "password: hunter2hunter2",
        "API_KEY = 'abcd1234efgh5678'",
    ],
)
async def test_secrets_are_refused_without_echoing_them(
    connect: Any, vault: Path, secret: str
) -> None:
    async with connect(vault) as s:
        msg = await s.error("append_section", path="weeks/w.md", heading="Log", content=secret)
    assert "rejected (secret)" in msg
    value = max(secret.replace("\n", " ").split(), key=len)  # the secret-looking part
    assert value not in msg
    ev = read_all(vault / ".git/vaultwatch/events.jsonl")[-1]
    assert ev["code"] == "secret"


async def test_words_about_secrets_are_not_secrets(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call(
            "append_section",
            path="weeks/w.md",
            heading="Log",
            content="- never store a password in notes; the token bucket limiter; password: <in 1Password>",
        )


async def test_replace_needs_the_hash_and_keeps_attachments(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        read = await s.call("read_doc", path="notes/with-image.md")
        msg = await s.error(
            "replace_doc", path="notes/with-image.md", content="# Pic\n\ntext\n", hash=read["hash"]
        )
        assert "attachments_changed" in msg and "drops pic.png" in msg
        msg = await s.error(
            "replace_doc",
            path="notes/with-image.md",
            content="# Pic\n![[pic.png]]\n![[other.png]]\n",
            hash=read["hash"],
        )
        assert "adds other.png" in msg
        ok = await s.call(
            "replace_doc",
            path="notes/with-image.md",
            content="# Picture\n\nmoved text\n\n![[pic.png]]\n",
            hash=read["hash"],
        )
        assert ok["commit"]
        same = await s.call(
            "replace_doc",
            path="notes/with-image.md",
            content="# Picture\n\nmoved text\n\n![[pic.png]]\n",
            hash=ok["hash"],
        )
        assert same["noop"] is True and "commit" not in same
    kinds = [e["kind"] for e in read_all(vault / ".git/vaultwatch/events.jsonl")]
    assert kinds[-1] == "noop"


async def test_conflict_when_the_file_changed_between_read_and_replace(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        read = await s.call("read_doc", path="weeks/w.md")
        (vault / "weeks/w.md").write_text("# Week\nhuman rewrote it\n")
        msg = await s.error(
            "replace_doc", path="weeks/w.md", content="# AI version\n", hash=read["hash"]
        )
        current = content_hash((vault / "weeks/w.md").read_bytes())
        assert current in msg and read["hash"] in msg
        # small writes may take the hash too
        msg = await s.error(
            "append_section", path="weeks/w.md", heading="Log", content="x", hash=read["hash"]
        )
        assert "conflict" in msg
    assert (vault / "weeks/w.md").read_text() == "# Week\nhuman rewrote it\n"
    ev = next(
        e for e in read_all(vault / ".git/vaultwatch/events.jsonl") if e["kind"] == "conflict"
    )
    assert (ev["path"], ev["expected"], ev["actual"]) == ("weeks/w.md", read["hash"], current)


async def test_human_edits_are_snapshotted_first(connect: Any, vault: Path) -> None:
    (vault / "weeks/w.md").write_text("# Week\n\n## Log\n- Mon: one\n- human line\n")
    (vault / "loose.md").write_text("# untracked human note\n")
    async with connect(vault) as s:
        await s.call("append_section", path="weeks/w.md", heading="Log", content="- ai line")
    log = git(
        vault, "log", "-2", "--format=%an|%s|%(trailers:key=Vaultwatch-Action,valueonly)"
    ).split("\n")
    assert log[0].startswith("Claude|append_section")
    assert log[1].startswith("Test Owner|snapshot: weeks/w.md|snapshot")
    ai_diff = git(vault, "show", "--format=", "HEAD")
    assert "+- ai line" in ai_diff and "human line" not in ai_diff.split("@@")[-1].replace(
        " - human line", ""
    )
    assert "+- human line" in git(vault, "show", "--format=", "HEAD~1")
    assert git(vault, "status", "--porcelain") == "?? loose.md\n"  # other human work untouched


async def test_batch_all_or_nothing_and_one_commit(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        start = head(vault)
        msg = await s.error(
            "batch",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "weeks/w.md", "heading": "Log", "content": "- ok"},
                },
                {
                    "tool": "update_frontmatter",
                    "args": {"path": "sessions/2026-11-01-old.md", "set": {"kind": "bad"}},
                },
                {
                    "tool": "edit_text",
                    "args": {"path": "weeks/w.md", "old": "nothing like this", "new": "x"},
                },
            ],
        )
        assert "2 problems" in msg and "operation 2" in msg and "operation 3" in msg
        assert head(vault) == start and git(vault, "status", "--porcelain") == ""
        res = await s.call(
            "batch",
            message="weekly tidy",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "weeks/w.md", "heading": "Log", "content": "- Tue"},
                },
                {
                    "tool": "append_section",
                    "args": {"path": "weeks/w.md", "heading": "Log", "content": "- Wed"},
                },
                {"tool": "create_doc", "args": {"path": "n/new.md", "body": "# New\n"}},
                {
                    "tool": "update_frontmatter",
                    "args": {"path": "sessions/2026-11-01-old.md", "add_tags": ["caching"]},
                },
            ],
        )
        assert len(res["results"]) == 4
    assert git(vault, "rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert git(vault, "log", "-1", "--format=%s").strip() == "weekly tidy"
    assert "- Mon: one\n- Tue\n- Wed\n" in (vault / "weeks/w.md").read_text()
    assert sorted(git(vault, "show", "--name-only", "--format=", "HEAD").split()) == [
        "n/new.md",
        "sessions/2026-11-01-old.md",
        "weeks/w.md",
    ]


async def test_a_batch_makes_one_note_of_a_title_per_folder(connect: Any, vault: Path) -> None:
    """Two create_doc of one title in one folder in a batch made two notes; a single create_doc
    of that title hands back the note already there, and so does the batch's second one now."""

    def create(path: str) -> dict[str, Any]:
        return {"tool": "create_doc", "args": {"path": path, "body": "# Same Title\n\ntext\n"}}

    async with connect(vault) as s:
        res = await s.call("batch", ops=[create("notes/dup-a.md"), create("notes/dup-b.md")])
    first, second = res["results"]
    assert first["created"] is True and first["path"] == "notes/dup-a.md"
    assert second["created"] is False and second["path"] == "notes/dup-a.md", second
    assert second["hash"] == first["hash"]
    assert not (vault / "notes/dup-b.md").exists()


async def test_batch_limit_and_shape(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        op = {
            "tool": "append_section",
            "args": {"path": "weeks/w.md", "heading": "Log", "content": "x"},
        }
        assert "at most 200" in await s.error("batch", ops=[op] * 201)
        assert "must look like" in await s.error("batch", ops=[{"append_section": {}}])
        assert "unknown tool" in await s.error("batch", ops=[{"tool": "delete_doc", "args": {}}])


async def test_written_means_searchable_and_listed(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("search_text", query="anything")
        await s.call(
            "append_section", path="weeks/w.md", heading="Log", content="- zebracorn sighting"
        )
        assert (await s.call("search_text", query="zebracorn"))["hits"][0]["path"] == "weeks/w.md"
        await s.call("update_frontmatter", path="weeks/w.md", add_tags=["架构"])
        assert [d["path"] for d in (await s.call("list_docs", tags_any=["架构"]))["docs"]] == [
            "weeks/w.md"
        ]


async def test_read_only_server_has_no_write_tools(connect: Any, vault: Path) -> None:
    async with connect(vault, read_only=True) as s:
        names = {t.name for t in (await s.client.list_tools()).tools}
    # the read tools: every tool but the write operations and batch (names said once, in ToolName)
    reads = {t.value for t in ToolName} - set(WRITE_OPS) - {ToolName.BATCH.value}
    assert names == reads and "read_doc" in reads and "create_doc" not in reads
    async with connect(vault) as s:
        tools = {t.name: t for t in (await s.client.list_tools()).tools}
    assert set(tools) == {t.value for t in ToolName}
    assert all(t.annotations.read_only_hint is False for n, t in tools.items() if n not in reads)
    assert all(t.annotations.destructive_hint is False for t in tools.values())


async def test_stale_index_lock_is_reported_not_deleted(
    connect: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the lock never goes: the write's wait for git (20 s) shortened, the refusal is the same
    monkeypatch.setattr(store_errors, "GIT_WAIT_S", 1.0)
    (vault / ".git/index.lock").write_text("")
    async with connect(vault) as s:
        msg = await s.error("append_section", path="weeks/w.md", heading="Log", content="x")
    assert "index.lock" in msg and (vault / ".git/index.lock").exists()
    assert "- Mon: one\n\n" in (vault / "weeks/w.md").read_text()


async def test_owner_commits_between_ai_writes_are_kept(connect: Any, vault: Path) -> None:
    """The AI's commits are built on whatever HEAD is: an owner's own git commit in between
    (outside vaultwatch) is never undone by the next AI commit."""
    async with connect(vault) as s:
        await s.call("append_section", path="weeks/w.md", heading="Log", content="- ai one")
        (vault / "notes/owner.md").write_text("# Owner's own\n")
        (vault / "sessions/2026-11-01-old.md").write_text(
            "---\ndate: 2026-11-01\nkind: leetcode\n---\n# Old\n"
        )
        git(vault, "add", "-A")
        git(vault, "commit", "-q", "-m", "owner commit")
        await s.call("append_section", path="weeks/w.md", heading="Log", content="- ai two")
    assert git(vault, "log", "--format=%s", "-3").split("\n")[:3] == [
        "append_section: weeks/w.md § Log",
        "owner commit",
        "append_section: weeks/w.md § Log",
    ]
    assert git(vault, "show", "HEAD:notes/owner.md") == "# Owner's own\n"
    assert "kind: leetcode" in git(vault, "show", "HEAD:sessions/2026-11-01-old.md")
    assert git(vault, "status", "--porcelain") == ""


async def test_frontmatter_comments_are_never_headings(connect: Any, make_vault: Any) -> None:
    root = make_vault(
        {"n.md": "---\n# a YAML comment, not a heading\ntitle: N\n---\n# N\n\ntext\n"}
    )
    async with connect(root) as s:
        await s.call(
            "append_section", path="n.md", heading="a YAML comment, not a heading", content="x"
        )
    text = (root / "n.md").read_text()
    assert text.startswith("---\n# a YAML comment, not a heading\ntitle: N\n---\n# N\n\ntext\n")
    assert text.endswith("\n## a YAML comment, not a heading\nx\n")
