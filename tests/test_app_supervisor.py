"""The dashboard's server: the vault's resident, started as its child or attached to, serving
HTTP for it, restarted on the same port, never orphaned, outliving the dashboard only for the
clients still attached."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app.services.supervisor import ServerSupervisor, snippets

from .conftest import resident_looked, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _tools(url: str, token: str) -> set[str]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as c,
    ):
        return {t.name for t in (await c.list_tools()).tools}


async def test_start_restart_stop(make_vault: Any) -> None:
    root = make_vault({"a.md": "# A\n"})
    sup = ServerSupervisor(root)
    try:
        url = sup.start()
        assert "read_doc" in await _tools(url, sup.token)
        first = sup.proc
        assert first is not None and sup.check() is False
        os.kill(first.pid, signal.SIGKILL)  # the child dies
        first.wait(10)
        assert sup.check() is True and sup.restarts == 1 and sup.last_exit == -9
        assert sup.url == url  # same port: connected clients keep working
        assert "read_doc" in await _tools(url, sup.token)
        pid = sup.proc.pid if sup.proc else 0
    finally:
        sup.stop()
    # no orphan left behind: with no client attached, the resident leaves after its quiet
    # period (2 s in the tests' environment)
    assert sup.proc is not None
    assert sup.proc.wait(30) == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_snippets_never_hold_the_token(make_vault: Any) -> None:
    root = make_vault({"a.md": "# A\n"})
    (root / ".git/vaultwatch").mkdir(exist_ok=True)
    (root / ".git/vaultwatch/token").write_text("s3cret-token-value\n")
    out = snippets(root, "http://127.0.0.1:8765/mcp")
    assert all("s3cret-token-value" not in v for v in out.values())
    code = out["Claude Code (HTTP, this server)"]
    assert code.startswith("claude mcp add --transport http vaultwatch http://127.0.0.1:8765/mcp")
    assert "$(cat " in code
    mcp_json = json.loads(out[".mcp.json entry (HTTP; export VAULTWATCH_TOKEN first)"])
    assert (
        mcp_json["mcpServers"]["vaultwatch"]["headers"]["Authorization"]
        == "Bearer ${VAULTWATCH_TOKEN}"
    )
    desktop = json.loads(out["Claude Desktop (stdio, same vault)"])["mcpServers"]["vaultwatch"]
    assert (
        desktop["args"] == ["--vault", str(root)]
        and Path(desktop["command"]).name == "vaultwatch-server"
    )


async def test_desktop_snippet_starts_a_stdio_server_on_the_same_vault(make_vault: Any) -> None:
    from mcp import StdioServerParameters

    root = make_vault({"a.md": "# A\n"})
    entry = json.loads(
        snippets(root, "http://127.0.0.1:1/mcp")["Claude Desktop (stdio, same vault)"]
    )
    spec = entry["mcpServers"]["vaultwatch"]
    params = StdioServerParameters(
        command=spec["command"],
        args=spec["args"],
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    async with Client(params) as c:
        res = await c.call_tool("read_doc", {"path": "a.md"})
        assert not res.is_error and res.structured_content["content"] == "# A\n"


def test_a_dashboard_killed_outright_leaves_no_server_behind(
    make_vault: Any, tmp_path: Path
) -> None:
    """SIGKILL gives the dashboard no chance to let go of its server: the resident sees the
    dashboard's link close and, with no client attached, leaves after its quiet period."""
    import subprocess
    import sys

    root = make_vault({"a.md": "# A\n"})
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from pathlib import Path; from app.services.supervisor import ServerSupervisor\n"
                f"s = ServerSupervisor(Path({str(root)!r})); s.start()\n"
                f"Path({str(pid_file)!r}).write_text(str(s.proc.pid)); time.sleep(600)\n"
            ),
        ]
    )
    try:
        child = int(
            wait_for(
                lambda: pid_file.exists() and pid_file.read_text(),
                60,
                "the dashboard to say its server's pid",
            )
        )
        os.kill(child, 0)  # serving
        parent.kill()
        parent.wait(10)
        for _ in range(100):
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the server outlived the dashboard that started it")
    finally:
        parent.kill()


def test_the_server_and_the_dashboard_give_one_claude_mcp_add_line(make_vault: Any) -> None:
    """The line the server prints when it starts is the dashboard's Claude Code snippet, word
    for word (`server.protocol.connect.claude_mcp_add_http`)."""
    root = make_vault({"a.md": "# A\n"})
    sup = ServerSupervisor(root)
    try:
        url = sup.start()
        line = snippets(root, url)["Claude Code (HTTP, this server)"]
        assert line.startswith("claude mcp add --transport http vaultwatch ")
        assert f"  {line}" in sup.stderr_tail
    finally:
        sup.stop()


@pytest.mark.semantic  # with the hash embedder: no model to load
def test_the_dashboards_server_indexes_recall_before_any_client_call(make_vault: Any) -> None:
    """A dashboard-only session (no Claude yet): its server embeds the vault as it starts, so
    the header's recall figure and health's near-duplicates do not wait for a client's first
    call. Two notes that say the same thing are then found by the dashboard's health check."""
    from server.services.health import check_root
    from server.write.journal import read_all

    same = "# Offline sync\n\nOffline sync merges every replica's edits with a causal clock.\n"
    root = make_vault(
        {
            "vault.config.yaml": "semantic: {model: hash-ngrams}\n",
            "notes/sync.md": same,
            "notes/sync-again.md": same.replace("# Offline sync", "# Offline sync, again"),
            "notes/other.md": "# Cooking\n\nRice wants twice its volume of water.\n",
        }
    )
    sup = ServerSupervisor(root)
    try:
        sup.start()
        journal = root / ".git/vaultwatch/events.jsonl"
        deadline = time.monotonic() + 60
        while True:
            events = read_all(journal)
            progress = [e for e in events if e.get("kind") == "semantic_progress"]
            if progress and progress[-1]["indexed"] == progress[-1]["total"] == 3:
                break
            assert time.monotonic() < deadline, progress
            time.sleep(0.2)
        assert not [e for e in events if e.get("kind") == "read"]  # no client called
        report = check_root(root)
        pairs = {frozenset((d["a"], d["b"])) for d in report.to_json()["duplicates"]}
        assert frozenset(("notes/sync.md", "notes/sync-again.md")) in pairs, report.to_json()
        # the owner saves a third copy, and still no client calls: the server embeds it on its
        # own, so health compares it (before, it stayed 'changed since recall indexed' for good)
        (root / "notes/sync-third.md").write_text(
            same.replace("# Offline sync", "# Offline sync, third")
        )
        deadline = time.monotonic() + 60
        while True:
            found = check_root(root).to_json()
            pairs = {frozenset((d["a"], d["b"])) for d in found["duplicates"]}
            if frozenset(("notes/sync.md", "notes/sync-third.md")) in pairs:
                break
            assert time.monotonic() < deadline, (found["duplicates"], found.get("warnings"))
            time.sleep(0.5)
        assert not any("changed since" in w for w in found.get("warnings", [])), found
    finally:
        sup.stop()


def relay_client(root: Path, name: str) -> Any:
    from .residents import Raw

    c = Raw(root)
    c.initialize(name)
    return c


async def test_the_dashboard_attaches_to_the_resident_a_client_started(make_vault: Any) -> None:
    """A client's relay started the resident: the dashboard attaches to it (one server, one
    index), names the client, serves HTTP from it, and restarts it when it dies; the client's
    conversation goes on through the new one."""
    from server.protocol.resident_control import ask

    root = make_vault({"a.md": "# A\n"})
    c = relay_client(root, "desktop")
    sup = ServerSupervisor(root)
    try:
        first = ask(root, "status")
        assert first is not None
        url = sup.start()
        assert sup.proc is None and sup.pid == first["pid"]  # attached, not started
        assert sup.clients() == ["desktop/1.0"]
        assert "read_doc" in await _tools(url, sup.token)
        os.kill(first["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while sup.alive:
            assert time.monotonic() < deadline, "the dashboard never saw its server die"
            time.sleep(0.02)
        assert sup.check() is True and sup.restarts == 1
        # one new resident, whoever saw the death first: the dashboard or the client's relay
        now = ask(root, "status")
        assert now is not None and sup.pid == now["pid"] != first["pid"]
        assert sup.url == url and "read_doc" in await _tools(url, sup.token)
        assert not c.call("read_doc", path="a.md")["result"]["isError"]
        assert sup.clients() == ["desktop/1.0"]
    finally:
        sup.stop()
        c.close()


async def test_a_resident_outlives_the_dashboard_for_its_clients(make_vault: Any) -> None:
    """The dashboard quits while a client is attached: the resident keeps serving the client,
    and leaves after its quiet period once the client is gone."""
    from server.protocol.resident_control import ask

    root = make_vault({"a.md": "# A\n"})
    sup = ServerSupervisor(root)
    sup.start()
    assert sup.proc is not None  # started by the dashboard, as its child
    c = relay_client(root, "code")
    try:
        sup.stop()

        def client_alone() -> dict[str, Any] | None:
            status = ask(root, "status")
            assert status is not None, "the resident left with a client attached"
            alone = [x["kind"] for x in status["clients"]] == ["client"]
            return status if alone else None

        left = wait_for(client_alone, 30, "the resident to see the dashboard let go")
        # a client is still attached: the resident's watch looked a whole quiet period (2 s in
        # the tests' environment) after the dashboard let go, and found it attached, not quiet
        looked = wait_for(
            lambda: resident_looked(root, left["uptime_s"] + left["idle_s"]),
            60,
            "the resident's watch to look a quiet period after the dashboard let go",
        )
        assert looked["quiet_s"] == 0 and looked["idle_s"] == 2, looked
        assert sup.proc.poll() is None
        assert not c.call("read_doc", path="a.md")["result"]["isError"]
    finally:
        c.close()
    assert sup.proc.wait(30) == 0


def test_the_dashboard_restarts_the_resident(make_vault: Any) -> None:
    """The owner restarts the server: a new resident, the attached client reconnected to it."""
    root = make_vault({"a.md": "# A\n"})
    sup = ServerSupervisor(root)
    c = None
    try:
        sup.start()
        c = relay_client(root, "cli")
        before = sup.pid
        sup.restart()
        assert sup.pid != before and sup.alive and sup.restarts == 1
        assert not c.call("read_doc", path="a.md")["result"]["isError"]
        assert sup.clients() == ["cli/1.0"]
    finally:
        sup.stop()
        if c is not None:
            c.close()
