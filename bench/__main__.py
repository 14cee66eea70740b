"""`uv run python -m bench`: read-side figures on generated vaults. Prints, never asserts.

uv run python -m bench                 # 2,000 and 10,000 notes
uv run python -m bench --sizes 2000    # one size
uv run python -m bench --json          # one JSON line per size as well
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from server.core.gitrepo import ensure_repo
from server.protocol.tools import build_server
from server.services.conditions import Filters, select
from server.services.sorting import sort_entries
from server.services.summary import summarize
from server.vault import Vault

from . import (
    dashboard_bench,
    dedupe_bench,
    feedback_bench,
    health_bench,
    reads_bench,
    resident_bench,
    review_bench,
    search_bench,
    semantic_bench,
    startup_bench,
    stats_bench,
    transcribe_bench,
    vaults,
    write_bench,
)
from .generate import generate
from .stats import ms, pct

CACHE = Path(__file__).resolve().parent / ".cache"
REPO = Path(__file__).resolve().parent.parent
GEN_VERSION = "7"  # bump when generate() changes its output


def vault_for(n: int, seed: int = 7) -> Path:
    root = CACHE / f"vault-{n}-{seed}"
    marker = root / ".git" / "bench-version"
    if not (marker.exists() and marker.read_text() == GEN_VERSION):
        t0 = time.perf_counter()
        generate(root, n, seed)
        ensure_repo(root)
        marker.write_text(GEN_VERSION)
        print(f"  generated {n} notes in {time.perf_counter() - t0:.1f} s")
    return root


def timeit(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


async def atimeit(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t0)
    return out


LIST_QUERIES: list[dict[str, Any]] = [
    {"type": "application", "where": {"status": "waiting"}},
    {"type": "session", "date_from": "2026-10-01", "sort": "-date"},
    {"tags_any": ["crdt", "同步"], "limit": 50},
    {"type": "session", "group_by": "tag"},
    {"where": {"score": {"ge": 4}}, "fields": ["score"]},
]


async def run_size(n: int, iters: int) -> dict[str, Any]:
    root = vault_for(n)
    print(f"\n{n} notes ({root})")
    res: dict[str, Any] = {"docs": n}

    cold, cached = [], []
    for _ in range(3):
        for suffix in ("", "-wal", "-shm"):  # the persisted parse cache: parse every note
            (root / ".git" / "vaultwatch" / f"parsed.sqlite{suffix}").unlink(missing_ok=True)
        t0 = time.perf_counter()
        v = Vault(root)
        v.entries()
        cold.append(time.perf_counter() - t0)
        v.close()
        t0 = time.perf_counter()
        v = Vault(root)  # what a new server process does, with the cache the last one left
        v.entries()
        cached.append(time.perf_counter() - t0)
        v.close()
    res["cold_scan_s"] = statistics.median(cold)
    res["cached_scan_s"] = statistics.median(cached)
    print(f"  cold scan (parse every note)      {ms(res['cold_scan_s'])}")
    print(f"  fresh process, parse cache current {ms(res['cached_scan_s'])}")

    vault = Vault(root)
    vault.entries()
    cfg = vault.config

    def core_list() -> None:
        for q in LIST_QUERIES[:3]:
            f = Filters(**{k: v for k, v in q.items() if k not in ("sort", "limit")})
            found = sort_entries(select(list(vault.entries().values()), f, cfg), q.get("sort"))
            [summarize(e, None) for e in found[:20]]

    t = [x / 3 for x in timeit(core_list, iters)]
    res["list_docs_core_p50_ms"], res["list_docs_core_p95_ms"] = (
        pct(t, 0.5) * 1e3,
        pct(t, 0.95) * 1e3,
    )
    print(f"  warm list_docs, vault layer       p50 {ms(pct(t, 0.5))}  p95 {ms(pct(t, 0.95))}")

    max_chars = 0
    server = build_server(vault)

    async def direct(tool: str, args: dict[str, Any]) -> None:
        """Server side only: argument validation, the tool, result shaping and checking."""
        nonlocal max_chars
        r = await server.call_tool(tool, args)
        assert not r.is_error, r.content  # type: ignore[union-attr]
        max_chars = max(max_chars, len(r.content[0].text))  # type: ignore[union-attr]

    samples: list[float] = []
    for q in LIST_QUERIES:
        samples += await atimeit(lambda q=q: direct("list_docs", q), iters)  # type: ignore[misc]
    res["list_docs_p50_ms"] = pct(samples, 0.5) * 1e3
    res["list_docs_p95_ms"] = pct(samples, 0.95) * 1e3
    print(
        f"  warm list_docs, server tool call  p50 {ms(pct(samples, 0.5))}  p95 {ms(pct(samples, 0.95))}"
    )
    for name, tool, args in [
        ("list_tags", "list_tags", {"days": 30}),
        ("get_context", "get_context", {}),
        ("read_doc_1mb_section", "read_doc", {"path": "study/huge-log.md", "section": "Log 40"}),
        ("read_doc_1mb_tail", "read_doc", {"path": "study/huge-log.md", "tail": 20}),
    ]:
        t = await atimeit(lambda tool=tool, args=args: direct(tool, args), max(5, iters // 2))  # type: ignore[misc]
        res[f"{name}_p50_ms"] = pct(t, 0.5) * 1e3
        print(f"  {name:<33} p50 {ms(pct(t, 0.5))}  p95 {ms(pct(t, 0.95))}")

    async with Client(server) as c:
        # The whole round trip through the SDK's in-memory client, which also validates every
        # result against its output schema (client-side work a real client may or may not do).
        t = await atimeit(lambda: c.call_tool("list_docs", LIST_QUERIES[1]), iters)
        res["list_docs_client_p50_ms"] = pct(t, 0.5) * 1e3
        print(f"  list_docs via in-memory client    p50 {ms(pct(t, 0.5))}  p95 {ms(pct(t, 0.95))}")
    res["max_result_chars"] = max_chars
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"  largest result                    {max_chars} chars (budget {cfg.limits.result_chars})"
    )
    print(f"  peak RSS of this process          {res['peak_rss_mb']:.0f} MB")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench")
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--only",
        default="read,search,write",
        help="comma list of: read, search, write, semantic, dashboard, startup, review, stats, "
        "health, reads, dedupe, transcribe, resident, feedback, vaults (the real-vault link corpus, bench/vaults.py)",
    )
    args = ap.parse_args()
    only = set(args.only.split(","))
    results: list[dict[str, Any]] = []
    if "vaults" in only:
        print("\nlinks on real vaults (bench/vaults.py)")
        results.append({"vaults": vaults.run()})
    for n in (int(s) for s in args.sizes.split(",")):
        r: dict[str, Any] = {"docs": n}
        if "read" in only:
            r.update(anyio.run(run_size, n, args.iters))
        if "startup" in only:
            # a real stdio server per figure; the dashboard's first paint on the same vault
            print(f"\nstartup, {n} notes (spawn to initialize, first calls, warm and cold cache)")
            r.update(startup_bench.run(vault_for(n), REPO, runs=3))
            r.update(startup_bench.dashboard(vault_for(n), runs=3))
        if "resident" in only:
            print(f"\none resident server vs a server per client, {n} notes")
            r.update({f"resident_{k}": v for k, v in resident_bench.run(vault_for(n)).items()})
        if "search" in only:
            print(f"\nsearch_text, {n} notes")
            r.update(
                {f"search_{k}": v for k, v in search_bench.run(vault_for(n), args.iters).items()}
            )
        if "semantic" in only:
            print(f"\nrecall, {n} notes")
            r.update(
                {
                    f"semantic_{k}": v
                    for k, v in semantic_bench.run(vault_for(n), args.iters).items()
                }
            )
        if "health" in only:
            print(f"\nlibrary health, {n} notes (recall indexed)")
            r.update({f"health_{k}": v for k, v in health_bench.run(vault_for(n)).items()})
        if "write" in only and n <= 2000:
            print(f"\nwrites, {n} notes")
            r.update(
                {
                    f"write_{k}": v
                    for k, v in anyio.run(write_bench.run, vault_for(n), args.iters).items()
                }
            )
        results.append(r)
    if "review" in only:
        print("\nreview")
        results.append({"bench": "review", **review_bench.run()})
    if "reads" in only:
        print("\nwhat the AI reads")
        results.append({"bench": "reads", **anyio.run(reads_bench.run)})
    if "stats" in only:
        print("\nstats")
        results.append({"bench": "stats", **stats_bench.run()})
    if "transcribe" in only:
        print("\npractice recordings (transcribe)")
        results.append({"bench": "transcribe", **transcribe_bench.run()})
    if "dedupe" in only:
        print("\nsearch before store (create_doc)")
        results.append({"bench": "dedupe", **dedupe_bench.run()})
    if "feedback" in only:
        print("\nfeedback")
        results.append({"bench": "feedback", **feedback_bench.run()})
    if "dashboard" in only:
        print("\ndashboard")
        results.append({"bench": "dashboard", **anyio.run(dashboard_bench.run)})
    if args.json:
        for r in results:
            print(
                json.dumps(
                    {
                        "bench": "read",
                        **{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()},
                    }
                )
            )


if __name__ == "__main__":
    main()
