"""The real server through the SDK's in-memory client, under the client name and version a
test gives (the journal and the stats count writes per client). A helper module, not a test
module: test modules import from here, never from each other."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client
from mcp.types import Implementation

from server.protocol.tools import build_server
from server.vault import Vault

from .conftest import Session


@asynccontextmanager
async def as_client(root: Path, who: Implementation) -> AsyncIterator[Session]:
    vault = Vault(root)
    try:
        async with Client(build_server(vault), client_info=who, raise_exceptions=True) as c:
            yield Session(c, vault)
    finally:
        vault.close()
