"""How long an AI write holds git's `.git/index.lock`, the lock every other git on the vault
needs at each of its steps (the Obsidian Git plugin's `git add -A` and `git commit`, and each
step of its `git rebase` or `git merge`: one that meets it stops, some half-way; see
SECURITY.md). Prints, never asserts.

uv run python -m bench.index_lock_bench            # 200 appends, a small vault
uv run python -m bench.index_lock_bench --hogs 4   # the same with 4 CPU hogs running
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from mcp.types import CallToolResult

from server.core import git_index
from server.protocol.tools import build_server
from server.vault import Vault
from server.write import store

from .stats import ms, pct

HOG = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end: pass\n"


def _vault(root: Path) -> None:
    root.mkdir(parents=True)
    for i in range(20):
        (root / f"n{i}.md").write_text(f"# N{i}\n\n## Log\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "i"],
        check=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--hogs", type=int, default=0)
    args = ap.parse_args()
    held: list[float] = []
    calls: list[float] = []
    real = git_index.owner_index

    @contextlib.contextmanager
    def timed(*a: Any, **kw: Any) -> Iterator[Any]:
        t = time.perf_counter()
        try:
            with real(*a, **kw) as idx:
                yield idx
        finally:
            held.append(time.perf_counter() - t)

    store.owner_index = timed
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    try:
        with tempfile.TemporaryDirectory(prefix="vw-bench-lock-") as d:
            root = Path(d) / "vault"
            _vault(root)
            server = build_server(Vault(root))

            async def go() -> None:
                for i in range(args.iters):
                    t = time.perf_counter()
                    r = await server.call_tool(
                        "append_section",
                        {"path": f"n{i % 20}.md", "heading": "Log", "content": f"- line {i}"},
                    )
                    calls.append(time.perf_counter() - t)
                    assert isinstance(r, CallToolResult) and not r.is_error, r

            anyio.run(go)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    share = sum(held) / sum(calls)
    print(
        f"  index.lock held per append ({args.iters}, {args.hogs} hogs)  "
        f"p50 {ms(pct(held, 0.5))}  p95 {ms(pct(held, 0.95))}  max {ms(max(held))}  "
        f"call p50 {ms(pct(calls, 0.5))}  held {share:.0%} of the time"
    )


if __name__ == "__main__":
    main()
