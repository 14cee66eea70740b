"""A client's display name: the one rule for how the dashboard and the shell commands name an
AI client. The server journals (and commits) a client as `name/version` from the MCP
handshake; Stats, Reads and the review list count it without the version (`claude-code`, not
`claude-code/2.1.0`), so an upgrade does not split one assistant in two."""

from __future__ import annotations

import functools

from .git_log import trailer_value


def client_name(raw: object) -> str:
    """A client as counted: one printable line (as the trailer holds it), without version;
    "unknown" when it has no name."""
    return _client_name(str(raw or ""))


@functools.lru_cache(maxsize=1024)  # a vault has a few clients, named on every event
def _client_name(raw: str) -> str:
    return trailer_value(raw).split("/")[0] or "unknown"
