"""A new conversation's first answer: spawn a real stdio server, time `initialize` and the first
list_docs / get_context / search_text, with the derived caches current (warm) and deleted (cold).

`uv run python -m bench.startup_bench --vault PATH [--src CHECKOUT] [--runs 5]` runs it alone,
e.g. against another checkout (`--src /work/wt/base`, with that checkout's own .venv).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Everything under .git/vaultwatch that is only derived from the notes (deleting it costs time).
DERIVED = (
    "index.sqlite",
    "index.sqlite-wal",
    "index.sqlite-shm",
    "parsed.sqlite",
    "parsed.sqlite-wal",
    "parsed.sqlite-shm",
)
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_docs", {"type": "session", "sort": "-date", "limit": 20}),
    ("get_context", {}),
    ("search_text", {"query": "consensus"}),
]


class StdioServer:
    """One `vaultwatch-server` child speaking newline-delimited JSON-RPC on its pipes."""

    def __init__(self, vault: Path, src: Path) -> None:
        python = src / ".venv" / "bin" / "python"
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                str(python if python.exists() else sys.executable),
                "-m",
                "server.protocol.cli",
                "--vault",
                str(vault),
            ],
            cwd=src,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._id += 1
        msg = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited during {method}")
            reply = json.loads(line)
            if reply.get("id") == self._id:
                return dict(reply)

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far: the work itself, which on a
    shared, loaded machine says more than wall time (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_start(vault: Path, src: Path, first: str) -> dict[str, float]:
    """Spawn, initialize, then `first` as the very first tool call, then the others (warm-ish)."""
    s = StdioServer(vault, src)
    out: dict[str, float] = {}
    try:
        s.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        out["initialize"] = time.perf_counter() - s.t0
        out["initialize_cpu"] = cpu_s(s.proc.pid)
        s.notify("notifications/initialized")
        order = [c for c in CALLS if c[0] == first] + [c for c in CALLS if c[0] != first]
        for name, args in order:
            t = time.perf_counter()
            r = s.request("tools/call", {"name": name, "arguments": args})
            if "error" in r or r["result"].get("isError"):
                raise RuntimeError(f"{name} failed: {str(r)[:300]}")
            out[name if name == first else f"then_{name}"] = time.perf_counter() - t
            if name == first:
                out[f"{first}_cpu"] = cpu_s(s.proc.pid) - out["initialize_cpu"]
    finally:
        s.close()
    return out


def drop_derived(vault: Path) -> None:
    state = vault / ".git" / "vaultwatch"
    for name in DERIVED:
        (state / name).unlink(missing_ok=True)


def run(vault: Path, src: Path, runs: int = 3) -> dict[str, float]:
    """Medians over `runs` fresh processes per figure."""
    res: dict[str, float] = {}
    inits: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    one_start(vault, src, "list_docs")  # make the caches current
    for cache in ("warm", "cold"):
        for first, _ in CALLS:
            samples: list[dict[str, float]] = []
            for _ in range(runs):
                if cache == "cold":
                    drop_derived(vault)
                samples.append(one_start(vault, src, first))
            inits.setdefault(cache, []).extend(x["initialize"] for x in samples)
            res[f"{cache}_initialize_s"] = statistics.median(inits[cache])
            res[f"{cache}_first_{first}_s"] = statistics.median(x[first] for x in samples)
            cpus.setdefault(cache, []).extend(x["initialize_cpu"] for x in samples)
            res[f"{cache}_initialize_cpu_s"] = statistics.median(cpus[cache])
            res[f"{cache}_first_{first}_cpu_s"] = statistics.median(
                x[f"{first}_cpu"] for x in samples
            )
            print(
                f"  {cache} cache: spawn to initialize {statistics.median(x['initialize'] for x in samples) * 1e3:6.0f} ms;"
                f" first {first:<12} {res[f'{cache}_first_{first}_s'] * 1e3:6.0f} ms"
                f" (median of {runs}; CPU {statistics.median(x['initialize_cpu'] for x in samples) * 1e3:.0f}"
                f" + {res[f'{cache}_first_{first}_cpu_s'] * 1e3:.0f} ms)",
                flush=True,
            )
    one_start(vault, src, "list_docs")  # leave the caches current for whoever runs next
    return res


async def first_paint(vault: Path, server_first: bool) -> tuple[float, float]:
    """(first paint, server up) in seconds from the start, with a real server child: the app
    starting it after its first paint, or (`server_first`, how app/main.py did it before) the
    server started and awaited before the app runs."""
    from app.services.supervisor import ServerSupervisor
    from app.ui.dashboard import Dashboard

    t0 = time.perf_counter()
    sup = ServerSupervisor(vault)
    up = 0.0
    try:
        if server_first:
            sup.start()
            up = time.perf_counter() - t0
        app = Dashboard(vault, supervisor=sup)
        async with app.run_test(size=(160, 45)) as pilot:
            while not app.feed.rows:
                await pilot.pause(0.01)
            await pilot.pause(0)  # the frame that draws them
            paint = time.perf_counter() - t0
            while not sup.url:
                await pilot.pause(0.02)
            up = up or time.perf_counter() - t0
    finally:
        sup.stop()
    return paint, up


# A fresh `vaultwatch` process up to its first paint: the imports, the app, the first screenful
# of the timeline (the server child starts after it, as in app/main.py). Self-contained, so it
# runs against any checkout (`--src`): the checkout's folder comes first on sys.path.
PAINT_CHILD = """
import json, sys, time
from pathlib import Path
import anyio
from app.services.supervisor import ServerSupervisor
from app.ui.dashboard import Dashboard

async def paint() -> None:
    sup = ServerSupervisor(Path(sys.argv[1]))
    app = Dashboard(Path(sys.argv[1]), supervisor=sup)
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            while not app.feed.rows:
                await pilot.pause(0.01)
            await pilot.pause(0)  # the frame that draws them
            print(json.dumps({"cpu": time.process_time()}), flush=True)
    finally:
        sup.stop()

anyio.run(paint)
"""


# Compiled modules for the dashboard processes, as `uv tool install --compile-bytecode` leaves
# them (README): where PYTHONDONTWRITEBYTECODE is set and nothing was compiled (this machine's
# developer shells), each process compiled every module it imported, ~1 s of each start.
PYCACHE = Path(__file__).resolve().parent / ".cache" / "pycache"


def compiled_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(PYCACHE)}


def paint_process(vault: Path, src: Path) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning a dashboard process to its first paint, its modules
    compiled (`compiled_env`; the first run for a checkout compiles them)."""
    python = src / ".venv" / "bin" / "python"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(python if python.exists() else sys.executable), "-c", PAINT_CHILD, str(vault)],
        cwd=src,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=compiled_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    wall = time.perf_counter() - t0
    proc.wait(30)
    if not line:
        raise RuntimeError(f"the dashboard of {src} did not paint (exit {proc.returncode})")
    return wall, float(json.loads(line)["cpu"])


def dashboard_process(vault: Path, srcs: list[Path], runs: int = 5) -> dict[str, float]:
    """First paint of a new process, checkouts taken in turn run after run (a shared machine's
    load then weighs on each alike); medians."""
    got: dict[Path, list[tuple[float, float]]] = {s: [] for s in srcs}
    for s in srcs:  # untimed: compiles what is not compiled yet
        paint_process(vault, s)
    for _ in range(runs):
        for s in srcs:
            got[s].append(paint_process(vault, s))
    res: dict[str, float] = {}
    for i, s in enumerate(srcs):
        wall = statistics.median(g[0] for g in got[s])
        cpu = statistics.median(g[1] for g in got[s])
        key = "" if i == 0 else f"_{i}"
        res[f"dashboard_process_first_paint{key}_s"] = wall
        res[f"dashboard_process_first_paint_cpu{key}_s"] = cpu
        print(
            f"  dashboard process, spawn to first paint {wall * 1e3:6.0f} ms, CPU {cpu * 1e3:6.0f} ms"
            f" (median of {runs}; {s}; load {os.getloadavg()[0]:.2f})",
            flush=True,
        )
    return res


def dashboard(vault: Path, runs: int = 3) -> dict[str, float]:
    import anyio

    res: dict[str, float] = {}
    for label, server_first in (("server first (before)", True), ("app first (now)", False)):
        got = [anyio.run(first_paint, vault, server_first) for _ in range(runs)]
        key = "before" if server_first else "now"
        res[f"dashboard_first_paint_{key}_s"] = statistics.median(g[0] for g in got)
        res[f"dashboard_server_up_{key}_s"] = statistics.median(g[1] for g in got)
        print(
            f"  dashboard, {label:<21} first paint "
            f"{res[f'dashboard_first_paint_{key}_s'] * 1e3:6.0f} ms; server up "
            f"{res[f'dashboard_server_up_{key}_s'] * 1e3:6.0f} ms (median of {runs})",
            flush=True,
        )
    return res


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.startup_bench")
    ap.add_argument("--vault", required=True)
    ap.add_argument("--src", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--copy", action="store_true", help="work on a copy of the vault")
    ap.add_argument("--dashboard", action="store_true", help="the dashboard's first paint too")
    ap.add_argument("--dashboard-only", action="store_true", help="only the dashboard's")
    ap.add_argument(
        "--against",
        action="append",
        default=[],
        help="another checkout whose dashboard process is timed in turn with --src's",
    )
    args = ap.parse_args()
    vault = Path(args.vault).absolute()
    if args.copy:
        dest = Path(os.environ.get("TMPDIR", "/tmp")) / f"startup-bench-{os.getpid()}"
        shutil.copytree(vault, dest, symlinks=True)
        vault = dest
    try:
        print(f"startup, {vault} served by {args.src}")
        res = run(vault, Path(args.src), args.runs) if not args.dashboard_only else {}
        if args.dashboard or args.dashboard_only:
            res.update(dashboard(vault, args.runs))
            srcs = [Path(args.src), *(Path(a) for a in args.against)]
            res.update(dashboard_process(vault, srcs, args.runs))
        print(json.dumps({k: round(v, 4) for k, v in res.items()}))
    finally:
        if args.copy:
            shutil.rmtree(vault, ignore_errors=True)


if __name__ == "__main__":
    main()
