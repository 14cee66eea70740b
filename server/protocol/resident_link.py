"""A link to the resident server: connected (started if none runs), its hello checked (our
protocol, our build; a resident of another build is asked to make way), and what we want said
(attach, status, stop, dashboard). `read_line` reads the resident's newline-delimited JSON.

Standard library only: the relay imports it (see server/protocol/resident_socket.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from server import __version__
from server.protocol.resident_socket import Unusable, state_dir, try_connect
from server.protocol.resident_start import (
    START_WAIT_S,
    Spawn,
    connect_or_start,
    repo_made_by_resident,
    spawn_resident,
)

PROTOCOL = 1  # of the hello and control lines below; the MCP messages are the client's own
HELLO_WAIT_S = 90.0


def hello_wait() -> float:
    """How long a resident may take to say hello: its start (the SDK's import, the vault's
    index) on a busy machine. VAULTWATCH_HELLO_WAIT_S stands in for it (tests: a hung one)."""
    with contextlib.suppress(ValueError):
        return max(0.1, float(os.environ.get("VAULTWATCH_HELLO_WAIT_S", "")))
    return HELLO_WAIT_S


def build_id() -> str:
    """What identifies this installed code: the version and the size and time of every module
    in the `server` package (an upgrade or an edit changes it). Stat calls only (~1 ms).
    VAULTWATCH_BUILD_ID stands in for it (tests: a resident from an 'older' build)."""
    forced = os.environ.get("VAULTWATCH_BUILD_ID")
    if forced:
        return forced
    pkg = Path(__file__).resolve().parent.parent
    h = hashlib.sha1(__version__.encode())
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                rel = os.path.relpath(os.path.join(dirpath, name), pkg)
                h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns};".encode())
    return f"{__version__}+{h.hexdigest()[:12]}"


def read_line(sock: socket.socket, buf: bytearray, timeout: float) -> bytes:
    """One line from `sock` (without its newline); what came after it stays in `buf`."""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no line from the resident server")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionResetError("the resident server closed the connection")
        buf += chunk
    sock.settimeout(None)
    i = buf.index(b"\n")
    line = bytes(buf[:i])
    del buf[: i + 1]
    return line


class Link:
    """A connection to the resident that said hello: its socket, what it said, and the bytes
    read past the hello."""

    def __init__(self, sock: socket.socket, hello: dict[str, Any], rest: bytearray) -> None:
        self.sock, self.hello, self.rest = sock, hello, rest


def open_link(
    root: Path,
    purpose: dict[str, Any],
    *,
    start: bool = True,
    spawn: Spawn = spawn_resident,
    wait: float = START_WAIT_S,
) -> Link | None:
    """Connect (starting the resident if `start` and none runs), check its hello, say what we
    want (`purpose`: attach, status, stop, dashboard). A resident of another build is asked to
    retire (it finishes its calls in flight, then exits) and a current one is started, once."""
    try:
        sdir = state_dir(root)
    except Unusable:
        if not start:
            return None
        sdir = repo_made_by_resident(root)
    if not sdir.exists() and start:
        with contextlib.suppress(FileExistsError):
            os.mkdir(sdir, 0o700)
    for attempt in range(2):
        try:
            sock = connect_or_start(root, sdir, spawn, wait) if start else try_connect(sdir)
        except FileNotFoundError as exc:
            raise Unusable(f"{sdir} is missing ({exc.strerror})") from None
        if sock is None:
            return None
        buf = bytearray()
        try:
            hello = json.loads(read_line(sock, buf, hello_wait()))
        except TimeoutError:
            # it took the connection and said nothing for the whole wait: stopped (SIGSTOP) or
            # hung, not going away; a second wait would only keep the client waiting twice
            sock.close()
            raise Unusable(
                f"the resident server took the connection but did not say hello in "
                f"{hello_wait():g} s: it is stopped or hung"
            ) from None
        except OSError as exc:
            sock.close()
            # a resident that was going away as we connected (its quiet period ended, or it
            # lost the start race to another): start or attach to the one that serves now
            if attempt == 0 and start:
                continue
            raise Unusable(f"the resident server did not say hello ({exc})") from None
        except ValueError as exc:
            sock.close()
            raise Unusable(f"the resident server did not say hello ({exc})") from None
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
            sock.close()
            raise Unusable(f"the resident server speaks another protocol: {hello!r:.200}")
        mine = build_id()
        if hello.get("build") == mine or purpose.get("vaultwatch") in ("status", "stop"):
            sock.sendall(json.dumps(purpose).encode() + b"\n")
            return Link(sock, hello, buf)
        with contextlib.suppress(OSError):
            sock.sendall(b'{"vaultwatch": "retire"}\n')
            read_line(sock, buf, 10)  # it stopped listening: the next connect starts ours
        sock.close()
        if not start:
            return None
    raise Unusable(
        f"the resident server is build {hello.get('build')} and this is {mine}; it did not "
        "make way for this one"
    )
