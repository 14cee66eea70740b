"""The MCP prompts through the real client: `start` and `remember` are listed and rendered, the
vault's own text replaces the default (`prompts:` in the config, checked like `rules:`), start
carries get_context's text and is journaled as a read, and a read-only server has no remember."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.types import TextContent

from server.services.prompts import DEFAULTS
from server.write.journal import read_all

pytestmark = pytest.mark.anyio


async def rendered(s: Any, name: str, args: dict[str, str] | None = None) -> str:
    r = await s.client.get_prompt(name, args)
    assert len(r.messages) == 1 and r.messages[0].role == "user"
    block = r.messages[0].content
    assert isinstance(block, TextContent)
    return block.text


async def test_prompts_are_listed_and_rendered(connect: Any, example_vault: Path) -> None:
    async with connect(example_vault) as s:
        listed = (await s.client.list_prompts()).prompts
        start = await rendered(s, "start")
        remember = await rendered(s, "remember", {"focus": "the retry policy"})
    assert [p.name for p in listed] == ["start", "remember"]
    assert all(p.description for p in listed)
    assert [a.name for a in listed[1].arguments or []] == ["focus"]
    assert start.startswith(DEFAULTS["start"])
    rules = (example_vault / "CLAUDE.md").read_text(encoding="utf-8").splitlines()[0]
    assert "get_context:\n{" in start and rules in start  # the rules, as get_context has them
    assert "weeks/2026-W49.md" in start
    for ask in ("asked again", "five seconds", "six months", "search_text", "supersede_doc"):
        assert ask in remember, ask
    assert remember.endswith("focus on: the retry policy")
    reads = [
        e for e in read_all(example_vault / ".git/vaultwatch/events.jsonl") if e["kind"] == "read"
    ]
    assert [e["tool"] for e in reads] == ["start"]
    assert "weeks/2026-W49.md" in reads[0]["paths"]


async def test_the_vault_gives_its_own_prompt_text(connect: Any, example_vault: Path) -> None:
    cfg = example_vault / "vault.config.yaml"
    cfg.write_text(
        cfg.read_text(encoding="utf-8") + "prompts: {remember: prompts/remember.md}\n",
        encoding="utf-8",
    )
    (example_vault / "prompts").mkdir()
    (example_vault / "prompts/remember.md").write_text(
        "# Remember\n\nKeep only decisions, in English, one note per decision.\n",
        encoding="utf-8",
    )
    async with connect(example_vault) as s:
        remember = await rendered(s, "remember")
        start = await rendered(s, "start")
        err = await s.error(
            "append_section", path="prompts/remember.md", heading="More", content="x"
        )
    assert remember == "# Remember\n\nKeep only decisions, in English, one note per decision."
    assert start.startswith(DEFAULTS["start"])  # not given: the default
    assert "rejected (protected)" in err  # the owner's text, as the rules file is


async def test_a_private_prompt_file_is_a_config_error(connect: Any, example_vault: Path) -> None:
    """As with `rules:`: the prompt's text goes to the assistant, so naming a private note
    fails the config (the last good rules stay in force), and the prompt is the default."""
    cfg = example_vault / "vault.config.yaml"
    cfg.write_text(
        cfg.read_text(encoding="utf-8") + "prompts: {start: private/salary-notes.md}\n",
        encoding="utf-8",
    )
    async with connect(example_vault) as s:
        start = await rendered(s, "start")
        problems = [str(p) for p in s.vault.config_errors]
    assert any(
        "prompts.start names 'private/salary-notes.md', which is private" in p for p in problems
    )
    assert "moonlight" not in start.casefold() and start.startswith(DEFAULTS["start"])
    salary = (example_vault / "private/salary-notes.md").read_text(encoding="utf-8")
    assert salary.splitlines()[-1] not in start


async def test_a_read_only_server_has_start_only(connect: Any, example_vault: Path) -> None:
    async with connect(example_vault, read_only=True) as s:
        listed = (await s.client.list_prompts()).prompts
    assert [p.name for p in listed] == ["start"]


async def test_start_fits_the_result_budget_as_serialized(
    connect: Any, example_vault: Path
) -> None:
    """The prompt is the instructions plus get_context's text: together, JSON-escaped as the
    client receives them, they stay under limits.result_chars (the context gives way)."""
    cfg = example_vault / "vault.config.yaml"
    text = cfg.read_text(encoding="utf-8").replace(
        "limits: {result_chars: 40000, batch_ops: 200}", "limits: {result_chars: 4000}"
    )
    cfg.write_text(text, encoding="utf-8")
    async with connect(example_vault) as s:
        r = await s.client.get_prompt("start")
    sent = r.model_dump_json(by_alias=True, exclude_none=True)
    assert len(sent) <= 4000, len(sent)
    block = r.messages[0].content
    assert isinstance(block, TextContent)
    assert block.text.startswith(DEFAULTS["start"]) and "get_context:\n{" in block.text
