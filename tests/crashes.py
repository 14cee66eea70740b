"""Writes killed on purpose, for the crash tests: the real write path in a forked child that a
fault hook kills at a named step, and the real stdio server killed inside a tool call. A helper
module, not a test module: test modules import from here, never from each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.types import LATEST_PROTOCOL_VERSION

from server.core.faults import FAULT_ENV
from server.services.writes import apply
from server.vault import Vault

from .conftest import REPO
from .servers import client_env


def ai_write(
    root: Path, tool: str, ops: list[tuple[str, dict[str, Any]]], msg: str | None = None
) -> None:
    """The AI's write `tool` of `ops` through the real write path (no server)."""
    vault = Vault(root)
    try:
        apply(vault, vault.store, tool, "crash-matrix", ops, msg)
    finally:
        vault.close()


def run_child(root: Path, fault: str, action: Callable[[Path], object]) -> int:
    """Run `action` on `root` in a forked process with VAULTWATCH_FAULT=`fault`; its wait
    status. A child that raises exits 3 with the traceback on stderr."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.environ[FAULT_ENV] = fault
            action(root)
        except BaseException:
            traceback.print_exc()
            code = 3
        finally:
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def _rpc(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def call_until_killed(root: Path, fault: str, calls: list[tuple[str, dict[str, Any]]]) -> int:
    """Start the real stdio server with VAULTWATCH_FAULT=`fault`, make `calls` in turn (plain
    JSON-RPC: the server is expected to die in the last one, and a client library may wait
    forever for that answer) and return how the server ended."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.protocol.cli", "--vault", str(root)],
        cwd=REPO,
        env=client_env(VAULTWATCH_FAULT=fault),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        hello = {"name": "crash-test", "version": "1"}
        params = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}}
        _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {**params, "clientInfo": hello},
            },
        )
        line = proc.stdout.readline()
        assert b'"id":0' in line.replace(b" ", b""), line
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n, (tool, args) in enumerate(calls, 1):
            _rpc(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": args},
                },
            )
            if n < len(calls):
                line = proc.stdout.readline()
                assert b'"isError":false' in line.replace(b" ", b""), line
        answer = proc.stdout.read()  # until the server's end closes its stdout
        assert b'"id":%d' % len(calls) not in answer.replace(b" ", b""), answer
        return proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
