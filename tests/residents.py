"""The resident server of a vault reached as a client reaches it: `vaultwatch-server` over
stdio (the relay), spoken to by hand in JSON-RPC lines, on a vault whose residents are stopped
when the test ends. A helper module, not a test module: test modules import from here, never
from each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.write.journal import read_all

from .conftest import stop_residents

SERVER = str(Path(sys.executable).parent / "vaultwatch-server")
NOTES = {f"n{i}.md": f"# N{i}\n\n## Log\n\n- first\n" for i in range(3)}


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "VAULTWATCH_SEMANTIC": "off", **extra}


class Raw:
    """A stdio client speaking JSON-RPC lines by hand to `vaultwatch-server` (every byte the
    relay passes is visible)."""

    def __init__(self, root: Path, *, cmd: list[str] | None = None, **extra: str) -> None:
        self.proc = subprocess.Popen(
            cmd or [SERVER, "--vault", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(**extra),
        )
        self.next_id = 0
        self.stderr = ""

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False
    ) -> int:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.next_id += 1
        if not notify:
            msg["id"] = self.next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def answer(self, rid: int, timeout: float = 120) -> dict[str, Any]:
        assert self.proc.stdout is not None
        got: list[dict[str, Any]] = []

        def read() -> None:
            assert self.proc.stdout is not None
            while True:
                line = self.proc.stdout.readline()
                if not line:
                    return
                msg = json.loads(line)
                if msg.get("id") == rid:
                    got.append(msg)
                    return

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(timeout)
        if not got:
            raise AssertionError(f"no answer to request {rid} in {timeout:g} s")
        return got[0]

    def initialize(self, name: str, version: str = "1.0") -> dict[str, Any]:
        rid = self.send(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": name, "version": version},
            },
        )
        out = self.answer(rid)
        self.send("notifications/initialized", notify=True)
        return out

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        return self.answer(self.send("tools/call", {"name": tool, "arguments": args}))

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rc = self.proc.wait(30)
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read().decode(errors="replace")
        return rc


@pytest.fixture
def vault(make_vault: Callable[..., Path], tmp_path: Path) -> Iterator[Path]:
    root = make_vault(NOTES)
    yield root
    stop_residents(tmp_path)


def events(root: Path) -> list[dict[str, Any]]:
    return read_all(root / ".git/vaultwatch/events.jsonl")


def started(root: Path) -> list[dict[str, Any]]:
    return [e for e in events(root) if e["kind"] == "server_started"]
