"""The dashboard's own vault server: a `vaultwatch-server --http` child on 127.0.0.1, restarted
on the same port if it dies, stopped (never orphaned) when the dashboard exits; and the
snippets that connect clients to it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from server.core.gitrepo import state_dir
from server.protocol.connect import claude_mcp_add_http

URL_LINE = re.compile(r"at (http://\S+/mcp)")


def port_file(root: Path) -> Path:
    return state_dir(root) / "port"


def remembered_port(root: Path) -> int:
    """The port this vault's dashboard served on last time (0: none), so a `claude mcp add`
    line copied once keeps working across launches."""
    try:
        port = int(port_file(root).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return 0
    return port if 0 < port < 65536 else 0


def remember_port(root: Path, port: int) -> None:
    with contextlib.suppress(OSError):  # a read-only .git only costs the memory
        port_file(root).parent.mkdir(parents=True, exist_ok=True)
        port_file(root).write_text(f"{port}\n", encoding="utf-8")


@dataclass
class ServerSupervisor:
    root: Path
    # 0: the port remembered from the last launch (else any free one, then remembered); the
    # same one on every restart. A port from --port or the config's http.port is used as given.
    port: int = 0
    python: str = sys.executable
    proc: subprocess.Popen[str] | None = None
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
    _checking: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def token_file(self) -> Path:
        return state_dir(self.root) / "token"

    @property
    def token(self) -> str:
        return self.token_file.read_text(encoding="utf-8").strip()

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

    def _start(self, timeout: float) -> str:
        if self._stopped:  # the dashboard quit while this start was on its way
            raise RuntimeError("vaultwatch-server was stopped before it started")
        cmd = [
            self.python,
            "-m",
            "server.protocol.cli",
            "--vault",
            str(self.root),
            "--http",
            f"127.0.0.1:{self.port}",
            "--exit-with-parent",
            # the owner's desk runs for a while: recall (health's near-duplicates) gets ready
            # in a dashboard-only session too, not only once Claude has made a call
            "--index-now",
        ]
        # its own process group, so stopping it also stops anything it started
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        p = self.proc
        if self._stopped:  # stop() ran between the check above and Popen: this child too
            self._kill()
            raise RuntimeError("vaultwatch-server was stopped before it started")
        found = threading.Event()

        def follow(p: subprocess.Popen[str]) -> None:
            assert p.stderr is not None
            for line in p.stderr:
                self.stderr_tail = [*self.stderr_tail[-50:], line.rstrip("\n")]
                m = URL_LINE.search(line)
                if m and not found.is_set():
                    self.url = m.group(1)
                    self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])
                    found.set()

        threading.Thread(target=follow, args=(p,), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.05):
            if self.proc is not p:  # stopped meanwhile (the dashboard quit)
                raise RuntimeError("vaultwatch-server was stopped before it started")
            if p.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(self.stderr_tail[-5:])
                self._kill()
                raise RuntimeError(f"vaultwatch-server did not start: {tail}")
        assert self.url is not None
        return self.url

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check(self) -> bool:
        """Restart the server if it died. Returns True when it had to (the UI says so)."""
        with self._checking:  # two polls must not both see it dead and start two servers
            if self.proc is None or self.alive:
                self.restarting = False
                return False
            self.restarting = True
            try:
                self.last_exit = self.proc.returncode
                self.restarts += 1
                self._start(60)
            finally:
                self.restarting = False
            return True

    def stop(self, timeout: float = 10) -> None:
        """Stop the child for good: a start still on its way gives up (the dashboard quit)."""
        self._stopped = True
        self._kill(timeout)

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


def connect_notes(root: Path, url: str) -> list[str]:
    """What the Connect dialog says around the snippets: whether the URL lasts, and how to copy
    when the terminal's clipboard does not take it."""
    from server.notes.config import ConfigError, load_config

    try:
        pinned = load_config(root).http_port
    except ConfigError:
        pinned = None
    port = url.rsplit(":", 1)[-1].split("/")[0]
    if pinned:
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
