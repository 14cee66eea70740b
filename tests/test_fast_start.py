"""A fresh server answers `initialize` before any vault work and imports recall's numpy only for
recall; its first call parses only what the persisted cache does not hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO

NOTES = {
    f"n{i}.md": f"---\ntitle: Note {i}\ntags: [t{i % 3}]\n---\nconsensus {i}\n" for i in range(30)
}


def _rpc(proc: subprocess.Popen[bytes], id_: int, method: str, params: dict[str, Any]) -> Any:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}).encode()
        + b"\n"
    )
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        assert line, "the server exited"
        msg = json.loads(line)
        if msg.get("id") == id_:
            return msg


@pytest.mark.slow
def test_initialize_comes_before_any_vault_work(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    cache = root / ".git" / "vaultwatch" / "parsed.sqlite"
    for run in ("cold", "warm"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "server.protocol.cli", "--vault", str(root)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "VAULTWATCH_SEMANTIC": "off"},
        )
        try:
            init = _rpc(
                proc,
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            )
            assert init["result"]["serverInfo"]["name"] == "vaultwatch"
            # answered without walking the vault: the parse cache is not even opened yet
            assert cache.exists() == (run == "warm"), run
            assert proc.stdin is not None
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            proc.stdin.flush()
            r = _rpc(proc, 2, "tools/call", {"name": "list_docs", "arguments": {"limit": 100}})
            assert not r["result"].get("isError"), r
            assert len(r["result"]["structuredContent"]["docs"]) == len(NOTES)
            assert cache.exists()
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)


HEAVY = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from mcp import Client
    import server.protocol.cli
    from server.protocol.tools import build_server
    from server.vault import Vault

    async def main():
        vault = Vault(Path(sys.argv[1]))
        async with Client(build_server(vault)) as c:
            assert "numpy" not in sys.modules, "numpy imported before the first call"
            for tool, args in [("get_context", {}), ("list_docs", {}),
                               ("search_text", {"query": "consensus"})]:
                r = await c.call_tool(tool, args)
                assert not r.is_error, r.content
        print("numpy" in sys.modules)

    anyio.run(main)
    """
)


def test_numpy_loads_only_for_recall(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    # recall off in this vault's environment: get_context, list_docs and search never need numpy
    out = subprocess.run(
        [sys.executable, "-c", HEAVY, str(root)],
        cwd=REPO,
        capture_output=True,
        env={**os.environ, "VAULTWATCH_SEMANTIC": "off"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().strip() == "False"
