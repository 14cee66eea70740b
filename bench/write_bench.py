"""Write figures: append_section end to end (with its git commit), a 200-op batch, and whether
writes slow down after 10,000 prior commits."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult

from bench.fastimport import fast_import
from server.protocol.tools import build_server
from server.vault import Vault

from .stats import ms, pct


def _history(root: Path, n: int) -> None:
    """n commits on a side file, made quickly with git fast-import."""
    branch = subprocess.run(
        ["git", "-C", str(root), "symbolic-ref", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    commits = [
        (1_700_000_000 + i, "Bench <b@x>", "history", "bench-history.txt", f"{i}\n")
        for i in range(n)
    ]
    fast_import(root, commits, parent=f"refs/heads/{branch}^0", branch=branch)


async def _appends(server: Any, paths: list[str], n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        r = await server.call_tool(
            "append_section",
            {"path": paths[i % len(paths)], "heading": "Log", "content": f"- bench entry {i}"},
        )
        out.append(time.perf_counter() - t)
        assert not r.is_error, r.content
    return out


async def run(src: Path, iters: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="vw-bench-write-")) / "vault"
    shutil.copytree(src, work, symlinks=True, ignore=shutil.ignore_patterns("index.sqlite*"))
    try:
        vault = Vault(work)
        entries = vault.entries()
        paths = [p for p, e in entries.items() if e.type == "session"][:50]
        server = build_server(vault)
        await _appends(server, paths, 3)  # warm
        t = await _appends(server, paths, iters)
        res["append_p50_ms"], res["append_p95_ms"] = pct(t, 0.5) * 1e3, pct(t, 0.95) * 1e3
        print(f"  append_section incl. git commit   p50 {ms(pct(t, 0.5))}  p95 {ms(pct(t, 0.95))}")

        ops = [
            {
                "tool": "append_section",
                "args": {
                    "path": paths[i % len(paths)],
                    "heading": "Log",
                    "content": f"- batch entry {i}",
                },
            }
            for i in range(200)
        ]
        t0 = time.perf_counter()
        r = await server.call_tool("batch", {"ops": ops})
        res["batch200_s"] = time.perf_counter() - t0
        assert isinstance(r, CallToolResult) and not r.is_error, r
        print(f"  batch of 200 appends, one commit  {res['batch200_s'] * 1000:.0f} ms")

        t0 = time.perf_counter()
        _history(work, 10_000)
        print(f"  (made 10,000 prior commits in {time.perf_counter() - t0:.1f} s)")
        vault2 = Vault(work)
        server2 = build_server(vault2)
        await _appends(server2, paths, 3)
        t2 = await _appends(server2, paths, iters)
        res["append_after_10k_commits_p50_ms"] = pct(t2, 0.5) * 1e3
        res["history_slowdown_ratio"] = pct(t2, 0.5) / pct(t, 0.5)
        print(
            f"  append after 10,000 commits       p50 {ms(pct(t2, 0.5))}  "
            f"(x{res['history_slowdown_ratio']:.2f} of before)"
        )
        vault.close()
        vault2.close()
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    return res
