"""`vaultwatch --demo`: a scripted assistant, through the real MCP client over HTTP, that makes
every kind of event a newcomer should see: reads, a new session note, an append, a batch, a
stale replace that conflicts, and a write rejected for an unknown tag."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation


async def run_script(
    url: str, token: str, pause: float = 0.8, say: Callable[[str], None] = lambda _: None
) -> None:
    today = date.today().isoformat()
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name="demo-assistant", version="1.0"),
        ) as c,
    ):

        async def step(text: str, tool: str, args: dict) -> dict:
            say(text)
            r = await c.call_tool(tool, args)
            await anyio.sleep(pause)
            return r.structured_content or {}

        await step("reading the context", "get_context", {})
        await step(
            "which applications wait on me?",
            "list_docs",
            {"type": "application", "where": {"status": "waiting"}},
        )
        await step("searching for 离线同步", "search_text", {"query": "离线同步"})
        await step(
            "filing today's session",
            "create_doc",
            {
                "type": "session",
                "fields": {"date": today, "kind": "mock", "title": "Demo mock"},
                "body": "# Demo mock\n\n## What went well\n- drew the architecture first\n",
                "tags": ["system-design"],
            },
        )
        await step(
            "logging it in the week",
            "append_section",
            {
                "path": "weeks/2026-W49.md",
                "heading": "Log",
                "content": f"- {today}: demo mock, went well",
            },
        )
        week = await step("reading the week", "read_doc", {"path": "weeks/2026-W49.md"})
        await step(
            "a batch: close an item, tag the week",
            "batch",
            {
                "message": "demo: weekly tidy",
                "ops": [
                    {
                        "tool": "update_frontmatter",
                        "args": {
                            "path": "improvements/clarify-then-sketch.md",
                            "set": {"status": "closed", "closed": today},
                        },
                    },
                    {
                        "tool": "update_frontmatter",
                        "args": {"path": "weeks/2026-W49.md", "add_tags": ["crdt"]},
                    },
                ],
            },
        )
        await step(
            "a stale whole-note replace (conflicts)",
            "replace_doc",
            {
                "path": "weeks/2026-W49.md",
                "content": "# stale copy\n",
                "hash": week.get("hash", "0" * 16),
            },
        )
        await step(
            "a write with a made-up tag (rejected)",
            "create_doc",
            {"path": "inbox/demo-idea.md", "body": "# Idea\n", "tags": ["made-up-tag"]},
        )
        say(
            "demo script finished: v reviews what it wrote, r reverts an AI commit, "
            "t shows tag trends, $ what the AI reads"
        )
