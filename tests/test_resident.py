"""One resident server per vault (server/protocol/resident.py) and the stdio relay clients spawn
(server/protocol/relay.py): real processes, real sockets, real git, real MCP clients."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from server.protocol.relay_pump import STOPPED_CODE
from server.protocol.resident_control import ask

from .conftest import (
    git,
    git_log,
    pid_alive,
    resident_looked,
    wait_for,
    wait_gone,
)
from .residents import NOTES, SERVER, Raw, env, events, started
from .residents import vault as vault  # the fixture

pytestmark = pytest.mark.slow


def test_the_relay_imports_only_the_standard_library(vault: Path, tmp_path: Path) -> None:
    """What a new conversation costs: the relay never imports the SDK, pydantic or our heavy
    modules (the 1-2 s of CPU a server start spends importing them is the resident's, once)."""
    dump = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(dump)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "from server.protocol.relay import main\n"
        "main()\n"
    )
    c = Raw(vault, cmd=[sys.executable, "-c", code, "--vault", str(vault)])
    assert c.initialize("probe")["result"]["serverInfo"]["name"] == "vaultwatch"
    assert "n0.md" in json.dumps(c.call("list_docs")["result"])
    assert c.close() == 0, c.stderr
    loaded = json.loads(dump.read_text())
    ours = sorted(m for m in loaded if m == "server" or m.startswith("server."))
    assert ours == [
        "server",
        "server.core",  # (a docstring)
        "server.core.pids",  # (standard library only: whether a pid runs)
        "server.protocol",
        "server.protocol.relay",
        "server.protocol.relay_pump",
        "server.protocol.resident_control",
        "server.protocol.resident_link",
        "server.protocol.resident_socket",
        "server.protocol.resident_start",
    ]
    heavy = [m for m in loaded if m.split(".")[0] in {"mcp", "pydantic", "anyio", "yaml", "numpy"}]
    assert not heavy, heavy
    assert started(vault)[-1]["transport"] == "resident"  # it was relayed, not served here


def test_ten_clients_at_once_start_one_resident(vault: Path) -> None:
    clients = [Raw(vault) for _ in range(10)]
    try:
        ids = [
            c.send(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": f"client{i}", "version": "1"},
                },
            )
            for i, c in enumerate(clients)
        ]
        for c, rid in zip(clients, ids, strict=True):
            assert c.answer(rid)["result"]["serverInfo"]["name"] == "vaultwatch"
            c.send("notifications/initialized", notify=True)
        for c in clients:
            assert not c.call("read_doc", path="n1.md")["result"]["isError"]
        status = ask(vault, "status")
        assert status is not None
        names = sorted(x["name"] for x in status["clients"])
        assert names == sorted(f"client{i}/1" for i in range(10))
        residents = [e for e in started(vault) if e["transport"] == "resident"]
        assert [e["pid"] for e in residents] == [status["pid"]]
        reads = [e for e in events(vault) if e["kind"] == "read"]
        assert len(reads) == 10 and {e["pid"] for e in reads} == {status["pid"]}
        assert len({e["client"] for e in reads}) == 10
    finally:
        for c in clients:
            c.close()


def test_two_clients_on_one_resident_sign_their_own_commits(vault: Path) -> None:
    """The client's name is the connection's, not the process's: two clients on one
    resident, two names in the commit trailers and the journal."""
    a, b = Raw(vault), Raw(vault)
    try:
        a.initialize("alpha-client", "1.0")
        b.initialize("beta-client", "2.0")
        ra = a.call("append_section", path="n0.md", heading="Log", content="- from alpha")
        rb = b.call("append_section", path="n1.md", heading="Log", content="- from beta")
        assert not ra["result"]["isError"] and not rb["result"]["isError"], (ra, rb)
        log = git_log(vault, "--format=%H %(trailers:key=Vaultwatch-Client,valueonly)%n---")
        assert "alpha-client/1.0" in log and "beta-client/2.0" in log
        commits = [e for e in events(vault) if e["kind"] == "commit"]
        assert {e["client"] for e in commits} == {"alpha-client/1.0", "beta-client/2.0"}
        assert len({e["pid"] for e in commits}) == 1  # one process served both
        status = ask(vault, "status")
        assert status is not None
        assert sorted(c["name"] for c in status["clients"]) == [
            "alpha-client/1.0",
            "beta-client/2.0",
        ]
    finally:
        a.close()
        b.close()


@pytest.mark.anyio
async def test_the_sdk_client_through_the_relay(vault: Path) -> None:
    params = StdioServerParameters(command=SERVER, args=["--vault", str(vault)], env=env())
    async with Client(params) as c:
        r = await c.call_tool(
            "append_section", {"path": "n2.md", "heading": "Log", "content": "- sdk"}
        )
        assert not r.is_error, r.content
        status = ask(vault, "status")
        assert status is not None and [x["kind"] for x in status["clients"]] == ["client"]
    assert "- sdk" in (vault / "n2.md").read_text()
    assert "Vaultwatch-Client: mcp" in git_log(vault, "-1", "--format=%B")
    assert started(vault)[-1]["transport"] == "resident"


def test_a_resident_killed_mid_write_is_restarted_and_the_call_gets_an_error(
    vault: Path,
) -> None:
    """The resident dies two files into a three-file batch (the fault kills it with SIGKILL):
    the call in flight gets a clear error, the relay starts a new resident that rolls the
    half-written batch back, and the same conversation goes on."""
    before = {p: (vault / p).read_text() for p in NOTES}
    head = git(vault, "rev-parse", "HEAD")
    c = Raw(vault, VAULTWATCH_FAULT="after_write:2")
    try:
        c.initialize("crash-probe")
        first = ask(vault, "status")
        assert first is not None
        ops = [
            {"tool": "append_section", "args": {"path": p, "heading": "Log", "content": "- half"}}
            for p in NOTES
        ]
        r = c.call("batch", ops=ops)
        assert "error" in r, r
        assert r["error"]["code"] == STOPPED_CODE, r
        assert "nothing is half-written" in r["error"]["message"]
        wait_gone(first["pid"], 30)
        # the next call is served by a new resident, on the same client connection
        out = c.call("read_doc", path="n0.md")
        assert not out["result"]["isError"], out
        now = ask(vault, "status")
        assert now is not None and now["pid"] != first["pid"]
        assert [x["name"] for x in now["clients"]] == ["crash-probe/1.0"]  # the replayed hello
        assert {p: (vault / p).read_text() for p in NOTES} == before
        assert git(vault, "rev-parse", "HEAD") == head
        assert git(vault, "status", "--porcelain") == ""
    finally:
        c.close()


def test_a_resident_exits_after_its_quiet_period(vault: Path) -> None:
    c = Raw(vault, VAULTWATCH_RESIDENT_IDLE_S="0.5")
    c.initialize("short")
    status = ask(vault, "status")
    assert status is not None and status["idle_s"] == 0.5
    # attached: a quiet period does not start while a client is there. The resident's watch
    # looked a whole quiet period after the client came (its status says when it last looked)
    # and found it attached, not quiet; it still answers
    looked = wait_for(
        lambda: resident_looked(vault, status["uptime_s"] + status["idle_s"]),
        30,
        "the resident's watch to look a quiet period after the client came",
    )
    assert looked["quiet_s"] == 0 and [x["name"] for x in looked["clients"]] == ["short/1.0"]
    assert pid_alive(status["pid"])
    assert c.close() == 0
    wait_gone(status["pid"], 30)
    assert not (vault / ".git/vaultwatch/resident.sock").exists()
    last = events(vault)[-1]
    assert last["kind"] == "server_stopped" and last["reason"] == "no client for 0.5 s"


def test_a_resident_whose_vault_folder_is_gone_exits(vault: Path, tmp_path: Path) -> None:
    c = Raw(vault, VAULTWATCH_RESIDENT_IDLE_S="600")
    c.initialize("mover")
    status = ask(vault, "status")
    assert status is not None
    c.close()
    vault.rename(tmp_path / "moved")
    wait_gone(status["pid"], 30)


def test_the_quiet_period_comes_from_the_config(vault: Path) -> None:
    (vault / "vault.config.yaml").write_text("resident:\n  idle_minutes: 0.5\n")
    c = Raw(vault, VAULTWATCH_RESIDENT_IDLE_S="")
    try:
        c.initialize("config")
        status = ask(vault, "status")
        assert status is not None and status["idle_s"] == 30
    finally:
        c.close()


def test_a_resident_of_another_build_makes_way_once_idle(vault: Path) -> None:
    """An upgraded package: the running resident announces another build; the next relay asks
    it to retire; it finishes what is in flight, tells its clients it stops for an upgrade (their
    relays reconnect), and the new relay is served by a resident of its own build."""
    sdir = vault / ".git/vaultwatch"
    old = subprocess.Popen(
        [sys.executable, "-m", "server.protocol.resident", "--vault", str(vault)],
        env=env(VAULTWATCH_BUILD_ID="0.0.1+old"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: (sdir / "resident.sock").exists(), 60, "the old resident's socket")
        # a client of the old build, attached: a raw connection
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(sdir / "resident.sock"))
        reader = s.makefile("rb")
        hello = json.loads(reader.readline())
        assert hello["build"] == "0.0.1+old" and hello["pid"] == old.pid
        s.sendall(b'{"vaultwatch": "attach"}\n')
        c = Raw(vault)
        c.initialize("new-build")
        status = ask(vault, "status")
        assert status is not None and status["pid"] != old.pid
        assert status["build"] != "0.0.1+old"
        assert old.wait(30) == 0
        assert json.loads(reader.readline()) == {"vaultwatch": "stopping", "reason": "upgrade"}
        assert not c.call("list_docs")["result"]["isError"]
        c.close()
        s.close()
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


@pytest.mark.parametrize("flaw", ["other_owner", "open_socket", "open_folder"])
def test_a_socket_that_is_not_safely_ours_is_refused(vault: Path, flaw: str) -> None:
    """A socket another user made (or one others may connect to, or in a folder others may
    enter) could read the notes we send or answer in the server's name: the relay says why and
    serves in its own process."""
    sdir = vault / ".git/vaultwatch"
    sdir.mkdir(mode=0o700, exist_ok=True)
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    planted.bind(str(sdir / "resident.sock"))
    planted.listen(8)  # a connect would succeed and then hang: the relay must not connect
    os.chmod(sdir / "resident.sock", 0o600)
    if flaw == "other_owner":
        os.chown(sdir / "resident.sock", 12345, 12345)
        said = "belongs to uid 12345"
    elif flaw == "open_socket":
        os.chmod(sdir / "resident.sock", 0o666)
        said = "has mode 666"
    else:
        os.chmod(sdir, 0o755)
        said = "has mode 755"
    c = Raw(vault)
    try:
        assert c.initialize("careful")["result"]["serverInfo"]["name"] == "vaultwatch"
        assert not c.call("read_doc", path="n0.md")["result"]["isError"]
    finally:
        c.close()
        planted.close()
    assert said in c.stderr and "Serving in this process instead" in c.stderr, c.stderr
    assert started(vault)[-1]["transport"] == "stdio"


def test_status_and_stop(vault: Path) -> None:
    c = Raw(vault)
    c.initialize("watched", "3.1")
    r = subprocess.run(
        [SERVER, "status", "--vault", str(vault)], capture_output=True, text=True, env=env()
    )
    assert r.returncode == 0, r.stderr
    assert "resident server pid" in r.stdout and "watched/3.1" in r.stdout, r.stdout
    assert "1 attached" in r.stdout
    status = ask(vault, "status")
    assert status is not None
    r = subprocess.run(
        [SERVER, "stop", "--vault", str(vault)], capture_output=True, text=True, env=env()
    )
    assert r.returncode == 0 and f"pid {status['pid']}" in r.stdout, r.stderr
    assert not pid_alive(status["pid"])
    # stopped by the owner: the attached relay ends its session instead of starting another
    assert c.proc.wait(30) == 0
    assert ask(vault, "status") is None
    c.close()
    assert "was stopped" in c.stderr
    r = subprocess.run(
        [SERVER, "status", "--vault", str(vault)], capture_output=True, text=True, env=env()
    )
    assert r.returncode == 1 and "no resident server runs" in r.stderr


def test_a_relay_killed_with_its_client_leaves_the_resident_serving_others(vault: Path) -> None:
    a, b = Raw(vault), Raw(vault)
    try:
        a.initialize("a")
        b.initialize("b")
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(30)
        wait_for(
            lambda: (
                [x["name"] for x in (ask(vault, "status") or {}).get("clients", [])] == ["b/1.0"]
            ),
            30,
            "the resident to see client a gone",
        )
        assert not b.call("list_docs")["result"]["isError"]
    finally:
        b.close()
