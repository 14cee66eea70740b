"""The vault's resident server: one process per vault that every client shares (DESIGN.md,
"Process model"). It holds the one Vault (note index, full-text index, recall's model and
vectors, the journal writer, the locks) and runs one MCP session per connection on a Unix
socket in the vault's state folder; `vaultwatch-server` over stdio (server/protocol/relay.py)
relays a client to it. The dashboard attaches too, and may ask it to serve HTTP as well.

Started detached by the first relay (or by the dashboard), it exits after a quiet period with
no client and no dashboard attached (`resident: {idle_minutes: N}` in vault.config.yaml,
VAULTWATCH_RESIDENT_IDLE_S for tests), when its vault folder disappears, when asked to stop
(`vaultwatch-server stop`), or, asked to retire by a relay of a newer build, once no call is
in flight (the relays attached reconnect to the new one).

The wire: on connect the resident says hello (one JSON line: protocol, version, build, pid);
the peer's first line says what it wants (attach, status, stop, retire, dashboard); after
`attach` the lines are the client's JSON-RPC, newline-delimited, as on stdio.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from server import __version__
from server.core.gitrepo import ensure_repo
from server.core.state_files import make_state_dir, open_state, state_dir
from server.protocol.cli import _raise_interrupt, no_core_dumps, open_vault, stop
from server.protocol.resident_link import PROTOCOL, build_id
from server.protocol.resident_socket import SOCKET_NAME, socket_address
from server.protocol.resident_start import EXIT_ANOTHER, LIFE_LOCK, LOG_NAME
from server.vault import Vault
from server.write.journal import ServerStarted, ServerStopped
from server.write.leases import ignore_lease_breaks

log = logging.getLogger("vaultwatch")

LINE_LIMIT = 64 * 1024 * 1024  # one JSON-RPC message; a write's body is capped far below this
FIRST_LINE_WAIT_S = 30.0
TRANSPORT = "resident"


def idle_seconds(vault: Vault) -> float:
    forced = os.environ.get("VAULTWATCH_RESIDENT_IDLE_S")
    if forced:
        with contextlib.suppress(ValueError):
            return max(0.0, float(forced))
    return vault.config.resident_idle_minutes * 60


@dataclass
class Conn:
    """One attached peer: a client's relay or the dashboard."""

    kind: str  # "client" or "dashboard"
    pid: int | None
    writer: asyncio.StreamWriter
    since: float = field(default_factory=time.time)
    name: str = ""  # name/version from the client's initialize
    inflight: set[str] = field(default_factory=set)

    def status(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "pid": self.pid,
            "name": self.name,
            "since": self.since,
            "inflight": len(self.inflight),
        }


class Resident:
    def __init__(self, root: Path, vault: Vault, mcp: Any, listener: socket.socket) -> None:
        self.root, self.vault, self.mcp, self.listener = root, vault, mcp, listener
        self.sock_path = state_dir(root) / SOCKET_NAME
        self.sock_ino = os.stat(self.sock_path).st_ino
        self.build = build_id()
        self.started = time.time()
        self.conns: dict[int, Conn] = {}
        self.idle_s = idle_seconds(vault)
        self.quiet_since = time.monotonic()
        # the watch's last look, in seconds of uptime, and how long the resident had been
        # without a client at it: status says both, so a test sees that a look made a whole
        # quiet period after a client came found it attached (instead of sleeping past it)
        self.checked_s = 0.0
        self.quiet_s = 0.0
        self.retiring = False
        self.reason = ""
        self.stopped = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.http: Any = None  # the uvicorn server, once the dashboard asked for HTTP
        self.http_url = ""
        self.http_said = ""
        self.lock_fd: int | None = None

    # -- the loop -------------------------------------------------------------------------------

    async def serve(self) -> str:
        self.server = await asyncio.start_unix_server(
            self.handle, sock=self.listener, limit=LINE_LIMIT
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch)
            await self.stopped.wait()
            for conn in list(self.conns.values()):
                await self.say_stopping(conn)
            if self.http is not None:
                self.http.should_exit = True
            tg.cancel_scope.cancel()
        self.server.close()
        return self.reason

    def shutdown(self, reason: str) -> None:
        if not self.reason:
            self.reason = reason
            log.warning("resident server stopping: %s", reason)
        self.unlisten()
        self.stopped.set()

    def unlisten(self) -> None:
        """Stop taking connections and give the socket and the vault to the next resident."""
        if self.server is not None:
            self.server.close()
        with contextlib.suppress(OSError):
            if os.stat(self.sock_path).st_ino == self.sock_ino:
                os.unlink(self.sock_path)
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    async def say_stopping(self, conn: Conn) -> None:
        """Tell a relay why its link closes: 'stop' ends its session, anything else (an
        upgrade, a restart) makes it reconnect to the next resident."""
        with contextlib.suppress(Exception):
            conn.writer.write(
                json.dumps({"vaultwatch": "stopping", "reason": self.reason}).encode()
            )
            conn.writer.write(b"\n")
            await conn.writer.drain()
            conn.writer.close()

    async def watch(self) -> None:
        """The quiet period, the vault folder, the socket, a retirement: checked a few times a
        second (cheap stat calls)."""
        tick = max(0.05, min(1.0, self.idle_s / 4))
        while True:
            await anyio.sleep(tick)
            now = time.monotonic()
            if not self.root.is_dir():
                self.shutdown("the vault folder is gone")
            elif not self.retiring and not self._socket_is_ours():
                self.shutdown("its socket was removed or replaced")
            elif self.retiring and not any(c.inflight for c in self.conns.values()):
                self.shutdown("upgrade")
            elif self.conns:
                self.quiet_since = now
            elif now - self.quiet_since >= self.idle_s:
                self.shutdown(f"no client for {self.idle_s:g} s")
            self.checked_s, self.quiet_s = time.time() - self.started, now - self.quiet_since

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.sock_path).st_ino == self.sock_ino
        except OSError:
            return False

    # -- one connection ------------------------------------------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hello = {
            "vaultwatch": "resident",
            "protocol": PROTOCOL,
            "version": __version__,
            "build": self.build,
            "pid": os.getpid(),
        }
        try:
            writer.write(json.dumps(hello).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), FIRST_LINE_WAIT_S)
            ask = json.loads(line) if line.strip() else {}
        except (OSError, ValueError, TimeoutError, asyncio.LimitOverrunError):
            writer.close()
            return
        what = ask.get("vaultwatch") if isinstance(ask, dict) else None
        try:
            if what == "attach":
                await self.attached(reader, writer, Conn("client", _int(ask.get("pid")), writer))
            elif what == "dashboard":
                await self.dashboard(reader, writer, ask)
            elif what == "status":
                await self.reply(writer, self.status())
            elif what == "stop":
                await self.reply(writer, {"pid": os.getpid(), "stopping": True})
                self.shutdown(str(ask.get("reason") or "stop"))
            elif what == "retire":
                self.retiring = True
                self.unlisten()
                log.warning("resident server retiring: a client of build %s came", "newer")
                await self.reply(writer, {"pid": os.getpid(), "retiring": True})
            else:
                await self.reply(writer, {"error": f"unknown request {what!r}"})
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def reply(self, writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        writer.write(json.dumps(answer).encode() + b"\n")
        await writer.drain()

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "build": self.build,
            "vault": str(self.root),
            "started": self.started,
            "uptime_s": round(time.time() - self.started, 1),
            "idle_s": self.idle_s,
            "checked_s": round(self.checked_s, 2),
            "quiet_s": round(self.quiet_s, 2),
            "retiring": self.retiring,
            "http": self.http_url,
            "clients": [c.status() for c in self.conns.values()],
        }

    async def attached(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Conn
    ) -> None:
        """One MCP session over this connection, as stdio would run it: newline-delimited
        JSON-RPC in, the SDK's answers out, on the one server every session shares."""
        import mcp.types as types
        from mcp.shared._context_streams import create_context_streams
        from mcp.shared.message import SessionMessage

        self.conns[id(conn)] = conn
        read_send, read_recv = create_context_streams[SessionMessage | Exception](0)
        write_send, write_recv = create_context_streams[SessionMessage](0)

        async def rx() -> None:
            async with read_send:
                while True:
                    try:
                        line = await reader.readline()
                    except (OSError, asyncio.LimitOverrunError, ValueError):
                        break
                    if not line:
                        break
                    note_request(conn, line)
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except Exception as exc:
                        await read_send.send(exc)
                        continue
                    await read_send.send(SessionMessage(message))

        async def tx() -> None:
            async with write_recv:
                async for sent in write_recv:
                    message = sent.message
                    rid = getattr(message, "id", None)
                    if rid is not None and getattr(message, "method", None) is None:
                        conn.inflight.discard(json.dumps(rid))
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    writer.write(data.encode() + b"\n")
                    await writer.drain()

        low = self.mcp._lowlevel_server  # what MCPServer.run_stdio_async runs, per connection
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(rx)
                tg.start_soon(tx)
                await low.run(read_recv, write_send, low.create_initialization_options())
                tg.cancel_scope.cancel()
        except (OSError, ConnectionError):
            pass  # the relay went away mid-answer: its client is gone
        finally:
            self.conns.pop(id(conn), None)

    async def dashboard(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ask: dict[str, Any]
    ) -> None:
        """The dashboard attached: HTTP for its Connect snippets (and remote clients) if it
        asks, recall kept current if it asks; attached until it closes the connection."""
        conn = Conn("dashboard", _int(ask.get("pid")), writer)
        self.conns[id(conn)] = conn
        try:
            answer: dict[str, Any] = {"pid": os.getpid(), "build": self.build}
            if ask.get("http"):
                try:
                    answer["url"] = await self.serve_http(str(ask["http"]), ask.get("token_file"))
                    answer["said"] = self.http_said
                except (OSError, SystemExit, ValueError) as exc:
                    answer["error"] = f"cannot serve HTTP on {ask['http']}: {exc}"
            if ask.get("index_now"):
                await anyio.to_thread.run_sync(self.vault.start_semantic_soon)
                await anyio.to_thread.run_sync(self.vault.keep_semantic_current)
            await self.reply(writer, answer)
            while await reader.read(65536):  # until the dashboard closes or quits
                pass
        except (OSError, ConnectionError):
            pass
        finally:
            self.conns.pop(id(conn), None)

    async def serve_http(self, bind_text: str, token_file: Any) -> str:
        """HTTP with the bearer token on the same Vault, once per resident (a second
        dashboard gets the URL already served)."""
        if self.http is not None:
            return self.http_url
        import uvicorn

        from server.protocol.args import parse_bind
        from server.protocol.http_serve import http_app

        served = http_app(self.mcp, self.root, parse_bind(bind_text), token_file or None)

        class Quiet(uvicorn.Server):
            # the resident handles its own signals; uvicorn's would swallow SIGTERM
            @contextlib.contextmanager
            def capture_signals(self) -> Any:
                yield

        server = Quiet(uvicorn.Config(served.app, log_level="warning", lifespan="on"))
        self.http, self.http_url, self.http_said = server, served.url, served.said
        asyncio.get_running_loop().create_task(server.serve(sockets=[served.sock]))
        return served.url


def note_request(conn: Conn, line: bytes) -> None:
    """What a status shows and a retirement waits for: the calls in flight, the client's name."""
    try:
        msg = json.loads(line)
    except ValueError:
        return
    if not isinstance(msg, dict) or "method" not in msg:
        return
    if "id" in msg:
        conn.inflight.add(json.dumps(msg["id"]))
    if msg["method"] == "initialize":
        info = (msg.get("params") or {}).get("clientInfo") or {}
        if isinstance(info, dict):
            name, version = str(info.get("name") or ""), str(info.get("version") or "")
            conn.name = f"{name}/{version}" if version else name


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def take_vault(sdir: Path) -> tuple[int, socket.socket]:
    """The life lock (one resident per vault) and the listening socket, made 0600 as it is
    bound (umask), in the 0700 state folder. A socket file left by a dead resident is removed:
    holding the lock means no live resident serves it."""
    fd = open_state(sdir / LIFE_LOCK, os.O_RDWR | os.O_CREAT)  # never through a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        print("vaultwatch-server: another resident server serves this vault", file=sys.stderr)
        raise SystemExit(EXIT_ANOTHER) from None
    path = sdir / SOCKET_NAME
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(socket_address(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    # listening before the slow part (the SDK's import, the index): relays connect and wait
    # for the hello instead of polling for the file
    sock.listen(128)
    sock.setblocking(False)
    return fd, sock


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m server.protocol.resident")
    ap.add_argument("--vault", required=True)
    ap.add_argument("--log", action="store_true", help="messages to .git/vaultwatch/resident.log")
    args = ap.parse_args(argv)
    no_core_dumps()
    # a relay starts us in its client's session (resident_start.spawn_resident says why): the hangup of
    # that client's terminal is not ours to die of; its other clients still talk to us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format=f"%(asctime)s vaultwatch-server[{os.getpid()}]: %(message)s",
    )
    root = Path(args.vault).expanduser().absolute()
    if not root.is_dir():
        raise SystemExit(f"vaultwatch-server: vault folder {root} does not exist")
    ensure_repo(root)  # a folder a client opened first: the repo (and its state folder) now
    sdir = make_state_dir(state_dir(root))
    if args.log:  # started by a relay: it outlives it, so its messages go to the vault's log
        log_fd = open_state(sdir / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.dup2(log_fd, 2)
        os.close(log_fd)
    lock_fd, listener = take_vault(sdir)
    vault = open_vault(root)
    from server.protocol.tools import build_server

    mcp = build_server(vault)
    vault.journal.append(
        ServerStarted(
            transport=TRANSPORT,
            read_only=False,
            version=__version__,
            vault=str(root),
            config_errors=[str(p) for p in vault.config_errors],
        )
    )
    signal.signal(signal.SIGTERM, _raise_interrupt)
    ignore_lease_breaks()
    resident = Resident(root, vault, mcp, listener)
    resident.lock_fd = lock_fd
    reason = "exit"
    try:
        reason = anyio.run(resident.serve) or "exit"
    except KeyboardInterrupt:
        reason = "signal"
    finally:
        resident.unlisten()
        stop(vault, ServerStopped(transport=TRANSPORT, reason=reason))


if __name__ == "__main__":
    main()
