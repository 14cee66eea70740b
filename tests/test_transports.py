"""The real server as a subprocess: stdio, HTTP with and without the token, safe concurrent start."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from server.write.journal import read_all

from .conftest import EXAMPLE, REPO, tool_text
from .servers import MCP_ACCEPT, RAW_INITIALIZE, HttpServer, child_env, server_cmd

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

READ_TOOLS = {"get_context", "list_docs", "list_tags", "read_doc"}


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    return root  # not a git repo yet: the server makes it one


async def test_stdio_subprocess(vault_dir: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server.protocol.cli", "--vault", str(vault_dir)],
        cwd=str(REPO),
        env=child_env(),
    )
    for mode in ("auto", "legacy"):  # both protocol eras
        async with Client(params, mode=mode) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert tools >= READ_TOOLS
            r = await c.call_tool("read_doc", {"path": "weeks/2026-W49.md", "section": "Log"})
            assert not r.is_error and "系统设计模拟" in r.structured_content["content"]
            bad = await c.call_tool("read_doc", {"path": "/etc/passwd"})
            assert bad.is_error and "absolute" in tool_text(bad)
    log = subprocess.run(
        ["git", "-C", str(vault_dir), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log == ["import"]  # made a repo once, committed the existing files once
    kinds = [e["kind"] for e in read_all(vault_dir / ".git/vaultwatch/events.jsonl")]
    assert kinds.count("server_started") == 2 and kinds.count("server_stopped") == 2


@pytest.fixture
def http_server(vault_dir: Path) -> Iterator[HttpServer]:
    srv = HttpServer(vault_dir)
    yield srv
    srv.stop()


async def test_http_requires_the_token(http_server: HttpServer, vault_dir: Path) -> None:
    token_file = vault_dir / ".git/vaultwatch/token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    init, hdrs = RAW_INITIALIZE, MCP_ACCEPT
    async with httpx2.AsyncClient(timeout=10) as raw:
        r = await raw.post(http_server.url, json=init, headers=hdrs)
        assert r.status_code == 401 and r.json()["error"] == "invalid_token"
        r = await raw.post(
            http_server.url, json=init, headers={**hdrs, "authorization": "Bearer wrong"}
        )
        assert r.status_code == 401
        r = await raw.post(
            http_server.url,
            json=init,
            headers={**hdrs, "authorization": f"Bearer {http_server.token}"},
        )
        assert r.status_code == 200
        # DNS rebinding: the right token through a foreign Host or Origin is still refused
        good = {**hdrs, "authorization": f"Bearer {http_server.token}"}
        for extra in (
            {"host": "evil.example:80"},
            {"origin": "http://evil.example"},
            {"origin": "null"},
            {"host": "127.0.0.1.evil.example"},
        ):
            r = await raw.post(http_server.url, json=init, headers={**good, **extra})
            assert r.status_code == 403, extra
            assert r.json()["error"] == "forbidden"
        r = await raw.post(
            http_server.url, json=init, headers={**good, "origin": "http://localhost:3000"}
        )
        assert r.status_code == 200

    headers = {"Authorization": f"Bearer {http_server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        for mode in ("auto", "legacy"):
            async with Client(
                streamable_http_client(http_server.url, http_client=http), mode=mode
            ) as c:
                assert {t.name for t in (await c.list_tools()).tools} >= READ_TOOLS
                res = await c.call_tool(
                    "list_docs", {"type": "application", "where": {"status": "waiting"}}
                )
                assert [d["path"] for d in res.structured_content["docs"]] == [
                    "applications/northwind-labs-backend-engineer.md"
                ]
    assert http_server.stop() == 0
    events = read_all(vault_dir / ".git/vaultwatch/events.jsonl")
    assert events[0]["kind"] == "server_started" and events[0]["transport"] == "http"
    assert events[-1]["kind"] == "server_stopped"
    assert any(e["kind"] == "read" and e["tool"] == "list_docs" for e in events)
    assert http_server.token not in (vault_dir / ".git/vaultwatch/events.jsonl").read_text()
    rest = http_server.proc.stderr.read() if http_server.proc.stderr else ""
    assert http_server.token not in rest  # never logged


def test_non_loopback_bind_needs_allow_remote(vault_dir: Path) -> None:
    r = subprocess.run(
        server_cmd("--vault", str(vault_dir), "--http", "0.0.0.0:0"),
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode != 0 and "--allow-remote" in r.stderr
    assert not (vault_dir / ".git").exists()  # refused before touching anything


def test_two_servers_starting_at_once(vault_dir: Path) -> None:
    """As when a client spawns a probe process and the real one together."""
    procs = [
        subprocess.Popen(
            server_cmd("--vault", str(vault_dir)),
            cwd=REPO,
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    journal = vault_dir / ".git/vaultwatch/events.jsonl"
    deadline = time.monotonic() + 90  # generous: CI machines are shared and slow to import
    started = 0
    while time.monotonic() < deadline and started < 3:
        if journal.exists():
            started = sum(e["kind"] == "server_started" for e in read_all(journal))
        time.sleep(0.05)
    # a server that died says why (its stderr); one still running is stuck before the journal
    dead = [p.stderr.read()[-2000:] for p in procs if p.poll() is not None]  # type: ignore[union-attr]
    assert started == 3, dead
    for p in procs:
        p.stdin.close()  # type: ignore[union-attr]
        code = p.wait(60)
        assert code == 0, p.stderr.read()  # type: ignore[union-attr]
    log = subprocess.run(
        ["git", "-C", str(vault_dir), "log", "--format=%s%n%b"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert log.count("import") == 2  # one commit: subject + its trailer
    fsck = subprocess.run(["git", "-C", str(vault_dir), "fsck"], capture_output=True, text=True)
    assert fsck.returncode == 0


async def test_the_readme_claude_desktop_entry_starts_a_working_server(vault_dir: Path) -> None:
    """The JSON the README gives for claude_desktop_config.json, run as Desktop runs it: the
    command and args exactly, a near-empty environment, over stdio."""
    import json as _json

    text = (REPO / "README.md").read_text()
    block = text[text.index("**Claude Desktop**") :]
    raw = block[block.index("```json") + 7 : block.index("```", block.index("```json") + 7)]
    entry = _json.loads(
        raw.replace("/path/to/vaultwatch", str(REPO)).replace("/path/to/notes", str(vault_dir))
    )["mcpServers"]["vaultwatch"]
    assert Path(entry["command"]).exists(), "run `uv sync` so .venv/bin/vaultwatch-server exists"
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    async with Client(params) as c:
        res = await c.call_tool("get_context", {})
        assert not res.is_error and res.structured_content["blocks"][0]["kind"] == "rules"
