"""Library health figures on a generated vault with recall indexed: the whole check (what
`vaultwatch health` runs, in a fresh Vault as a new process would), and the health screen's
open time (pushed until drawn) and time until its findings show. Printed only.

Recall's vectors are built the way the semantic bench builds them (`reconcile` with the
configured model); they stay in the bench vault's derived index, so only the first run embeds.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from textual.app import App

from server.services.health import check, check_root
from server.vault import Vault

from .stats import ms


def _index(root: Path) -> float:
    """Embed whatever recall has not (seconds spent; 0 when the index was current)."""
    vault = Vault(root)
    try:
        sem = vault.semantic()
        assert sem is not None, vault.semantic_unavailable()
        docs = {p: e.doc for p, e in vault.entries().items()}
        t0 = time.perf_counter()
        n = sem.reconcile(docs, vault.note_meta)
        dt = time.perf_counter() - t0
        if n:
            print(f"  recall indexed {n} notes in {dt:.0f} s (kept for the next run)")
        return dt
    finally:
        vault.close()


async def _screen(root: Path) -> tuple[float, float, float | None]:
    """(pushed to first painted, pushed to findings shown, pushed to every finding but the
    near-duplicates shown: None on a screen that shows them all at once). The screen starts
    its check right
    after its first paint; that moment is taken as "open" (the check's thread then competes
    for the interpreter, which would blur a later measure)."""
    from textual.worker import Worker

    from app.ui.screens.health_screen import HealthScreen

    class Timed(HealthScreen):
        painted: float | None = None

        def recheck(self) -> Worker[None]:
            if self.painted is None:
                self.painted = time.perf_counter()
            return super().recheck()

    class Bench(App[None]):
        """Hands the screen a Vault as the dashboard does (app.ui.navigation)."""

        def vault(self) -> Vault:
            return opened

    opened = Vault(root)

    app = Bench()
    rest: float | None = None
    async with app.run_test(size=(120, 36)) as pilot:
        screen = Timed(root)
        t0 = time.perf_counter()
        await app.push_screen(screen)
        while screen.report is None:
            if rest is None and getattr(screen, "partial", None) is not None:
                rest = time.perf_counter() - t0
            await asyncio.sleep(0.01)
        await pilot.pause()
        filled = time.perf_counter() - t0
    opened.close()
    assert screen.painted is not None
    return screen.painted - t0, filled, rest


def _first_page(root: Path) -> dict[str, float]:
    """The check without the near-duplicates (the screen's first page), each once: the first
    in this process (every note read and parsed), in a fresh Vault after it (what health keeps
    per process by content hash reused, the vault's index loaded again), and a re-check on that
    same Vault (the screen's `r`). Run before anything else here, so the first is cold."""
    out: dict[str, float] = {}
    for key in ("cold", "fresh_vault"):
        vault = Vault(root, client="vaultwatch-health")
        try:
            t0 = time.perf_counter()
            check(vault, duplicates=False)
            out[key] = time.perf_counter() - t0
            if key == "fresh_vault":
                t0 = time.perf_counter()
                check(vault, duplicates=False)
                out["recheck"] = time.perf_counter() - t0
        finally:
            vault.close()
    print(
        f"  check without near-duplicates: first in a process {ms(out['cold'])} "
        "(what the last process kept in health.sqlite, if this code has one), "
        f"fresh Vault {ms(out['fresh_vault'])}, re-check {ms(out['recheck'])}"
    )
    return out


def run(root: Path, runs: int = 3) -> dict[str, Any]:
    _index(root)
    first = {f"first_page_{k}_s": v for k, v in _first_page(root).items()}
    times = []
    report = None
    for _ in range(runs):
        t0 = time.perf_counter()
        report = check_root(root)
        times.append(time.perf_counter() - t0)
    assert report is not None
    res: dict[str, Any] = {"check_s": statistics.median(times), **first}
    counts = {k: len(report.by_kind(k)) for k in ("problem", "broken_link", "orphan")}
    counts |= {k: len(report.by_kind(k)) for k in ("duplicate", "stale", "too_big")}
    print(
        f"  health check, {report.notes} notes (fresh Vault, parse cache current)  "
        f"median {ms(res['check_s'])} of {runs}"
    )
    print(f"  findings  {counts}  duplicates checked: {report.duplicates_checked}")
    for w in report.warnings:
        print(f"  warning   {w[:150]}")
    opened, filled, rest = [], [], []
    for _ in range(runs):
        o, f, r = asyncio.run(_screen(root))
        opened.append(o)
        filled.append(f)
        if r is not None:
            rest.append(r)
    res["screen_open_s"] = statistics.median(opened)
    res["screen_filled_s"] = statistics.median(filled)
    print(f"  health screen open (pushed to first paint)  median {ms(res['screen_open_s'])}")
    if rest:
        res["screen_rest_s"] = statistics.median(rest)
        print(f"  … all but the near-duplicates shown         median {ms(res['screen_rest_s'])}")
    print(f"  health screen with its findings shown       median {ms(res['screen_filled_s'])}")
    return res
