"""The dashboard's vault server: the vault's resident server, started as the dashboard's child
when none runs (attached to otherwise), serving HTTP on 127.0.0.1 for it, restarted on the same
port if it dies; and the snippets that connect clients to it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from server.core.pids import pid_alive
from server.core.state_files import make_state_dir, open_state, read_state, state_dir, write_state
from server.protocol.connect import claude_mcp_add_http
from server.protocol.resident_control import ask
from server.protocol.resident_link import open_link, read_line
from server.protocol.resident_socket import Unusable
from server.protocol.resident_start import LOG_NAME, log_tail


def port_file(root: Path) -> Path:
    return state_dir(root) / "port"


def remembered_port(root: Path) -> int:
    """The port this vault's dashboard served on last time (0: none), so a `claude mcp add`
    line copied once keeps working across launches."""
    try:
        port = int(read_state(port_file(root), 64).decode("utf-8").strip())
    except (OSError, ValueError):  # StateDamaged (a link, too big) is a ValueError
        return 0
    return port if 0 < port < 65536 else 0


def remember_port(root: Path, port: int) -> None:
    with contextlib.suppress(OSError):  # a read-only .git (or a link there) costs the memory
        write_state(port_file(root), f"{port}\n".encode())


@dataclass
class ServerSupervisor:
    """The dashboard's hold on the vault's resident server (server/protocol/resident.py): it
    starts it as its child when none runs, attaches to the one a client's relay started
    otherwise, and asks it to serve HTTP on the dashboard's port and keep recall current.
    Restarted if it dies; when the dashboard quits it only lets go: a resident that still has
    clients keeps serving them, and exits after its quiet period."""

    root: Path
    # 0: the port remembered from the last launch (else any free one, then remembered); the
    # same one on every restart. A port from --port or the config's http.port is used as given.
    port: int = 0
    # what named the port, for the owner's word when it was not applied (see port_not_applied)
    asked_by: str = "--port"
    python: str = sys.executable
    proc: subprocess.Popen[bytes] | None = None  # the resident, when this dashboard started it
    url: str | None = None
    restarts: int = 0
    last_exit: int | None = None
    # True from the moment the child is found dead until its replacement prints its URL: the
    # header said `● serving` all that while (about 10 s), with nothing serving
    restarting: bool = False
    stderr_tail: list[str] = field(default_factory=list)
    # "idle" until start(); "starting" while it waits for the URL; then "up" or "failed" (why
    # says what the server printed): the dashboard paints first and shows this meanwhile.
    phase: str = "idle"
    why: str = ""
    pid: int | None = None  # the resident's, whoever started it
    _link: socket.socket | None = field(default=None, repr=False)
    # called (from a watcher thread) the moment the link to the resident closes or the resident
    # says it stops: the dashboard's header says so then and the restart begins, not at the
    # next poll (the header said `● serving` for up to a poll's interval and a restart's ~10 s)
    on_down: Callable[[], None] | None = field(default=None, repr=False)
    _wake: int | None = field(default=None, repr=False)  # ends the watcher of the link let go
    _checking: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopped: bool = field(default=False, repr=False)
    # the port the owner asked for (--port, http.port), 0: none; self.port is the one served
    asked_port: int = field(default=0, init=False)
    port_refused: str = field(default="", init=False)  # why the owner's restart could not take it

    def __post_init__(self) -> None:
        self.asked_port = self.port

    def port_not_applied(self) -> str:
        """The owner's word when the port asked for is not the one served: the vault's
        resident already served HTTP on another from before, and it is not stopped under the
        clients that may use it. "" when the asked port is served (or none was asked)."""
        asked, served = self.asked_port, self.port
        if not asked or self.url is None or served == asked:
            return ""
        if self.port_refused:
            return (
                f"{self.asked_by} {asked} was not applied: {self.port_refused}. "
                f"The server was restarted on port {served}, where its clients were."
            )
        return (
            f"{self.asked_by} {asked} was not applied: this vault's server was already "
            f"running on port {served} from before, and clients may be using it. "
            f"Press R to restart it on port {asked} (clients on {served} must move), "
            f"or quit, run `vaultwatch-server stop --vault {self.root}` and start again."
        )

    @property
    def token_file(self) -> Path:
        return state_dir(self.root) / "token"

    @property
    def token(self) -> str:
        return read_state(self.token_file, 4096).decode("utf-8").strip()

    def start(self, timeout: float = 60) -> str:
        self.phase = "starting"
        try:
            url = self._start_on_a_port(timeout)
        except RuntimeError as exc:
            self.phase, self.why = "failed", str(exc)
            raise
        self.phase = "up"
        return url

    def _start_on_a_port(self, timeout: float) -> str:
        if self.port:
            return self._start(timeout)
        self.port = remembered_port(self.root)
        if self.port:
            try:
                return self._start(timeout)
            except RuntimeError:  # taken by another program since: a new one, remembered
                self.port = 0
        url = self._start(timeout)
        remember_port(self.root, self.port)
        return url

    def _spawn(self, root: Path, sdir: Path) -> subprocess.Popen[bytes]:
        """The resident as this dashboard's child: its own process group (stopping it stops what
        it started; the terminal's ^C and hangup miss it, so it outlives the dashboard for its
        other clients), messages in its log. Not its own session: a lone process in a session
        of its own waits longer for a core under load (Linux autogroups; see resident_start.spawn_resident)."""
        if self._stopped:  # the dashboard quit while this start was on its way
            raise Unusable("vaultwatch-server was stopped before it started")
        log = open_state(sdir / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            self.proc = subprocess.Popen(
                [self.python, "-m", "server.protocol.resident", "--vault", str(root)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                process_group=0,
            )
        finally:
            os.close(log)
        if self._stopped:  # stop() ran between the check above and Popen: this child too
            self._kill()
            raise Unusable("vaultwatch-server was stopped before it started")
        return self.proc

    def _start(self, timeout: float) -> str:
        if self._stopped:
            raise RuntimeError("vaultwatch-server was stopped before it started")
        sdir = make_state_dir(state_dir(self.root))
        ask = {
            "vaultwatch": "dashboard",
            "pid": os.getpid(),
            "http": f"127.0.0.1:{self.port}",
            # the owner's desk runs for a while: recall (health's near-duplicates) gets ready
            # in a dashboard-only session too, not only once Claude has made a call
            "index_now": True,
        }
        try:
            link = open_link(self.root, ask, spawn=self._spawn, wait=timeout)
            assert link is not None
            answer = json.loads(read_line(link.sock, link.rest, timeout))
        except (Unusable, OSError, ValueError) as exc:
            self._kill()
            tail = log_tail(sdir, 5)
            raise RuntimeError(f"vaultwatch-server did not start: {exc}. {tail}".strip()) from None
        if self._stopped:
            link.sock.close()
            raise RuntimeError("vaultwatch-server was stopped before it started")
        if answer.get("error") or not answer.get("url"):
            link.sock.close()
            raise RuntimeError(str(answer.get("error") or "the server serves no HTTP"))
        self.stderr_tail = [*self.stderr_tail[-50:], *str(answer.get("said", "")).splitlines()]
        self.url = str(answer["url"])
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        self.pid = int(answer.get("pid") or 0) or None
        self._link = link.sock
        self._watch(link.sock)
        return self.url

    def _watch(self, link: socket.socket) -> None:
        """A thread that waits (no polling) for `link` to become readable: the resident closed
        it (died, was killed) or wrote its last word (it stops). Then `restarting` is set and
        `on_down` called; `check` does the restart. Letting the link go (`_unwatch`) ends it."""
        self._unwatch()
        wake_r, self._wake = os.pipe()
        fd = link.fileno()

        def wait() -> None:
            try:
                ready, _, _ = select.select([fd, wake_r], [], [])
            except (OSError, ValueError):  # the link closed under it: let go, not down
                return
            finally:
                os.close(wake_r)
            if wake_r in ready or self._link is not link or self._stopped:
                return
            self.restarting = True
            if self.on_down is not None:
                self.on_down()

        threading.Thread(target=wait, name="vaultwatch-server-watch", daemon=True).start()

    def _unwatch(self) -> None:
        """End the watcher of the current link before the link is let go on purpose."""
        wake, self._wake = self._wake, None
        if wake is not None:
            with contextlib.suppress(OSError):  # the watcher already ended (it saw the link go)
                os.write(wake, b"x")
            os.close(wake)

    @property
    def alive(self) -> bool:
        """Attached to a resident that runs: the link is open (a resident that dies or stops
        closes it; a line on it is the resident saying it stops)."""
        link = self._link
        if link is None:
            return False
        try:
            link.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True  # nothing to read: attached and quiet
        except OSError:
            return False
        return False  # closed, or the resident's word that it stops

    def check(self) -> bool:
        """Restart the server if it died. Returns True when it had to (the UI says so)."""
        with self._checking:  # two polls must not both see it dead and start two servers
            if self._link is None or self.alive:
                self.restarting = False
                return False
            self.restarting = True
            try:
                self._unwatch()
                self._link.close()
                self._link = None
                if self.proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self.proc.wait(5)
                    self.last_exit = self.proc.returncode
                else:
                    self.last_exit = None  # another client's relay started it: not ours to reap
                self.restarts += 1
                self._start(60)
            finally:
                self.restarting = False
            return True

    def clients(self) -> list[str]:
        """The clients attached to the resident now (name/version), the dashboard aside."""
        if self._link is None:
            return []
        try:
            status = ask(self.root, "status")
        except (Unusable, OSError, ValueError):
            return []
        attached = (status or {}).get("clients", [])
        return [str(c.get("name") or "?") for c in attached if c.get("kind") == "client"]

    def restart(self, timeout: float = 60) -> str:
        """Stop the resident and start a new one (the owner asked): the relays attached
        reconnect to the new one, and the calls they had in flight get an error."""
        with self._checking:
            self._unwatch()  # the owner's restart: not a server that went down
            with contextlib.suppress(Unusable, OSError, ValueError):
                ask(self.root, "stop", reason="restart")
            if self._link is not None:
                self._link.close()
                self._link = None
            self._wait_gone(self.pid, timeout)
            self.restarts += 1
            # the owner's restart applies the port asked for (the one served until now may
            # have been an older resident's); a restart after a death keeps the served one
            served = self.port
            if self.asked_port and self.asked_port != served:
                self.port = self.asked_port
                try:
                    return self._start(timeout)
                except RuntimeError as exc:  # taken meanwhile: back where its clients were
                    self.port_refused = str(exc).splitlines()[-1] if str(exc) else "refused"
                    self.port = served
            return self._start(timeout)

    def stop(self, timeout: float = 10, *, end_resident: bool = False) -> None:
        """The dashboard quits: a start still on its way gives up; a running resident is let go
        (it serves its other clients, and exits after its quiet period when none is left).
        `end_resident`: it is stopped and waited for (the demo removes its vault next, and a
        resident still writing its state there would leave files behind)."""
        self._stopped = True
        self._unwatch()
        if end_resident:
            with contextlib.suppress(Unusable, OSError, ValueError):
                ask(self.root, "stop", reason="the dashboard quit")
            pid = self.pid
            if self._link is not None:
                self._link.close()
                self._link = None
            self._wait_gone(pid, timeout)
        if self._link is not None:
            self._link.close()
            self._link = None
        elif self.proc is not None and self.url is None:
            self._kill(timeout)

    def _wait_gone(self, pid: int | None, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while pid and pid_alive(pid) and time.monotonic() < deadline:
            if self.proc is not None and self.proc.pid == pid:
                self.proc.poll()  # our child: reaped, or it stays a zombie that looks alive
            time.sleep(0.02)

    def _kill(self, timeout: float = 10) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout)


def snippets(root: Path, url: str, server_command: str | None = None) -> dict[str, str]:
    """Ready-to-paste ways to connect a client to this vault. The token itself is never in
    them: the shell reads it from its file, and the JSON entries name an environment variable."""
    token_file = state_dir(root) / "token"
    cmd = server_command or str(Path(sys.executable).parent / "vaultwatch-server")
    return {
        "Claude Code (HTTP, this server)": claude_mcp_add_http(url, token_file),
        # the .mcp.json entry names the variable; this puts the token in it (the shell that
        # starts the client must have run it)
        "Export the token for the .mcp.json entry (shell)": (
            f'export VAULTWATCH_TOKEN="$(cat {shlex.quote(str(token_file))})"'
        ),
        ".mcp.json entry (HTTP; export VAULTWATCH_TOKEN first)": json.dumps(
            {
                "mcpServers": {
                    "vaultwatch": {
                        "type": "http",
                        "url": url,
                        "headers": {"Authorization": "Bearer ${VAULTWATCH_TOKEN}"},
                    }
                }
            },
            indent=2,
        ),
        "Claude Desktop (stdio, same vault)": json.dumps(
            {"mcpServers": {"vaultwatch": {"command": cmd, "args": ["--vault", str(root)]}}},
            indent=2,
        ),
    }


def connect_notes(root: Path, url: str, demo: bool = False) -> list[str]:
    """What the Connect dialog says around the snippets: whether the URL lasts (a demo's does
    not: every `--demo` is a new vault), and how to copy when the terminal's clipboard does
    not take it."""
    from server.notes.config import ConfigError, load_config

    try:
        pinned = load_config(root).http_port
    except ConfigError:
        pinned = None
    port = url.rsplit(":", 1)[-1].split("/")[0]
    if demo:
        lasting = (
            f"Port {port} serves this demo only: each --demo run is a new vault, "
            "removed on quit unless --keep."
        )
    elif pinned:
        lasting = f"Port {port} is set by http.port in vault.config.yaml."
    else:
        where = port_file(root).relative_to(root)
        lasting = (
            f"Port {port} is kept for this vault across launches ({where}); "
            "set http.port in vault.config.yaml to choose another."
        )
    return [
        f"Server: {url}. {lasting}",
        "Copying goes through the terminal (OSC 52). Under tmux the clipboard may not receive it "
        "unless tmux has `set -g set-clipboard on`; otherwise select the text with the mouse "
        "(shift+drag in tmux) and copy it by hand.",
    ]
