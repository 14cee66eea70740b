"""`vaultwatch-server status` and `stop`: a control request to the running resident (never
starting one), its answer described, and the wait for a stopped one to be gone.

Standard library only: the relay imports it (see server/protocol/resident_socket.py)."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from server.core.pids import pid_alive
from server.protocol.resident_link import open_link, read_line
from server.protocol.resident_socket import Unusable


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

    # a zombie (our own child, not yet reaped) has stopped serving
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    return True
