"""The tools' contract with clients, pinned: every tool's name and exact parameters (required or
optional, in order) as tools/list gives them, and its read-only/idempotent hints. Renaming or
dropping a parameter breaks every client that sends it, silently: here it fails a test first
(basic-memory's tests/mcp/test_tool_contracts.py does the same)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from server.core.tool_names import ToolName
from server.write.write_ops import WRITE_OPS, AnswerArgs

# `name?` is optional; the order is the order clients see.
EXPECTED_TOOL_PARAMETERS: dict[str, list[str]] = {
    "get_context": ["include_superseded?"],
    "list_docs": [
        "type?",
        "folder?",
        "tags_all?",
        "tags_any?",
        "tags_none?",
        "tag_prefix?",
        "where?",
        "date_from?",
        "date_to?",
        "date_field?",
        "sort?",
        "fields?",
        "group_by?",
        "limit?",
        "cursor?",
        "include_superseded?",
    ],
    "list_tags": ["days?", "prefix?", "limit?", "cursor?"],
    "read_doc": ["path", "section?", "tail?", "offset?"],
    "search_text": [
        "query",
        "type?",
        "folder?",
        "tags?",
        "limit?",
        "cursor?",
        "include_superseded?",
    ],
    "recall": ["query?", "path?", "limit?", "type?", "folder?", "include_superseded?"],
    "transcribe_recording": ["path", "offset?"],
    "create_doc": ["type?", "path?", "fields?", "body?", "tags?", "distinct_from?", "answers?"],
    "append_section": ["path", "heading", "content", "hash?", "answers?"],
    "edit_text": ["path", "old", "new", "count?", "hash?", "answers?"],
    "update_frontmatter": [
        "path",
        "set?",
        "unset?",
        "add_tags?",
        "remove_tags?",
        "hash?",
        "answers?",
    ],
    "replace_doc": ["path", "content", "hash", "answers?"],
    "supersede_doc": ["path", "by", "reason", "hash?", "answers?"],
    "batch": ["ops", "message?", "answers?"],
}

# (readOnlyHint, idempotentHint); no tool is destructive or reaches outside the vault.
EXPECTED_HINTS: dict[str, tuple[bool, bool]] = {
    "get_context": (True, True),
    "list_docs": (True, True),
    "list_tags": (True, True),
    "read_doc": (True, True),
    "search_text": (True, True),
    "recall": (True, True),
    "transcribe_recording": (True, True),
    "create_doc": (False, True),
    "append_section": (False, False),
    "edit_text": (False, False),
    "update_frontmatter": (False, True),
    "replace_doc": (False, True),
    "supersede_doc": (False, True),
    "batch": (False, False),
}

READ_TOOLS = [
    "get_context",
    "list_docs",
    "list_tags",
    "read_doc",
    "search_text",
    "recall",
    "transcribe_recording",
]


def parameters(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    return [n + ("" if n in required else "?") for n in schema.get("properties", {})]


async def listed(connect: Any, root: Path, **kw: Any) -> dict[str, Any]:
    async with connect(root, **kw) as s:
        return {t.name: t for t in (await s.client.list_tools()).tools}


@pytest.mark.anyio
async def test_every_tool_and_its_parameters_are_pinned(connect: Any, example_vault: Path) -> None:
    tools = await listed(connect, example_vault)
    assert list(tools) == list(EXPECTED_TOOL_PARAMETERS)
    assert {t.value for t in ToolName} == set(tools)  # the names are the constants
    got = {name: parameters(t.input_schema) for name, t in tools.items()}
    assert got == EXPECTED_TOOL_PARAMETERS
    for name, t in tools.items():
        a = t.annotations
        assert a is not None and t.title, name
        assert (a.read_only_hint, a.idempotent_hint) == EXPECTED_HINTS[name], name
        assert a.destructive_hint is False and a.open_world_hint is False, name
        assert t.description and "  " not in t.description, name  # one clean paragraph
        assert t.output_schema is not None, name  # results are checked against their model


@pytest.mark.anyio
async def test_a_read_only_server_lists_the_read_tools_unchanged(
    connect: Any, example_vault: Path
) -> None:
    tools = await listed(connect, example_vault, read_only=True)
    assert list(tools) == READ_TOOLS
    assert {n: parameters(t.input_schema) for n, t in tools.items()} == {
        n: EXPECTED_TOOL_PARAMETERS[n] for n in READ_TOOLS
    }


@pytest.mark.anyio
async def test_write_tools_take_their_parameters_from_the_operation_models(
    connect: Any, example_vault: Path
) -> None:
    """One declaration: each write tool's input schema is its model's, field by field (type,
    limits, default, description), and batch's description lists every operation."""
    tools = await listed(connect, example_vault)
    assert list(WRITE_OPS) == [n for n in EXPECTED_TOOL_PARAMETERS if n in WRITE_OPS]
    answers = AnswerArgs.model_json_schema()["properties"]
    for name, model in WRITE_OPS.items():
        schema = model.model_json_schema()
        listed_schema = tools[name].input_schema
        # the operation's fields, then `answers`, declared once for every write tool
        assert listed_schema["properties"] == {**schema["properties"], **answers}, name
        assert listed_schema.get("required", []) == schema.get("required", []), name
    ops_help = tools["batch"].input_schema["properties"]["ops"]["description"]
    assert "update_frontmatter(path, set?, unset?, add_tags?, remove_tags?, hash?)" in ops_help
    assert all(f"{name}(" in ops_help for name in WRITE_OPS)
    assert tools["batch"].input_schema["properties"]["answers"] == answers["answers"]


@pytest.mark.anyio
async def test_batch_checks_each_operation_against_the_tools_model(
    connect: Any, example_vault: Path
) -> None:
    """A limit the tool's schema sets (edit_text's count is 1 to 1000) holds inside a batch too,
    and a misspelt argument is named instead of dropped; nothing is written."""
    note = "weeks/2026-W49.md"
    before = (example_vault / note).read_bytes()
    edit = {"path": note, "old": "Log", "new": "Journal", "count": 0}
    async with connect(example_vault) as s:
        direct = await s.error("edit_text", **edit)
        in_batch = await s.error("batch", ops=[{"tool": "edit_text", "args": edit}])
        misspelt = await s.error(
            "batch", ops=[{"tool": "append_section", "args": {"path": note, "headng": "Log"}}]
        )
    assert "count" in direct and "greater than or equal to 1" in direct
    assert "bad_arguments" in in_batch and "count: Input should be greater than or equal to 1" in (
        in_batch
    )
    assert "headng: Extra inputs are not permitted" in misspelt
    assert (example_vault / note).read_bytes() == before


@pytest.mark.anyio
async def test_an_argument_a_tool_does_not_have_is_refused_not_dropped(
    connect: Any, example_vault: Path
) -> None:
    """The SDK drops arguments a tool does not declare: create_doc with `content` (its text goes
    in `body`) made an empty note, list_docs with `tag` listed every note. Now the call is
    refused with the tool's own names, nothing is written, and the owner's journal shows the
    refused write."""
    from server.write.journal import read_all

    from .conftest import git

    commits = int(git(example_vault, "rev-list", "--count", "HEAD"))
    async with connect(example_vault) as s:
        msg = await s.error("create_doc", path="inbox/idea.md", content="# Idea\n\ntext\n")
        listed = await s.error("list_docs", tag="crdt")
        many = await s.error("append_section", path="x.md", heading="Log", **{"k" * 2000: 1})
        ok = await s.call("create_doc", path="inbox/idea.md", body="# Idea\n\ntext\n")
    assert msg.startswith("rejected (unknown_argument): create_doc has no argument 'content'")
    assert (
        "its arguments: type, path, fields, body, tags" in msg and "Nothing was written" in msg
    ), msg
    assert "list_docs has no argument 'tag'" in listed and "tags_any" in listed, listed
    assert len(many) < 1_000 and "…" in many, many
    assert ok["created"] and (example_vault / "inbox/idea.md").read_text().endswith("text\n")
    refused = [
        e
        for e in read_all(example_vault / ".git/vaultwatch/events.jsonl")
        if e["kind"] == "rejected"
    ]
    assert [(e["tool"], e["code"], e["paths"]) for e in refused] == [
        ("create_doc", "unknown_argument", ["inbox/idea.md"]),
        ("append_section", "unknown_argument", ["x.md"]),
    ]
    # the refused calls made no commit: the one new commit is the create_doc that worked
    assert int(git(example_vault, "rev-list", "--count", "HEAD")) == commits + 1


@pytest.mark.anyio
async def test_arguments_of_the_wrong_type_say_which_and_what_to_send(
    connect: Any, example_vault: Path
) -> None:
    """The SDK's own text for arguments that fail its schema is pydantic's report on an
    internal model ('1 validation error for read_docArguments', a link to pydantic's docs);
    the model gets the argument, what was wrong, the type it sent (never the value) and the
    tool's arguments. A write refused so is journaled; a tool without arguments says so."""
    from server.write.journal import read_all

    async with connect(example_vault) as s:
        listed = await s.error("read_doc", path=["a", "b"])
        missing = await s.error("read_doc")
        nothing = await s.error("get_context", x=1)
        in_batch = await s.error("batch", ops=["x"])
    assert listed.startswith("'path': Input should be a valid string (got list)"), listed
    assert "its arguments: path (required), section, tail, offset" in listed
    assert "pydantic" not in listed and "read_docArguments" not in listed and "'a'" not in listed
    assert missing.startswith("'path' is required"), missing
    assert "get_context has no argument 'x'" in nothing, nothing
    assert "its arguments: include_superseded" in nothing, nothing
    assert in_batch.startswith("rejected (bad_arguments): 'ops.0': Input should be a valid")
    assert "Nothing was written" in in_batch
    refused = [
        e
        for e in read_all(example_vault / ".git/vaultwatch/events.jsonl")
        if e["kind"] == "rejected"
    ]
    assert [(e["tool"], e["code"]) for e in refused] == [("batch", "bad_arguments")]


@pytest.mark.anyio
async def test_servers_built_in_one_process_list_the_same_tools_and_each_answers_for_its_vault(
    connect: Any, make_vault: Any
) -> None:
    """A process builds each tool's schemas once (toolkit.built_tool) and every server it
    builds after gets a copy: the lists must be equal, each server's calls must reach its own
    vault, and a read-only server must still refuse to write."""
    a = make_vault({"a.md": "# A\n\nonly in vault a\n\n## Log\n"}, name="va")
    b = make_vault({"b.md": "# B\n\nonly in vault b\n\n## Log\n"}, name="vb")
    async with connect(a) as sa, connect(b) as sb, connect(a, read_only=True) as ro:
        la, lb = (await sa.client.list_tools()).tools, (await sb.client.list_tools()).tools
        assert [t.model_dump() for t in la] == [t.model_dump() for t in lb]
        assert [h["path"] for h in (await sa.call("search_text", query="only"))["hits"]] == ["a.md"]
        assert [h["path"] for h in (await sb.call("search_text", query="only"))["hits"]] == ["b.md"]
        await sb.call("append_section", path="b.md", heading="Log", content="- to b")
        await sa.call("append_section", path="a.md", heading="Log", content="- to a")
        assert [t.name for t in (await ro.client.list_tools()).tools] == READ_TOOLS
        assert "Unknown tool" in await ro.error(
            "append_section", path="a.md", heading="Log", content="- no"
        )
    assert (a / "a.md").read_text().endswith("## Log\n- to a\n")
    assert (b / "b.md").read_text().endswith("## Log\n- to b\n")
