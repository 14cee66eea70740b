"""One resident server per vault vs. a server per client, side by side in one run.

`uv run python -m bench --only resident` (2,000 and 10,000 notes), or alone:
`uv run python -m bench.resident_bench --vault PATH [--runs 3]`.

Per vault, for today's in-process mode (`python -m server.protocol.cli`: what every client
spawned before) and for the relay (`vaultwatch-server`, the resident already warm):
spawn → `initialize`; spawn → the first `list_docs` / `search_text` result; a warm call's
latency through the relay vs. direct; the memory of three clients on one vault (three servers,
or three relays and one resident); and the in-process start without compiled bytecode (every
module compiled at start, as after an install that did not compile: PYTHONPYCACHEPREFIX
pointing at an empty folder). Recall is off (VAULTWATCH_SEMANTIC=off): its model would only
add the same ~150 MB to each in-process server. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from server.protocol.relay import ask, pid_alive

from .startup_bench import StdioServer, cpu_s
from .stats import ms

RELAY = str(Path(sys.executable).parent / "vaultwatch-server")
FIRST: dict[str, dict[str, Any]] = {
    "list_docs": {"type": "session", "sort": "-date", "limit": 20},
    "search_text": {"query": "consensus"},
}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


class Spawned(StdioServer):
    """A stdio server of either mode, spawned with the bench's environment."""

    def __init__(self, vault: Path, cmd: list[str], env: dict[str, str]) -> None:
        import subprocess

        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._id = 0

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        r = self.request("tools/call", {"name": name, "arguments": args})
        if "error" in r or r["result"].get("isError"):
            raise RuntimeError(f"{name} failed: {str(r)[:300]}")
        return r


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def commands(vault: Path) -> dict[str, list[str]]:
    return {
        "in-process": [sys.executable, "-m", "server.protocol.cli", "--vault", str(vault)],
        "relay": [RELAY, "--vault", str(vault)],
    }


def start(vault: Path, cmd: list[str], env: dict[str, str], first: str | None) -> dict[str, float]:
    s = Spawned(vault, cmd, env)
    out: dict[str, float] = {}
    try:
        s.request("initialize", INIT)
        out["initialize"] = time.perf_counter() - s.t0
        out["initialize_cpu"] = cpu_s(s.proc.pid)
        s.notify("notifications/initialized")
        if first:
            s.call(first, FIRST[first])
            out[first] = time.perf_counter() - s.t0
    finally:
        s.close()
    return out


def warm_calls(vault: Path, cmd: list[str], env: dict[str, str], n: int = 60) -> dict[str, float]:
    """A warm call's wall time (median and best: on a loaded machine the median is mostly the
    wait for a core, which a relay adds one more process to) and the CPU it costs the server's
    processes (the relay's and the resident's together)."""
    s = Spawned(vault, cmd, env)
    try:
        s.request("initialize", INIT)
        s.notify("notifications/initialized")
        args = FIRST["list_docs"]
        s.call("list_docs", args)
        status = ask(vault, "status") if cmd[0] == RELAY else None
        pids = [s.proc.pid] + ([int(status["pid"])] if status else [])
        cpu0 = sum(cpu_s(p) for p in pids)
        out = []
        for _ in range(n):
            t = time.perf_counter()
            s.call("list_docs", args)
            out.append(time.perf_counter() - t)
        cpu = (sum(cpu_s(p) for p in pids) - cpu0) / n
        return {"warm_call": statistics.median(out), "warm_best": min(out), "warm_cpu": cpu}
    finally:
        s.close()


def three_clients(vault: Path, cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """RSS of three clients' servers on one vault after each ran a search: three processes
    in-process; three relays plus the one resident through the relay."""
    servers = [Spawned(vault, cmd, env) for _ in range(3)]
    try:
        for s in servers:
            s.request("initialize", INIT)
            s.notify("notifications/initialized")
            s.call("search_text", FIRST["search_text"])
            s.call("list_docs", FIRST["list_docs"])
        spawned = sum(rss_mb(s.proc.pid) for s in servers)
        status = ask(vault, "status") if cmd[0] == RELAY else None
        resident = rss_mb(int(status["pid"])) if status else 0.0
        return {"spawned_mb": spawned, "resident_mb": resident, "total_mb": spawned + resident}
    finally:
        for s in servers:
            s.close()


def stop_resident(vault: Path) -> None:
    answer = ask(vault, "stop")
    pid = int((answer or {}).get("pid", 0))
    deadline = time.monotonic() + 30
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def run(vault: Path, runs: int = 3) -> dict[str, float]:
    env = {**os.environ, "VAULTWATCH_SEMANTIC": "off", "VAULTWATCH_RESIDENT_IDLE_S": "300"}
    env.pop("VAULTWATCH_RESIDENT", None)
    cmds = commands(vault)
    stop_resident(vault)
    res: dict[str, float] = {}
    # caches current for both; the resident started and warm (its index loaded)
    start(vault, cmds["in-process"], env, "search_text")
    t = time.perf_counter()
    start(vault, cmds["relay"], env, "search_text")
    res["resident_cold_start"] = time.perf_counter() - t
    for mode, cmd in cmds.items():
        for first in (None, "list_docs", "search_text"):
            got = [start(vault, cmd, env, first) for _ in range(runs)]
            key = first or "initialize"
            res[f"{mode}_{key}"] = statistics.median(g[key] for g in got)
            if first is None:
                res[f"{mode}_initialize_cpu"] = statistics.median(g["initialize_cpu"] for g in got)
    for mode, cmd in cmds.items():
        for k, v in warm_calls(vault, cmd, env).items():
            res[f"{mode}_{k}"] = v
    for mode, cmd in cmds.items():
        for k, v in three_clients(vault, cmd, env).items():
            res[f"{mode}_three_{k}"] = v
    with tempfile.TemporaryDirectory() as empty:
        raw = {**env, "PYTHONPYCACHEPREFIX": empty, "PYTHONDONTWRITEBYTECODE": "1"}
        for mode, cmd in cmds.items():
            got = [start(vault, cmd, raw, None) for _ in range(runs)]
            res[f"{mode}_initialize_uncompiled"] = statistics.median(g["initialize"] for g in got)
    stop_resident(vault)
    report(res)
    return res


def report(r: dict[str, float]) -> None:
    def row(label: str, key: str, target: float | None = None, *, unit: str = "ms") -> None:
        a, b = r[f"in-process_{key}"], r[f"relay_{key}"]
        show = (lambda v: f"{v:7.0f} MB") if unit == "MB" else (lambda v: f"{ms(v):>10}")
        ratio = f"{b / a:5.2f}x" if a else "  -  "
        goal = f"  (target <= {target:g}x)" if target else ""
        print(f"  {label:<34} {show(a)}  {show(b)}  {ratio}{goal}")

    print(f"  {'':<34} {'in-process':>10}  {'relay':>10}")
    row("spawn -> initialize", "initialize", 0.1)
    row("  CPU of the spawned process", "initialize_cpu")
    row("spawn -> first list_docs result", "list_docs", 0.15)
    row("spawn -> first search_text result", "search_text", 0.15)
    row("warm list_docs call, median", "warm_call")
    row("warm list_docs call, best", "warm_best")
    row("  CPU per warm call", "warm_cpu")
    for what in ("call", "best", "cpu"):
        extra = ms(r[f"relay_warm_{what}"] - r[f"in-process_warm_{what}"])
        print(f"  {'  relay - direct, ' + what:<34} {extra:>22}  (target <= +5 ms)")
    row("spawn -> initialize, no bytecode", "initialize_uncompiled")
    print(
        f"  three clients, RSS: in-process {r['in-process_three_total_mb']:.0f} MB "
        f"(3 servers); relay {r['relay_three_total_mb']:.0f} MB "
        f"(resident {r['relay_three_resident_mb']:.0f} MB + 3 relays "
        f"{r['relay_three_spawned_mb']:.0f} MB)"
    )
    print(
        f"  the resident's own first start (spawn -> first search): {ms(r['resident_cold_start'])}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.resident_bench")
    ap.add_argument("--vault", required=True)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    run(Path(args.vault).expanduser().absolute(), args.runs)


if __name__ == "__main__":
    main()
