"""What the AI reads: the service over 20,000 journal read events (most read, not read, cost per
day), the get_context preview, and the Reads screen in the dashboard (headless), timed from the
key press to the frames that show it. Printed only.

    uv run python -m bench --only reads --sizes 0
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app.services.context_preview import preview
from app.ui.dashboard import Dashboard
from app.ui.screens.reads import ReadsScreen
from server.core.gitrepo import ensure_repo
from server.services import reads as reads_service
from server.services.reads import context_cost, cost_per_day, reads_report
from server.vault import Vault
from server.write.journal import read_all

from .frames import Frames, drawn, until
from .stats import ms

TOOLS = ("read_doc", "search_text", "list_docs", "get_context", "recall", "list_tags")
CLIENTS = ("claude-code/2.1.332", "claude-ai/0.1.0", "cursor/1.7")


def _vault(notes: int, events: int, seed: int = 7) -> Path:
    rnd = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="vw-bench-reads-")) / "vault"
    for i in range(notes):
        folder = ("study", "sessions", "项目笔记/二零二六年", "weeks")[i % 4]
        p = root / folder / f"note-{i:04d}-离线同步.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# Note {i}\n\n## Log\n- entry {i} 离线同步与冲突解决\n", encoding="utf-8")
    (root / "CLAUDE.md").write_text("# Rules\nRead before you write.\n")
    ensure_repo(root)
    paths = sorted(str(p.relative_to(root)) for p in root.rglob("*.md"))
    now = datetime.now(UTC)
    j = root / ".git/vaultwatch/events.jsonl"
    with j.open("a", encoding="utf-8") as fh:
        for _ in range(events):
            tool = rnd.choice(TOOLS)
            named = rnd.sample(paths, {"read_doc": 1, "list_tags": 0}.get(tool, 10))
            chars = rnd.randint(200, 20_000)
            at = now - timedelta(seconds=rnd.randint(0, 40 * 86_400))
            e = {
                "v": 1,
                "ts": at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                "pid": 1,
                "client": rnd.choice(CLIENTS),
                "kind": "read",
                "tool": tool,
                "paths": named,
                "chars": chars,
                "tokens": chars // 3,
            }
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")
    return root


def _median(fn: Any, n: int = 5) -> float:
    """Median wall time; the CPU time of the same runs is kept in CPU[-1] (on a shared machine
    the wall time says more about the neighbours than about the code)."""
    out, cpu = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU.append(statistics.median(cpu))
    return statistics.median(out)


async def _open_once(pilot: Any, app: Dashboard, frames: Frames) -> tuple[float, ...]:
    """One `$` from the timeline: seconds to the frame that shows the whole cost tab, to today's
    biggest results' notes named, to the note lists and the preview computed and drawn; and the
    process CPU to the first."""
    frames.seen.clear()
    t, c = time.perf_counter(), time.process_time()
    # not awaited: `press` returns only once the process is idle, the screen's thread done
    # too, and the moments in between are what is timed here
    pressed = asyncio.create_task(pilot.press("dollar_sign"))
    # the cost tab whole: today's figures and the last 30 days' sparklines
    wall, cpu = await drawn(frames, "What the AI reads · cost today", "a day")
    screen = app.screen
    assert isinstance(screen, ReadsScreen)
    # drawn into its table with them (below the fold at this size: no frame shows it)
    await until(lambda: bool(screen.cost["biggest"]))
    named = time.perf_counter() - t
    await until(lambda: screen.report is not None and screen.preview is not None)
    await pilot.pause(0)  # the frame that draws them
    complete = time.perf_counter() - t
    await pressed
    await pilot.press("escape")
    await until(lambda: not isinstance(app.screen, ReadsScreen))
    await pilot.pause(0.3)
    return wall - t, named, complete, cpu - c


CPU: list[float] = []


async def run(notes: int = 2_000, events: int = 20_000) -> dict[str, Any]:
    res: dict[str, Any] = {}
    root = _vault(notes, events)
    try:
        journal = root / ".git/vaultwatch/events.jsonl"
        t0 = time.perf_counter()
        evs = read_all(journal)
        res["journal_read_ms"] = (time.perf_counter() - t0) * 1e3
        vault = Vault(root)
        vault.entries()  # warm, as the dashboard's own vault is
        try:

            def whole() -> None:
                # the count kept from the last call (reads.vault_note_reads) dropped: all counted
                getattr(reads_service, "_TALLIES", {}).clear()
                reads_report(vault, evs, 30)

            res["report_ms"] = _median(whole) * 1e3
            res["cost_today_ms"] = _median(lambda: context_cost(evs)) * 1e3
            res["cost_per_day_ms"] = _median(lambda: cost_per_day(evs)) * 1e3
            res["preview_ms"] = _median(lambda: preview(root), 3) * 1e3
            reads_report(vault, evs, 30)
            res["report_again_ms"] = _median(lambda: reads_report(vault, evs, 30)) * 1e3
        finally:
            vault.close()
        print(f"  {events:,} read events, {notes:,} notes")
        print(f"  journal parsed                              {ms(res['journal_read_ms'] / 1e3)}")
        names = ("report", "today", "per_day", "preview", "again")
        cpu = dict(zip(names, CPU[-5:], strict=True))
        res["report_cpu_ms"] = cpu["report"] * 1e3
        print(
            f"  most read + not read + 30 days (service)    {ms(res['report_ms'] / 1e3)}"
            f"  (CPU {ms(cpu['report'])})"
        )
        print(
            f"  … again, no new event (the count kept)      {ms(res['report_again_ms'] / 1e3)}"
            f"  (CPU {ms(cpu['again'])})"
        )
        print(f"  today's cost (service)                      {ms(res['cost_today_ms'] / 1e3)}")
        print(f"  cost per day, 30 days (service)             {ms(res['cost_per_day_ms'] / 1e3)}")
        print(f"  get_context preview (fresh Vault)           {ms(res['preview_ms'] / 1e3)}")

        opened, named, complete, cpus = [], [], [], []
        app = Dashboard(root, poll_seconds=60)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(lambda: len(app.feed.events) >= events)
            await pilot.pause(0.5)  # the dashboard's own start-up work is done
            frames = Frames(app)
            for _ in range(5):
                drawn_at, named_at, complete_at, open_cpu = await _open_once(pilot, app, frames)
                opened.append(drawn_at)
                named.append(named_at)
                complete.append(complete_at)
                cpus.append(open_cpu)
        each = ", ".join(
            f"{a * 1e3:.0f}/{b * 1e3:.0f}/{c * 1e3:.0f}"
            for a, b, c in zip(opened, named, complete, strict=True)
        )
        print(f"  each opening, cost tab drawn / notes named / lists counted (ms): {each}")
        res["screen_open_ms"] = statistics.median(opened) * 1e3
        res["screen_open_cpu_ms"] = statistics.median(cpus) * 1e3
        res["screen_named_ms"] = statistics.median(named) * 1e3
        res["screen_complete_ms"] = statistics.median(complete) * 1e3
        print(
            f"  Reads screen, `$` to the cost tab drawn     {ms(res['screen_open_ms'] / 1e3)}"
            f"  (CPU {ms(res['screen_open_cpu_ms'] / 1e3)}; target 0.5 s)"
        )
        print(f"  … today's biggest results' notes named      {ms(res['screen_named_ms'] / 1e3)}")
        print(
            f"  … the note lists and the preview computed   {ms(res['screen_complete_ms'] / 1e3)}"
        )
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return res
