"""The MCP prompts: names, descriptions, arguments. Thin on purpose: the texts and how they are
rendered live in `services.prompts`. `start` sends what get_context would, so it is journaled
as a read like the tool (the owner's Reads screen counts what the AI was shown)."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from server.protocol.toolkit import client_name  # one reader of the client's name
from server.services.prompts import DESCRIPTIONS, render_remember, render_start
from server.vault import Vault
from server.write import journal
from server.write.journal import estimate_tokens


def register_prompts(mcp: MCPServer, vault: Vault, *, read_only: bool = False) -> None:
    @mcp.prompt(name="start", title="Start on the vault", description=DESCRIPTIONS["start"])
    def start(ctx: Context) -> str:
        vault.check_present()
        text, named = render_start(vault)
        vault.journal.append(
            journal.Read("start", named, len(text), estimate_tokens(text)),
            client=client_name(ctx),
        )
        return text

    if read_only:
        return  # `remember` is about writing: a read-only server has no tool for it

    @mcp.prompt(
        name="remember", title="Remember this conversation", description=DESCRIPTIONS["remember"]
    )
    def remember(
        focus: Annotated[
            str | None, Field(description="what to remember, if not the whole conversation")
        ] = None,
    ) -> str:
        vault.check_present()
        return render_remember(vault, focus)
