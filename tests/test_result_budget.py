"""`limits.result_chars` is a hard cap on what the client receives: the JSON text of every
result and every error, tags, frontmatter and escapes included, measured through the real MCP
client. Paging still says exactly how to get the rest."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

LIMIT = 2_000
CONFIG = f"limits: {{result_chars: {LIMIT}}}\n"
CTRL = "".join(chr(c) for c in range(1, 32) if chr(c) not in "\n\r\t")  # 6x when JSON-escaped
CONTEXT_CONFIG = (
    CONFIG
    + """\
tags: {vocabulary: tags.yaml}
types:
  note: {folder: notes}
context:
  - rules
  - {title: Recent, type: note, latest: 5}
  - {title: Top tags, tags: {days: 30, limit: 50}}
"""
)

NOTES: dict[str, str] = {
    "CLAUDE.md": "# Rules\n\n" + "- be brief\n" * 400,
    "tags.yaml": "".join(f"- never-used-{'v' * 30}-{i}\n" for i in range(3_000)),
    "notes/lines.md": "# Lines\n\n" + "x\n" * 6_000,  # many short lines: \n escapes to 2 chars
    "notes/ctrl.md": "# Ctrl\n\n" + (CTRL + "\n") * 300,
    "notes/quotes.md": "# Quotes\n\n" + '"\\' * 3_000 + "\n",
    "notes/tagged.md": "# Tagged\n\n" + " ".join(f"#t{i:05d}" for i in range(1_500)) + "\n",
    "notes/front.md": "---\n"
    + "".join(f"f{i}: {'v' * 250}\n" for i in range(300))
    + "tags: ["
    + ", ".join(f"ft{i}" for i in range(1_000))
    + "]\n---\n# Front\n\ntagged\n",
    "notes/title.md": "# " + "T" * 10_000 + "\n\ntagged\n",
    "notes/heads.md": "".join(f"## {'H' * 300} {i}\n\nbody {i}\n" for i in range(200)),
    **{f"notes/n{i:03d}.md": f"# N{i}\n\ntagged {CTRL}\n" for i in range(60)},
}


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"vault.config.yaml": CONTEXT_CONFIG, **NOTES})


async def call(s: Any, tool: str, **args: Any) -> tuple[bool, str]:
    """(is_error, the text the client received), asserting it is within the budget."""
    assert s.vault.config.limits.result_chars == LIMIT and not s.vault.config_errors
    r = await s.client.call_tool(tool, args)
    text = r.content[0].text
    assert len(text) <= LIMIT, f"{tool} {list(args)}: {len(text)} chars > {LIMIT}"
    if not r.is_error:
        assert json.loads(text) == r.structured_content
        assert (
            len(json.dumps(r.structured_content, ensure_ascii=False, separators=(",", ":")))
            <= LIMIT
        )
    return bool(r.is_error), text


@pytest.mark.parametrize(
    "path", sorted(p for p in NOTES if p.endswith(".md") and not p.startswith("notes/n"))
)
async def test_read_doc_pages_any_note_within_the_budget(
    connect: Any, vault: Path, path: str
) -> None:
    whole = (vault / path).read_text(encoding="utf-8")
    async with connect(vault) as s:
        got, offset = [], 0
        for _ in range(2_000):
            err, text = await call(s, "read_doc", path=path, offset=offset)
            assert not err
            res = json.loads(text)
            assert res["range"][0] == offset and res["range"][1] > offset
            got.append(res["content"])
            if res["complete"] or res["range"][1] >= res["chars"]:
                break
            # the footer says exactly where the rest starts
            m = re.search(r"offset=(\d+)", res["next"])
            assert m is not None and int(m.group(1)) == res["range"][1]
            offset = res["range"][1]
        assert "".join(got) == whole


async def test_lists_and_searches_page_within_the_budget(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        for tool, args, key in [
            ("list_docs", {"folder": "notes", "limit": 200}, "docs"),
            ("list_docs", {"limit": 200, "sort": "title"}, "docs"),
            ("search_text", {"query": "tagged", "limit": 50}, "hits"),
            ("list_tags", {"limit": 500, "prefix": "t001"}, "tags"),
        ]:
            seen, cursor = [], None
            for _ in range(500):
                err, text = await call(s, tool, **args, **({"cursor": cursor} if cursor else {}))
                assert not err
                res = json.loads(text)
                seen += [row.get("path") or row.get("tag") for row in res[key]]
                cursor = res.get("next_cursor")
                if not cursor:
                    break
            # every item comes exactly once across the pages
            assert len(seen) == len(set(seen)) == res["total"], tool
        reads: list[tuple[str, dict[str, Any]]] = [
            ("get_context", {}),
            ("list_docs", {"group_by": "tag"}),
            ("read_doc", {"path": "notes/heads.md", "section": "H" * 300 + " 7"}),
            ("read_doc", {"path": "notes/lines.md", "tail": 500}),
            ("read_doc", {"path": "notes/front.md"}),
        ]
        for tool, args in reads:
            err, _ = await call(s, tool, **args)
            assert not err


async def test_write_results_stay_within_the_budget(connect: Any, vault: Path) -> None:
    # quotes and backslashes: twice their length as JSON (control characters, six times, are
    # refused in what the AI writes since the adversarial pass; `call` checks the budget)
    heavy = '"\\' * 10
    async with connect(vault) as s:
        err, text = await call(
            s,
            "append_section",
            path="notes/lines.md",
            heading="Lines",
            content=(heavy + "\n") * 200,
        )
        assert not err and json.loads(text)["commit"], text
        err, text = await call(
            s, "create_doc", path="notes/new.md", body="# New\n\n" + (heavy + "\n") * 200
        )
        assert not err and json.loads(text)["created"], text


async def test_errors_stay_within_the_budget_and_still_say_what_to_do(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("read_doc", {"path": "p" * 300_000 + ".md"}, ""),
            ("read_doc", {"path": "notes/heads.md", "section": "nope"}, "no heading"),
            ("search_text", {"query": "a", "type": "t" * 300_000}, ""),
            ("list_docs", {"where": {"k": {"op" * 100_000: 1}}}, ""),
            (
                "create_doc",
                {
                    "path": "notes/embeds.md",
                    "body": "".join(f"![[missing-{i}.png]]\n" for i in range(5_000)),
                },
                "Nothing was written",
            ),
            (
                "batch",
                {
                    "ops": [
                        {
                            "tool": "append_section",
                            "args": {
                                "path": f"notes/none-{i}-{'z' * 200}.md",
                                "heading": "Log",
                                "content": "x",
                            },
                        }
                        for i in range(200)
                    ]
                },
                "Nothing was written",
            ),
            ("read_doc", {"path": "notes/n001.md", "section": "S" * 300_000}, "no heading"),
            # the SDK's own errors: arguments that fail validation item by item, an unknown tool
            ("list_docs", {"tags_all": [1] * 20_000}, "and 19995 more. To fix: call list_docs"),
            ("nope" * 50_000, {}, "Unknown tool"),
        ]
        for tool, args, says in cases:
            err, text = await call(s, tool, **args)
            assert err, tool
            assert says in text, (tool, text[-300:])
