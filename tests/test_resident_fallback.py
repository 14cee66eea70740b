"""When the resident server cannot be used, `vaultwatch-server` says why on stderr and serves the
client in its own process (issue 30): a resident of another build that will not make way, one
that is stopped and never says hello, a socket path that is not a socket, a socket another
user listens on. Each through the SDK's real stdio client, with real resident processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from server.protocol.resident_control import ask
from server.protocol.resident_link import build_id

from .conftest import git_log, pid_alive, wait_for, wait_gone
from .residents import SERVER, Raw, env, started
from .residents import vault as vault  # the fixture

pytestmark = pytest.mark.slow

# A real resident of an older build that answers a relay's "retire" and then stays: it keeps
# its socket and its lock, as a build that predates (or mishandles) making way would.
STUBBORN = """
import sys
from server.protocol import resident

class Stubborn(resident.Resident):
    def unlisten(self):
        if self.retiring and not self.reason:
            self.retiring = False
            return
        super().unlisten()

resident.Resident = Stubborn
resident.main(sys.argv[1:])
"""


def old_resident(root: Path, *, stubborn: bool) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "server.protocol.resident", "--vault", str(root)]
    if stubborn:
        cmd = [sys.executable, "-c", STUBBORN, "--vault", str(root)]
    proc = subprocess.Popen(
        cmd,
        # long quiet period: it must still be there, serving, after the fallback
        env=env(VAULTWATCH_BUILD_ID="0.0.1+old", VAULTWATCH_RESIDENT_IDLE_S="300"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    status = wait_for(lambda: ask_quietly(root), 90, "the old resident's hello")
    assert status["pid"] == proc.pid and status["build"] == "0.0.1+old"
    return proc


class OldClient:
    """A client of the old build, attached to the old resident over its socket (what its
    relay would send), that must go on being served whatever the new relay does."""

    def __init__(self, root: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(str(root / ".git/vaultwatch/resident.sock"))
        self.lines = self.sock.makefile("rb")
        assert json.loads(self.lines.readline())["build"] == "0.0.1+old"
        self.sock.sendall(b'{"vaultwatch": "attach"}\n')
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old"}}
        self.request(1, "initialize", init)
        self.sock.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def request(self, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            answer = json.loads(self.lines.readline())
            if answer.get("id") == rid:
                return dict(answer)

    def list_docs(self, rid: int) -> None:
        r = self.request(rid, "tools/call", {"name": "list_docs", "arguments": {}})
        assert "result" in r and not r["result"]["isError"], r

    def close(self) -> None:
        self.lines.close()
        self.sock.close()


def ask_quietly(root: Path) -> dict[str, Any] | None:
    with contextlib.suppress(Exception):
        return ask(root, "status")
    return None


@contextlib.contextmanager
def reaped(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    try:
        yield proc
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(30)


async def served_in_process(root: Path, tmp_path: Path, **extra: str) -> str:
    """One session of the SDK's stdio client on `vaultwatch-server`: a read and a write that
    must both work, from whichever process serves. Returns what the server said on stderr."""
    errlog = tmp_path / "stderr.txt"
    params = StdioServerParameters(command=SERVER, args=["--vault", str(root)], env=env(**extra))
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err)) as c:
            r = await c.call_tool("read_doc", {"path": "n0.md"})
            assert not r.is_error, r.content
            assert "# N0" in str(r.content)
            r = await c.call_tool(
                "append_section", {"path": "n1.md", "heading": "Log", "content": "- fell back"}
            )
            assert not r.is_error, r.content
    assert "- fell back" in (root / "n1.md").read_text()
    assert "Vaultwatch-Client: mcp" in git_log(root, "-1", "--format=%B")
    return errlog.read_text()


def said_fallback(stderr: str, why: str) -> None:
    assert "not using the shared resident server" in stderr, stderr
    assert why in stderr, stderr
    assert "Serving in this process instead" in stderr, stderr


@pytest.mark.anyio
async def test_a_resident_of_another_build_that_will_not_make_way(
    vault: Path, tmp_path: Path
) -> None:
    """It answers 'retire' and stays: after asking twice the relay says so and serves the
    client in its own process; the old resident still serves its own clients, untouched."""
    with reaped(old_resident(vault, stubborn=True)) as old:
        theirs = OldClient(vault)
        try:
            stderr = await served_in_process(vault, tmp_path)
            said_fallback(
                stderr, f"the resident server is build 0.0.1+old and this is {build_id()}"
            )
            assert "did not make way" in stderr
            assert started(vault)[-1]["transport"] == "stdio"
            theirs.list_docs(2)
        finally:
            theirs.close()
        status = ask(vault, "status")
        assert status is not None and status["pid"] == old.pid and old.poll() is None


@pytest.mark.anyio
async def test_a_stopped_resident_that_never_says_hello(vault: Path, tmp_path: Path) -> None:
    """A resident that is stopped (SIGSTOP) or hung takes the connection (the kernel queues it)
    and says nothing: the relay gives up after one wait, says so, and serves in-process."""
    with reaped(old_resident(vault, stubborn=False)) as old:
        theirs = OldClient(vault)
        try:
            os.kill(old.pid, signal.SIGSTOP)
            try:
                stderr = await served_in_process(vault, tmp_path, VAULTWATCH_HELLO_WAIT_S="3")
            finally:
                os.kill(old.pid, signal.SIGCONT)
            said_fallback(stderr, "did not say hello in 3 s: it is stopped or hung")
            assert started(vault)[-1]["transport"] == "stdio"
            # woken, it serves its own client as before
            theirs.list_docs(2)
        finally:
            theirs.close()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["file", "folder", "fifo", "symlink_to_a_socket"])
async def test_a_socket_path_that_is_not_a_socket(vault: Path, tmp_path: Path, kind: str) -> None:
    """Something else sits where the socket should be: the relay neither connects through it
    (a link could lead to a socket another user serves) nor removes it, says what it found and
    serves in-process; what was there is left as it was."""
    sdir = vault / ".git/vaultwatch"
    sdir.mkdir(mode=0o700, exist_ok=True)
    path = sdir / "resident.sock"
    elsewhere = None
    if kind == "file":
        path.write_text("not a socket")
        path.chmod(0o600)
    elif kind == "folder":
        path.mkdir(mode=0o700)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        # a live socket, ours and private, reached through a link: still refused
        elsewhere = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target = tmp_path / "elsewhere.sock"
        elsewhere.bind(str(target))
        elsewhere.listen(8)
        target.chmod(0o600)
        path.symlink_to(target)
    try:
        stderr = await served_in_process(vault, tmp_path)
    finally:
        if elsewhere is not None:
            elsewhere.close()
    # a link is named as one (the state folder's rule: never through a symbolic link)
    found = (
        "is a symbolic link, not a socket" if kind == "symlink_to_a_socket" else "is not a socket"
    )
    said_fallback(stderr, f"{path} {found}")
    assert started(vault)[-1]["transport"] == "stdio"
    assert os.path.lexists(path)  # left for the owner to look at
    assert ask_quietly(vault) is None


# A listener another user runs on a socket file that looks like ours (our uid, mode 0600):
# bound as root, then the process becomes uid 12345 before it listens, so its peer credentials
# name 12345 (SO_PEERCRED records the listener's at listen()). It greets like a resident.
IMPOSTOR = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o600)
os.setresgid(12345, 12345, 12345)
os.setresuid(12345, 12345, 12345)
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b'{"vaultwatch": "resident", "protocol": 1, "build": "%s", "pid": %d}\\n'
              % (sys.argv[2].encode(), os.getpid()))
"""


@pytest.mark.anyio
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a listener as another uid")
async def test_a_socket_served_by_another_user_is_refused(vault: Path, tmp_path: Path) -> None:
    """The file passes every check (ours, 0600, in our 0700 folder) but the process behind it
    runs as another user: the relay checks the peer's uid before it sends a byte, says so, and
    serves in-process."""
    sdir = vault / ".git/vaultwatch"
    sdir.mkdir(mode=0o700, exist_ok=True)
    impostor = subprocess.Popen(
        [sys.executable, "-c", IMPOSTOR, str(sdir / "resident.sock"), build_id()],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    with reaped(impostor):
        assert impostor.stdout is not None
        assert impostor.stdout.readline() == b"listening\n"
        stderr = await served_in_process(vault, tmp_path)
        said_fallback(stderr, "runs as uid 12345, not as you")
        assert started(vault)[-1]["transport"] == "stdio"


def test_a_resident_started_by_a_relay_shares_its_clients_session(vault: Path) -> None:
    """Started in its own process group (a terminal's or a client's signals to the client's
    group miss it) but in the client's session: a new session is a new scheduling group under
    the kernel's autogroups, where a resident waking for a few ms was served 3-5x slower on a
    loaded machine (relay.spawn_resident). The hangup of that session is not its end."""
    c = Raw(vault)
    try:
        c.initialize("session")
        status = ask(vault, "status")
        assert status is not None
        pid = int(status["pid"])
        assert os.getpgid(pid) == pid, "its own process group"
        assert os.getsid(pid) == os.getsid(c.proc.pid), "the session of the client's relay"
        os.kill(pid, signal.SIGHUP)
        assert not c.call("list_docs")["result"]["isError"]
        assert pid_alive(pid)
    finally:
        c.close()
    answer = ask(vault, "stop")
    assert answer is not None
    wait_gone(int(answer["pid"]), 30)
