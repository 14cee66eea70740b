"""search_text figures: index build, size against the body text, query latency, reconcile."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from server.notes.note import decode
from server.services.text_search import search_text
from server.vault import Vault

from .generate import TAIL
from .stats import ms, pct

# Topical words are in most generated notes (worst case: thousands of matches to rank);
# long-tail words match a few notes each, as most real searches do.
QUERIES_COMMON = [
    "idempotency retry",
    "consensus",
    "tombstone merge",
    '"circuit breaker"',
    "replica -raft",
    "backpressure timeout",
    "同步合并",
    "分布式 一致性",
]
QUERIES_2 = ["架构", "周报", "幂等", "限流"]
QUERIES_RARE = [TAIL[1500], TAIL[2500], f"{TAIL[1200]} {TAIL[60]}", TAIL[3500], f'"{TAIL[3000]}"']


def third_terms(vault: Vault, k: int = 3) -> list[str]:
    """Issue 20's worst case: long-tail words in about a third of the notes, each a single term
    with thousands of matches to rank. Read from the index, since which words those are depends
    on the generated vault (TAIL's order follows the generating process's string hashing)."""
    n = len(vault.entries())
    db = vault.search._connect()
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.bench_vocab USING fts5vocab(main, fts, row)"
    )
    tail = set(TAIL)
    rows = db.execute("SELECT term, doc FROM temp.bench_vocab").fetchall()
    return [t for _, t in sorted((abs(d - n / 3), t) for t, d in rows if t in tail)[:k]]


def body_bytes(vault: Vault) -> int:
    total = 0
    for e in vault.entries().values():
        text, _ = decode((vault.root / e.doc.disk).read_bytes())
        total += len(text[e.doc.body_start :].encode())
    return total


def run(root: Path, iters: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    index = root / ".git" / "vaultwatch" / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    vault = Vault(root)
    vault.entries()
    t0 = time.perf_counter()
    vault.searchable_entries()
    vault.search.checkpoint()
    res["build_s"] = time.perf_counter() - t0
    size = vault.search.stats()["bytes"]
    body = body_bytes(vault)
    res["index_mb"], res["body_mb"] = size / 1e6, body / 1e6
    res["index_ratio"] = size / body
    print(f"  full index build                  {res['build_s']:.1f} s")
    print(
        f"  index size                        {size / 1e6:.1f} MB for {body / 1e6:.1f} MB of body text "
        f"({res['index_ratio']:.2f}x)"
    )

    def timed(queries: list[str]) -> list[float]:
        out = []
        for _ in range(iters):
            for q in queries:
                t = time.perf_counter()
                search_text(vault, q, limit=10)
                out.append(time.perf_counter() - t)
        return out

    timed(QUERIES_COMMON[:2])  # warm caches
    for label, key, queries in [
        ("3+ chars, typical (few matches)", "query_rare", QUERIES_RARE),
        ("3+ chars, common (most notes)", "query_common", QUERIES_COMMON),
        ("2-char CJK (most notes)", "query_cjk2", QUERIES_2),
        ("one word in a third of notes", "query_third", third_terms(vault)),
    ]:
        times = timed(queries)
        hits = statistics.median(search_text(vault, q)["total"] for q in queries)
        res[f"{key}_p50_ms"], res[f"{key}_p95_ms"] = pct(times, 0.5) * 1e3, pct(times, 0.95) * 1e3
        res[f"{key}_median_hits"] = hits
        target = "  (target <= 10 ms p50)" if key == "query_third" else ""
        print(
            f"  query, {label:<31} p50 {ms(pct(times, 0.5))}  p95 {ms(pct(times, 0.95))}  "
            f"(median {hits:.0f} hits){target}"
        )

    # one note edited behind the server's back, then the next query
    victim = next(iter(vault.entries().values())).doc
    path = root / victim.disk
    original = path.read_bytes()
    rec = []
    try:
        for i in range(max(5, iters // 2)):
            path.write_bytes(original + f"\n- edited {i} zzyzx{i}\n".encode())
            t = time.perf_counter()
            vault.searchable_entries()
            rec.append(time.perf_counter() - t)
            assert search_text(vault, f"zzyzx{i}")["total"] == 1
    finally:
        path.write_bytes(original)
    res["reconcile_1_p50_ms"] = pct(rec, 0.5) * 1e3
    print(f"  reconcile after 1 changed file    p50 {ms(pct(rec, 0.5))}")
    vault.close()
    return res


def fresh_copy(src: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=True)
    os.sync()
    return dest
