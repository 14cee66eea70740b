"""The real server as a subprocess, started as a client starts it. A helper module, not a test
module: test modules import from here, never from each other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .conftest import REPO


def server_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "server.protocol.cli", *args]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    return env


def client_env(**extra: str) -> dict[str, str]:
    """The server's environment as a client starts it: none of the test's GIT_* variables,
    the owner's global config given by `extra` (os.devnull otherwise), recall off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["VAULTWATCH_SEMANTIC"] = "off"
    return {**env, **extra}


# An MCP initialize request as a raw HTTP client (curl) sends it, and the Accept header the
# streamable HTTP transport asks of every request: for tests of what the server answers before
# any session (its token, its origin checks).
RAW_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "0"},
    },
}
MCP_ACCEPT = {"accept": "application/json, text/event-stream"}


class HttpServer:
    def __init__(self, root: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            server_cmd("--vault", str(root), "--http", "127.0.0.1:0", *extra),
            cwd=REPO,
            env=child_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", line)
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {line}{self.proc.stderr.read()}")
        else:
            raise AssertionError("server did not start")
        self.token = (root / ".git/vaultwatch/token").read_text().strip()

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(15)
