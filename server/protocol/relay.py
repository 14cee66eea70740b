"""`vaultwatch-server`, the command clients spawn: over stdio it is a thin relay to the vault's
resident server (server/protocol/resident.py), started on first use and shared by every client.

Standard library only, on purpose: importing the MCP SDK costs a new conversation 1-2 s of CPU
before its first answer; this relay answers its `initialize` in a tenth of that because the
resident already has the SDK, the index and the model loaded. Anything heavier than `server`'s
and `server.protocol`'s own `__init__` (a version string, a docstring) must not be imported at
module level here (tests/test_resident.py checks `sys.modules` after a relayed session).

The relay answers nothing itself. It pumps newline-delimited JSON-RPC both ways over a Unix
socket in the vault's state folder (`.git/vaultwatch/resident.sock`, 0600, in a 0700 folder
owned by us, the resident's uid checked with SO_PEERCRED), and reads just enough of it to
(a) replay the client's `initialize` to a restarted resident and (b) answer the calls that were
in flight when a resident died with a clear error. When the resident cannot be used (another
owner, an open mode, a version that will not match, no state folder), it says why on stderr and
serves in this process as before (server/protocol/cli.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server import __version__

PROTOCOL = 1  # of the hello and control lines below; the MCP messages are the client's own
SOCKET_NAME = "resident.sock"
START_LOCK = "resident.start.lock"  # relays (and the dashboard) take turns starting one
LIFE_LOCK = "resident.lock"  # held by the resident serving the socket, for its life
LOG_NAME = "resident.log"
EXIT_ANOTHER = 75  # a resident exits with this (EX_TEMPFAIL) when another serves the vault
START_WAIT_S = 90.0  # a resident's start: the SDK's import and the vault's index, on a busy box
HELLO_WAIT_S = 90.0
RECONNECTS = 3  # per relay: a resident that dies at every start is not restarted forever
# JSON-RPC's range for implementation-defined server errors
STOPPED_CODE = -32001
STOPPED_MESSAGE = (
    "The vault server stopped while answering this call (it crashed or was restarted), so "
    "this call has no result. A write it was making is rolled back when the server starts "
    "again: nothing is half-written. Check with read_doc or list_docs whether the change is "
    "there, then call again."
)


def hello_wait() -> float:
    """How long a resident may take to say hello: its start (the SDK's import, the vault's
    index) on a busy machine. VAULTWATCH_HELLO_WAIT_S stands in for it (tests: a hung one)."""
    with contextlib.suppress(ValueError):
        return max(0.1, float(os.environ.get("VAULTWATCH_HELLO_WAIT_S", "")))
    return HELLO_WAIT_S


class Unusable(Exception):
    """The resident server cannot be used: the message says why, for the owner."""


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


def state_dir(root: Path) -> Path:
    """`.git/vaultwatch` of the vault, as server.core.state_files.state_dir finds it (a `.git`
    file's `gitdir:` for a worktree), without importing it. Unusable when there is no repo yet
    (the in-process server makes it; the next client relays)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot / "vaultwatch"
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            return (target if target.is_absolute() else root / target) / "vaultwatch"
    raise Unusable(f"{root} has no git repository yet")


def check_private(path: Path, *, want_socket: bool = False) -> None:
    """The state folder and the socket must be ours and closed to others: a socket another user
    made (or could reach) would let them read the notes we send or answer in the server's name."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):  # it would lead to someone else's socket or folder
        raise Unusable(f"{path} is a symbolic link, not a {'socket' if want_socket else 'folder'}")
    kind_ok = stat.S_ISSOCK(st.st_mode) if want_socket else stat.S_ISDIR(st.st_mode)
    if not kind_ok:
        raise Unusable(f"{path} is not a {'socket' if want_socket else 'folder'}")
    if st.st_uid != os.getuid():
        raise Unusable(f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()})")
    if st.st_mode & 0o077:
        raise Unusable(
            f"{path} has mode {stat.S_IMODE(st.st_mode):o}: others could use it "
            f"(it must be {'600' if want_socket else '700'})"
        )


def socket_address(path: Path) -> str:
    """A Unix socket's address is at most 107 bytes: a deeper vault is reached through its
    state folder's descriptor (/proc/self/fd/N/resident.sock), kept open for the process."""
    text = os.fsdecode(path)
    if len(os.fsencode(text)) < 100:
        return text
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    return f"/proc/self/fd/{fd}/{path.name}"


def peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def try_connect(sdir: Path) -> socket.socket | None:
    """A connection to the running resident, None when none runs (no socket, or a stale one a
    dead resident left). Unusable when one is there that is not safely ours."""
    path = sdir / SOCKET_NAME
    try:
        check_private(sdir)
        check_private(path, want_socket=True)
    except FileNotFoundError:
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(socket_address(path))
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None
    except PermissionError as exc:
        s.close()
        raise Unusable(f"no permission to connect to {path} ({exc.strerror})") from None
    uid = peer_uid(s)  # asked once: the socket is closed before the refusal names it
    if uid != os.getuid():
        s.close()
        raise Unusable(f"the server at {path} runs as uid {uid}, not as you")
    return s


@contextlib.contextmanager
def start_lock(sdir: Path, wait: float = START_WAIT_S) -> Any:
    """One starter at a time, so ten clients opened at once start one resident."""
    # never through a link (issue 27): the lock file would be made wherever it points
    check_private(sdir)
    fd = os.open(sdir / START_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Unusable(
                        "another client has been starting the server for too long"
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def spawn_resident(
    root: Path, sdir: Path | None, *, detached: bool = True
) -> subprocess.Popen[bytes]:
    """Start the resident, detached from this client (its own process group, so the signals a
    terminal or a client sends to the client's group miss it; SIGHUP ignored; stdio on
    /dev/null, its messages in resident.log): it outlives the client that started it. With no
    state folder yet (no repo: the resident makes it) its first words are lost, the rest
    logged.

    Not its own session: with the kernel's autogroups (sched_autogroup_enabled, the default on
    desktop Linux) a new session is a new scheduling group, and a process alone in its group
    that wakes for a few ms at a time waited longer for a core on a loaded machine: traced hop
    by hop (`python -m bench.resident_bench --hops`), a warm list_docs spent 10-16 ms in the
    resident in 3 of 4 runs vs 3 ms in-process; measured paired at a load of 20, the relay
    added +2.8 to +5.4 ms median with the resident in its own session, +0.3 to +0.4 ms in the
    client's."""
    log = (
        os.open(
            sdir / LOG_NAME,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
        if sdir is not None
        else os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    )
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "server.protocol.resident", "--vault", str(root), "--log"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            process_group=0 if detached else None,
            close_fds=True,
            cwd="/",
        )
    finally:
        os.close(log)


def log_tail(sdir: Path, lines: int = 3) -> str:
    try:
        text = (sdir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " | ".join(text.strip().splitlines()[-lines:])


Spawn = Callable[[Path, Path], "subprocess.Popen[Any]"]


def connect_or_start(
    root: Path, sdir: Path, spawn: Spawn = spawn_resident, wait: float = START_WAIT_S
) -> socket.socket:
    s = try_connect(sdir)
    if s is not None:
        return s
    with start_lock(sdir, wait):
        s = try_connect(sdir)  # started by the client that held the lock before us
        if s is not None:
            return s
        proc: subprocess.Popen[Any] | None = spawn(root, sdir)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            s = try_connect(sdir)
            if s is not None:
                return s
            rc = proc.poll() if proc is not None else None
            if rc == EXIT_ANOTHER:  # another resident got the vault first: wait for its socket
                proc = None
            elif rc is not None:
                raise Unusable(f"the resident server exited ({rc}) at start: {log_tail(sdir)}")
            time.sleep(0.01)
        raise Unusable(f"the resident server did not start in {wait:.0f} s")


def repo_made_by_resident(root: Path) -> Path:
    """A folder that is not a repo yet: the resident makes it one (git init and the owner's
    import commit, as the in-process server does); its state folder once it is there."""
    proc = spawn_resident(root, None)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(Unusable):
            sdir = state_dir(root)
            if (sdir / SOCKET_NAME).exists():
                return sdir
        if proc.poll() not in (None, EXIT_ANOTHER):
            raise Unusable(f"the resident server exited ({proc.returncode}) making the repo")
        time.sleep(0.02)
    raise Unusable(f"the resident server did not make the repo in {START_WAIT_S:.0f} s")


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


# ---------------------------------------------------------------------------------------------
# The relay proper


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


# ---------------------------------------------------------------------------------------------
# The command


def relay_root(argv: list[str]) -> Path | None:
    """The vault to relay for, or None when this call is for the in-process server: HTTP, the
    demo, read-only, eval, --help, an explicit --in-process, VAULTWATCH_RESIDENT=off."""
    if os.environ.get("VAULTWATCH_RESIDENT", "").lower() in ("off", "0", "no", "false"):
        return None
    vault = "."
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--vault" and rest:
            vault = rest.pop(0)
        elif arg.startswith("--vault="):
            vault = arg.split("=", 1)[1]
        else:
            return None
    root = Path(vault).expanduser().absolute()
    return root if root.is_dir() else None


def describe(status: dict[str, Any]) -> str:
    up = float(status.get("uptime_s", 0))
    lines = [
        f"resident server pid {status.get('pid')}, version {status.get('build')}, "
        f"up {int(up // 3600)}h{int(up % 3600 // 60):02d}m{int(up % 60):02d}s",
        f"vault {status.get('vault')}",
    ]
    clients = status.get("clients") or []
    lines.append(f"{len(clients)} attached" + (":" if clients else ""))
    for c in clients:
        pid = f" (pid {c['pid']})" if c.get("pid") else ""
        if c.get("kind") == "dashboard":
            lines.append(f"  the dashboard{pid}")
            continue
        name = c.get("name") or "(not initialized yet)"
        lines.append(f"  client: {name}{pid}, {c.get('inflight', 0)} call(s) in flight")
    if status.get("http"):
        lines.append(f"HTTP: {status['http']}")
    return "\n".join(lines)


def ask(root: Path, what: str, **extra: Any) -> dict[str, Any] | None:
    """A control request to the running resident (never starts one): its answer, None when
    none runs."""
    link = open_link(root, {"vaultwatch": what, **extra}, start=False)
    if link is None:
        return None
    try:
        answer = json.loads(read_line(link.sock, link.rest, 30))
    finally:
        link.sock.close()
    return answer if isinstance(answer, dict) else None


def control(argv: list[str]) -> int:
    import argparse
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `status | head` ends quietly

    ap = argparse.ArgumentParser(prog=f"vaultwatch-server {argv[0]}")
    ap.add_argument("--vault", default=".", help="vault folder (default: current folder)")
    ap.add_argument("--json", action="store_true", help="status as JSON")
    args = ap.parse_args(argv[1:])
    root = Path(args.vault).expanduser().absolute()
    try:
        answer = ask(root, argv[0])
    except Unusable as exc:
        print(f"vaultwatch-server: {exc}", file=sys.stderr)
        return 1
    if answer is None:
        print(f"vaultwatch-server: no resident server runs for {root}", file=sys.stderr)
        return 1 if argv[0] == "status" else 0
    if argv[0] == "status":
        print(json.dumps(answer) if args.json else describe(answer))
        return 0
    pid = int(answer.get("pid", 0))
    deadline = time.monotonic() + 15
    while pid and time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    if pid and pid_alive(pid):
        print(f"vaultwatch-server: pid {pid} did not stop in 15 s", file=sys.stderr)
        return 1
    print(f"stopped the resident server (pid {pid}) for {root}")
    return 0


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own child, not yet reaped) has stopped serving
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    return True


def _exit_on_signals() -> None:
    """A client that stops its server (SIGTERM, Ctrl-C, a closed terminal) gets a clean exit at
    once, whatever the pump threads are blocked on: the relay holds nothing that needs saving
    (a call in flight finishes, or is rolled back, in the resident), and the resident sees the
    connection close."""
    import signal

    def leave(_signum: int, _frame: object) -> None:
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, leave)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    import resource

    # the relay holds notes in its buffers too: no core file of it in the working directory
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if argv[:1] in (["status"], ["stop"]):
        raise SystemExit(control(argv))
    root = relay_root(argv)
    if root is not None:
        try:
            link = open_link(root, {"vaultwatch": "attach", "pid": os.getpid()})
        except Unusable as exc:
            print(
                f"vaultwatch-server: not using the shared resident server: {exc}. "
                "Serving in this process instead.",
                file=sys.stderr,
                flush=True,
            )
        else:
            assert link is not None
            _exit_on_signals()
            raise SystemExit(Relay(root, link).run())
    from server.protocol.cli import main as serve_here

    serve_here([a for a in argv if a != "--in-process"])


if __name__ == "__main__":
    main()
