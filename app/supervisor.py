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

from server.gitrepo import state_dir

URL_LINE = re.compile(r"at (http://\S+/mcp)")


@dataclass
class ServerSupervisor:
    root: Path
    port: int = 0  # 0: any free port the first time, then the same one on every restart
    python: str = sys.executable
    proc: subprocess.Popen[str] | None = None
    url: str | None = None
    restarts: int = 0
    last_exit: int | None = None
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
            url = self._start(timeout)
        except RuntimeError as exc:
            self.phase, self.why = "failed", str(exc)
            raise
        self.phase = "up"
        return url

    def _start(self, timeout: float) -> str:
        if self._stopped:  # the dashboard quit while this start was on its way
            raise RuntimeError("vaultwatch-server was stopped before it started")
        cmd = [self.python, "-m", "server.cli", "--vault", str(self.root), "--http",
               f"127.0.0.1:{self.port}", "--exit-with-parent"]  # fmt: skip
        # its own process group, so stopping it also stops anything it started
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
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
                return False
            self.last_exit = self.proc.returncode
            self.restarts += 1
            self.start()
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
        "Claude Code (HTTP, this server)": (
            f"claude mcp add --transport http vaultwatch {url} --header "
            f'"Authorization: Bearer $(cat {shlex.quote(str(token_file))})"'
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
