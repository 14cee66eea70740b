"""The relay proper: the client's stdin pumped to the resident and the resident's answers to
stdout, reading just enough to replay the client's `initialize` to a restarted resident and to
answer the calls in flight when one died.

Standard library only: the relay imports it (see server/protocol/resident_socket.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from server.protocol.resident_link import Link, hello_wait, open_link, read_line
from server.protocol.resident_socket import Unusable

RECONNECTS = 3  # per relay: a resident that dies at every start is not restarted forever
# JSON-RPC's range for implementation-defined server errors
STOPPED_CODE = -32001
STOPPED_MESSAGE = (
    "The vault server stopped while answering this call (it crashed or was restarted), so "
    "this call has no result. A write it was making is rolled back when the server starts "
    "again: nothing is half-written. Check with read_doc or list_docs whether the change is "
    "there, then call again."
)


class Relay:
    """Pumps the client's stdin to the resident and the resident's answers to stdout, each in
    its own thread (neither side's back-pressure can stall the other)."""

    def __init__(self, root: Path, link: Link) -> None:
        self.root = root
        self.link = link
        self.lock = threading.Lock()  # the socket and the calls in flight change together
        self.inflight: dict[str, Any] = {}  # key: json of the id -> the id as sent
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None
        self.stdin_closed = False
        self.reconnects = 0
        self.stopping = ""  # the reason the resident gave for closing, if it gave one
        self.done = threading.Event()
        self.code = 0

    # client -> resident
    def outgoing(self) -> None:
        buf = bytearray()
        while True:
            try:
                chunk = os.read(0, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while (i := buf.find(b"\n")) >= 0:
                line = bytes(buf[: i + 1])
                del buf[: i + 1]
                if line.strip():
                    self.send(line)
        with self.lock:
            self.stdin_closed = True
            with contextlib.suppress(OSError):
                self.link.sock.shutdown(socket.SHUT_WR)  # the resident ends this session

    def send(self, line: bytes) -> None:
        msg = _parse(line)
        with self.lock:
            if isinstance(msg, dict):
                if msg.get("method") == "initialize":
                    self.initialize = msg
                elif msg.get("method") == "notifications/initialized":
                    self.initialized = line
                if "id" in msg and "method" in msg:
                    self.inflight[json.dumps(msg["id"])] = msg["id"]
            sock = self.link.sock
        # Sent outside the lock: the reader takes it for every answer, and a resident that
        # cannot take this line before we read its answers would wait on us as we on it. A dead
        # socket: the reader sees it close and answers what is in flight.
        with contextlib.suppress(OSError):
            sock.sendall(line)

    # resident -> client
    def incoming(self) -> None:
        try:
            while True:
                if not self.pump_answers():
                    return
                with self.lock:
                    if self.stdin_closed:
                        return
                    if self.stopping == "stop":  # the owner stopped it: this session ends
                        print("vaultwatch-server: the resident server was stopped", file=sys.stderr)
                        return
                    self.stopping = ""
                    if not self.reconnect():
                        self.code = 1
                        return
        finally:
            self.done.set()

    def pump_answers(self) -> bool:
        """Copy the resident's lines to stdout until it closes; False when the client is gone."""
        sock, buf = self.link.sock, self.link.rest
        while True:
            while (i := buf.find(b"\n")) >= 0:
                line = bytes(buf[: i + 1])
                del buf[: i + 1]
                msg = _parse(line)
                if isinstance(msg, dict) and "vaultwatch" in msg:
                    # the resident's own word, not the client's: why it is closing this link
                    self.stopping = str(msg.get("reason", ""))
                    continue
                if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                    with self.lock:
                        self.inflight.pop(json.dumps(msg["id"]), None)
                if not write_all(line):
                    return False
            try:
                chunk = sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                return True
            buf += chunk

    def reconnect(self) -> bool:
        """The resident went away while the client is still talking (it crashed, was stopped,
        or made way for an upgrade): answer the calls it took with an error, connect to (or
        start) a new one, replay the client's handshake to it. Called with the lock held."""
        for key, rid in list(self.inflight.items()):
            error = {"code": STOPPED_CODE, "message": STOPPED_MESSAGE}
            write_all(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode() + b"\n")
            del self.inflight[key]
        self.link.sock.close()
        while self.reconnects < RECONNECTS:
            self.reconnects += 1
            try:
                link = open_link(self.root, {"vaultwatch": "attach", "pid": os.getpid()})
                assert link is not None
                if self.initialize is not None:
                    replay = {**self.initialize, "id": "vaultwatch-relay-replay"}
                    link.sock.sendall(json.dumps(replay).encode() + b"\n")
                    while True:  # its answer is ours, not the client's
                        answer = _parse(read_line(link.sock, link.rest, hello_wait()))
                        if isinstance(answer, dict) and answer.get("id") == replay["id"]:
                            break
                    if self.initialized is not None:
                        link.sock.sendall(self.initialized)
            except (Unusable, OSError, ValueError) as exc:
                print(f"vaultwatch-server: reconnecting failed: {exc}", file=sys.stderr)
                continue
            self.link = link
            return True
        print("vaultwatch-server: the resident server keeps stopping; giving up", file=sys.stderr)
        return False

    def run(self) -> int:
        """Until the session ends: the client closed stdin (the resident then ends the session
        and closes; its last answers are still passed on, for a bounded time), or the resident
        was stopped by the owner while the client still talks."""
        threading.Thread(target=self.incoming, name="resident-to-client", daemon=True).start()
        writer = threading.Thread(target=self.outgoing, name="client-to-resident", daemon=True)
        writer.start()
        while not self.done.wait(0.5):
            if not writer.is_alive():
                self.done.wait(5)
                break
        return self.code


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def write_all(data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            n = os.write(1, view)
        except BrokenPipeError:
            return False
        except InterruptedError:
            continue
        view = view[n:]
    return True
