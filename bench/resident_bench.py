"""One resident server per vault vs. a server per client, side by side in one run.

`uv run python -m bench --only resident` (2,000 and 10,000 notes), or alone:
`uv run python -m bench.resident_bench --vault PATH [--runs 3]`; where a warm call's time goes,
hop by hop, in both modes: `uv run python -m bench.resident_bench --vault PATH --hops 100`.

Per vault, for today's in-process mode (`python -m server.protocol.cli`: what every client
spawned before) and for the relay (`vaultwatch-server`, the resident already warm):
spawn → `initialize`; spawn → the first `list_docs` / `search_text` result; a warm call's
latency through the relay vs. direct, paired (both open, calls alternated); the memory of three clients on one vault (three servers,
or three relays and one resident); and the in-process start without compiled bytecode (every
module compiled at start, as after an install that did not compile: PYTHONPYCACHEPREFIX
pointing at an empty folder). Recall is off (VAULTWATCH_SEMANTIC=off): its model would only
add the same ~150 MB to each in-process server. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from server.protocol.resident_control import ask, pid_alive

from .startup_bench import StdioServer, cpu_s
from .stats import ms, pct

RELAY = str(Path(sys.executable).parent / "vaultwatch-server")
START_WAIT = 120.0
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


def load_avg() -> float:
    return os.getloadavg()[0]


def warm_calls(
    vault: Path, cmds: dict[str, list[str]], env: dict[str, str], n: int = 60, rounds: int = 3
) -> dict[str, float]:
    """A warm call's wall time, in-process vs. through the relay, measured PAIRED: both
    servers are open at once and each round calls one then the other (in a random order), so
    both see the same load; measured one mode after the other, the load of a shared box moved
    between them by more than the relay costs (it was reported as +8 to +32 ms). Per mode: the
    median and p95 of every call, the median of each round's median, and the CPU per call of
    the server's processes (the relay's and the resident's together). The load average is
    taken at the start and end."""
    import random

    rng = random.Random(7)
    servers = {mode: Spawned(vault, cmd, env) for mode, cmd in cmds.items()}
    try:
        for s in servers.values():
            s.request("initialize", INIT)
            s.notify("notifications/initialized")
        args = FIRST["list_docs"]
        for s in servers.values():
            for _ in range(5):  # warm: caches, the SDK's first-call paths, the resident's
                s.call("list_docs", args)
        status = ask(vault, "status")
        pids = {
            "in-process": [servers["in-process"].proc.pid],
            "relay": [servers["relay"].proc.pid] + ([int(status["pid"])] if status else []),
        }
        load0 = load_avg()
        cpu0 = {m: sum(cpu_s(p) for p in ps) for m, ps in pids.items()}
        samples: dict[str, list[float]] = {m: [] for m in servers}
        medians: dict[str, list[float]] = {m: [] for m in servers}
        diffs: list[float] = []  # relay - in-process, per pair
        for _ in range(rounds):
            got: dict[str, list[float]] = {m: [] for m in servers}
            for _ in range(n):
                order = list(servers)
                rng.shuffle(order)
                pair: dict[str, float] = {}
                for m in order:
                    t = time.perf_counter()
                    servers[m].call("list_docs", args)
                    pair[m] = time.perf_counter() - t
                    got[m].append(pair[m])
                diffs.append(pair["relay"] - pair["in-process"])
            for m in servers:
                samples[m] += got[m]
                medians[m].append(statistics.median(got[m]))
        calls = n * rounds
        out: dict[str, float] = {"warm_load_start": load0, "warm_load_end": load_avg()}
        for m in servers:
            cpu = (sum(cpu_s(p) for p in pids[m]) - cpu0[m]) / calls
            out[f"{m}_warm_call"] = statistics.median(samples[m])
            out[f"{m}_warm_p95"] = pct(samples[m], 0.95)
            out[f"{m}_warm_best"] = min(samples[m])
            out[f"{m}_warm_cpu"] = cpu
            for i, v in enumerate(medians[m]):
                out[f"{m}_warm_round{i + 1}"] = v
        out["warm_pair_diff_median"] = statistics.median(diffs)
        out["warm_pair_diff_p95"] = pct(diffs, 0.95)
        return out
    finally:
        for s in servers.values():
            s.close()


HOPS = {
    "in-process": ["client.write", "server.tool_start", "server.tool_end", "client.read"],
    "relay": [
        "client.write",
        "relay.stdin_read",
        "relay.sock_sent",
        "resident.sock_readline",
        "resident.tool_start",
        "resident.tool_end",
        "resident.sock_write",
        "relay.sock_recv",
        "relay.stdout_written",
        "client.read",
    ],
}


def traced(role: str, trace: str, argv: list[str]) -> None:
    """Run the in-process server ("server"), the relay or the resident with a timestamp
    (CLOCK_MONOTONIC, one clock for every process) written to `trace` at each hop a call
    takes: the relay's read of stdin, its send on the socket, the resident's read of it, the
    tool's start and end (the SDK runs it on a worker thread), the resident's write, the
    relay's read of it and its write to stdout. Patched here, so the shipped code carries no
    tracing."""
    import asyncio
    import socket

    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

    fd = os.open(trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def mark(tag: str) -> None:
        os.write(fd, f"{time.monotonic_ns()} {role}.{tag}\n".encode())

    call_fn = FuncMetadata.call_fn

    async def timed_call_fn(self: Any, *a: Any, **k: Any) -> Any:
        mark("tool_start")
        try:
            return await call_fn(self, *a, **k)
        finally:
            mark("tool_end")

    FuncMetadata.call_fn = timed_call_fn  # type: ignore[method-assign]
    if role == "relay":
        from server.protocol import relay, relay_pump

        os_read, sock_recv, send, write_all = (
            os.read,
            socket.socket.recv,
            relay_pump.Relay.send,
            relay_pump.write_all,
        )

        def read(f: int, n: int) -> bytes:
            data = os_read(f, n)
            if f == 0:
                mark("stdin_read")
            return data

        def recv(self: socket.socket, n: int, *a: Any) -> bytes:
            data = sock_recv(self, n, *a)
            mark("sock_recv")
            return data

        def sent(self: relay_pump.Relay, line: bytes) -> None:
            send(self, line)
            mark("sock_sent")

        def written(data: bytes) -> bool:
            ok = write_all(data)
            mark("stdout_written")
            return ok

        os.read = read
        socket.socket.recv = recv  # type: ignore[method-assign,assignment]
        relay_pump.Relay.send = sent  # type: ignore[method-assign]
        relay_pump.write_all = written
        relay.main(argv)
    elif role == "resident":
        from server.protocol import resident

        readline, write = asyncio.StreamReader.readline, asyncio.StreamWriter.write

        async def timed_readline(self: asyncio.StreamReader) -> bytes:
            line = await readline(self)
            mark("sock_readline")
            return line

        def timed_write(self: asyncio.StreamWriter, data: Any) -> None:
            mark("sock_write")
            write(self, data)

        asyncio.StreamReader.readline = timed_readline  # type: ignore[method-assign]
        asyncio.StreamWriter.write = timed_write  # type: ignore[method-assign]
        resident.main(argv)
    else:
        from server.protocol.cli import main as serve

        serve(argv)


def hops(vault: Path, n: int = 100) -> dict[str, list[float]]:
    """Where a warm call's wall time goes, hop by hop, in both modes (alternated, so both see
    the same load): the median and p95 of each hop, printed; the samples returned."""
    import subprocess

    env = {**os.environ, "VAULTWATCH_SEMANTIC": "off", "VAULTWATCH_RESIDENT_IDLE_S": "300"}
    env.pop("VAULTWATCH_RESIDENT", None)
    stop_resident(vault)
    with tempfile.TemporaryDirectory() as tmp:
        trace = str(Path(tmp) / "trace")
        me = [sys.executable, "-m", "bench.resident_bench", "--traced"]
        resident = subprocess.Popen(
            [*me, "resident", trace, "--vault", str(vault)],
            env=env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            process_group=0,  # as a relay starts it (resident_start.spawn_resident)
        )
        deadline = time.monotonic() + START_WAIT
        while ask(vault, "status") is None:
            if time.monotonic() > deadline or resident.poll() is not None:
                raise RuntimeError(f"the traced resident did not start ({resident.poll()})")
            time.sleep(0.05)
        cmds = {
            "in-process": [*me, "server", trace, "--vault", str(vault)],
            "relay": [*me, "relay", trace, "--vault", str(vault)],
        }
        servers = {m: Spawned(vault, cmd, env) for m, cmd in cmds.items()}
        fd = os.open(trace, os.O_WRONLY | os.O_APPEND)
        windows: dict[str, list[tuple[int, int]]] = {m: [] for m in servers}
        try:
            for s in servers.values():
                s.request("initialize", INIT)
                s.notify("notifications/initialized")
                for _ in range(5):
                    s.call("list_docs", FIRST["list_docs"])
            load0 = load_avg()
            for i in range(n):
                for m in sorted(servers, reverse=bool(i % 2)):
                    t0 = time.monotonic_ns()
                    os.write(fd, f"{t0} client.write\n".encode())
                    servers[m].call("list_docs", FIRST["list_docs"])
                    t1 = time.monotonic_ns()
                    os.write(fd, f"{t1} client.read\n".encode())
                    windows[m].append((t0, t1))
        finally:
            for s in servers.values():
                s.close()
            stop_resident(vault)
            resident.wait(30)
        events = sorted(
            (int(t), tag.strip())
            for t, tag in (line.split(" ", 1) for line in Path(trace).read_text().splitlines())
        )
    print(f"  hop by hop, {n} warm list_docs calls per mode, load {load0:.1f} -> {load_avg():.1f}")
    out: dict[str, list[float]] = {}
    for m, seq in HOPS.items():
        hop_ms: dict[str, list[float]] = {}
        for t0, t1 in windows[m]:
            seen: dict[str, int] = {}
            for t, tag in events:
                if t0 <= t <= t1:
                    seen.setdefault(tag, t)
            seen["client.write"], seen["client.read"] = t0, t1
            have = [h for h in seq if h in seen]
            for a, b in itertools.pairwise(have):
                hop_ms.setdefault(f"{a} -> {b}", []).append((seen[b] - seen[a]) / 1e9)
            hop_ms.setdefault("total", []).append((t1 - t0) / 1e9)
        print(f"  {m}:")
        for hop, v in hop_ms.items():
            print(f"    {hop:<50} median {ms(statistics.median(v)):>9}  p95 {ms(pct(v, 0.95)):>9}")
            out[f"{m}: {hop}"] = v
    return out


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
    res.update(warm_calls(vault, cmds, env))
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
    print(
        f"  warm list_docs calls, paired (both open, alternated), load "
        f"{r['warm_load_start']:.1f} -> {r['warm_load_end']:.1f}:"
    )
    row("  median", "warm_call")
    row("  p95", "warm_p95")
    row("  best", "warm_best")
    rounds = sorted(k for k in r if k.startswith("relay_warm_round"))
    for k in rounds:
        row(f"  round {k.removeprefix('relay_warm_round')} median", k.removeprefix("relay_"))
    row("  CPU per call", "warm_cpu")
    for label, extra in (
        ("relay - direct, median", r["relay_warm_call"] - r["in-process_warm_call"]),
        ("relay - direct, p95", r["relay_warm_p95"] - r["in-process_warm_p95"]),
        ("relay - direct, per pair median", r["warm_pair_diff_median"]),
        ("relay - direct, per pair p95", r["warm_pair_diff_p95"]),
        ("relay - direct, CPU", r["relay_warm_cpu"] - r["in-process_warm_cpu"]),
    ):
        print(f"  {'  ' + label:<34} {ms(extra):>22}  (target <= +5 ms)")
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
    if sys.argv[1:2] == ["--traced"]:  # a server of hops(): role, trace file, its arguments
        traced(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    ap = argparse.ArgumentParser(prog="python -m bench.resident_bench")
    ap.add_argument("--vault", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hops", type=int, default=0, help="only trace N warm calls hop by hop")
    args = ap.parse_args()
    vault = Path(args.vault).expanduser().absolute()
    if args.hops:
        hops(vault, args.hops)
    else:
        run(vault, args.runs)


if __name__ == "__main__":
    main()
