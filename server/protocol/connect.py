"""How a client connects to a vault's HTTP server: the `claude mcp add` line, said once for
the server's start-up message and the dashboard's connect snippets. The token itself is never
in it: the shell reads it from its file when the line is pasted."""

from __future__ import annotations

import shlex
from pathlib import Path


def claude_mcp_add_http(url: str, token_file: Path) -> str:
    """The Claude Code command that adds the vault's server at `url` with its bearer token."""
    return (
        f"claude mcp add --transport http vaultwatch {url} --header "
        f'"Authorization: Bearer $(cat {shlex.quote(str(token_file))})"'
    )
