"""Write statistics on a vault with 10,000 commits (two AI clients, six tools, the owner's edits
and reverts, spread over 14 months up to now) and 20,000 journal events (reads, conflicts,
rejections with three codes, no-ops): `app.services.stats.compute`, `vaultwatch stats` as a subprocess
(table and --json), and the stats screen opening under Pilot (drawn with its counting state,
counted, drawn with the figures: wall and CPU, the first `S` and the median of the next).
Printed only (`uv run python -m bench --only stats`)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.services.stats import compute
from server.core.git_log import commit_message

from .stats import ms

COMMITS = 10_000
EVENTS = 20_000
HOUR = 3600
TOOLS = ("append_section", "batch", "edit_text", "create_doc", "update_frontmatter", "replace_doc")
CLIENTS = ("claude-code/2.1.0", "claude-ai/0.9.1")
AI = "Claude <claude@vaultwatch.local>"
OWNER = "Owner <owner@example.test>"


def _repo() -> Path:
    """The history in two `git fast-import` runs: the older half, then the newer half whose
    owner reverts name AI commits of the older half by sha (known once it is imported)."""
    root = Path(tempfile.mkdtemp(prefix="vw-bench-stats-")) / "vault"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "master", str(root)], check=True)
    start = int(time.time()) - COMMITS * HOUR  # one an hour, the newest an hour ago
    notes: dict[int, list[str]] = {}
    half = COMMITS // 2
    marks = root / ".git" / "bench-marks"
    sha_of: dict[int, str] = {}
    ai: set[int] = set()
    for first, last in ((0, half), (half, COMMITS)):
        out = []
        for i in range(first, last):
            k = i % 400
            lines = notes.setdefault(k, [f"# Note {k}\n", "\n", "## Log\n"])
            target = sha_of.get(i - half)
            if i % 10 == 9 and target:  # the owner reverts an AI commit of the older half
                msg = f'Revert "x"\n\nVaultwatch-Action: revert\nVaultwatch-Reverts: {target}\n'
                who = OWNER
                lines.append(f"- reverted {i}\n")
            elif i % 10 == 4:  # the owner's own edit
                msg, who = f"owner edit {i}\n", OWNER
                lines.append(f"- owner {i}\n")
            else:
                tool = TOOLS[i % len(TOOLS)]
                trailers = {"Vaultwatch-Tool": tool, "Vaultwatch-Client": CLIENTS[i % 2]}
                msg, who = commit_message(f"{tool}: notes/n{k}.md", trailers), AI
                ai.add(i)
                if i % 7 == 0 and len(lines) > 4:
                    lines.pop(3)
                lines += [f"- ai {i}.{n}\n" for n in range(1 + i % 3)]
            t = start + i * HOUR
            data, m = "".join(lines).encode(), msg.encode()
            after = "from refs/heads/master^0\n" if i == first and first else ""
            out.append(
                f"commit refs/heads/master\nmark :{i + 1}\nauthor {who} {t} +0000\n"
                f"committer {who} {t} +0000\ndata {len(m)}\n{msg}\n{after}"
                f"M 100644 inline notes/n{k}.md\ndata {len(data)}\n".encode()
                + data
                + b"\n"
            )
        subprocess.run(
            ["git", "-C", str(root), "fast-import", "--quiet", f"--export-marks={marks}"],
            input=b"".join(out),
            check=True,
        )
        for line in marks.read_text().splitlines():
            mark, sha = line.split()
            n = int(mark[1:]) - 1
            if n in ai:
                sha_of[n] = sha
    marks.unlink()
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard"], check=True)
    _journal(root, start)
    return root


def _journal(root: Path, start: int) -> None:
    """EVENTS lines in the journal's schema (v1), spread over the same months."""
    d = root / ".git" / "vaultwatch"
    d.mkdir(mode=0o700, exist_ok=True)
    lines = []
    codes = ("unknown_tag", "no_match", "missing_field")
    for n in range(EVENTS):
        ts = datetime.fromtimestamp(start + n * COMMITS * HOUR // EVENTS, UTC)
        e: dict[str, Any] = {
            "v": 1,
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "pid": 4242,
            "client": CLIENTS[n % 2],
        }
        if n % 20 == 0:
            e |= {"kind": "conflict", "tool": "replace_doc", "path": "notes/n1.md"}
        elif n % 20 == 1:
            e |= {"kind": "rejected", "tool": "create_doc", "code": codes[n % 3], "paths": ["x.md"]}
        elif n % 20 == 2:
            e |= {"kind": "noop", "tool": "update_frontmatter", "paths": ["notes/n2.md"]}
        else:
            e |= {"kind": "read", "tool": "read_doc", "paths": ["notes/n3.md"], "chars": 900}
        lines.append(json.dumps(e) + "\n")
    (d / "events.jsonl").write_text("".join(lines))


Phase = dict[str, tuple[float, float]]  # phase: (wall seconds, CPU seconds of this process)
PHASES = (
    ("drawn", "S to the screen drawn, counting"),
    ("counted", "S to counted"),
    ("shown", "S to the figures drawn"),
)


@contextmanager
def _phases(marks: Phase) -> Iterator[None]:
    """Times at which the stats screen is first drawn, has counted, and is first drawn with its
    figures (wall and process CPU: the UI thread, the count's thread; git runs apart)."""
    from app.ui.screens.stats_screen import StatsScreen

    def now() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    refresh, show = StatsScreen._compositor_refresh, StatsScreen._show

    def _compositor_refresh(self: Any) -> None:
        refresh(self)
        if self.is_current:
            marks.setdefault("drawn" if self.stats is None else "shown", now())

    def _show(self: StatsScreen, stats: Any, asked: int, *rest: Any) -> None:
        marks.setdefault("counted", now())
        show(self, stats, asked, *rest)

    StatsScreen._compositor_refresh = _compositor_refresh  # type: ignore[method-assign]
    StatsScreen._show = _show  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        StatsScreen._compositor_refresh = refresh  # type: ignore[method-assign]
        StatsScreen._show = show  # type: ignore[method-assign]


async def _screen(root: Path, iters: int) -> list[Phase]:
    """The stats screen opened with `S` (its default, 12 weeks) on the dashboard with the whole
    history loaded, once and `iters` times more; then once on all history. Each: the phases,
    from the key."""
    from app.ui.dashboard import Dashboard
    from app.ui.screens.stats_screen import StatsScreen

    out: list[Phase] = []
    marks: Phase = {}
    app = Dashboard(root, poll_seconds=60)
    with _phases(marks):
        async with app.run_test(size=(120, 36)) as pilot:
            while not (app.feed.rows and app.feed.complete):
                await pilot.pause(0.05)
            await pilot.pause(0.5)
            for n in range(iters + 2):
                marks.clear()
                start = time.perf_counter(), time.process_time()
                if n <= iters:
                    await pilot.press("S")
                else:
                    await app.push_screen(
                        StatsScreen(root, events=lambda: app.feed.events, since=None)
                    )
                while "shown" not in marks:
                    await pilot.pause(0.005)
                out.append({k: (w - start[0], c - start[1]) for k, (w, c) in marks.items()})
                await pilot.press("escape")
                await pilot.pause(0.3)
    return out


def _cpu() -> float:
    """CPU seconds of this process and every child it waited for (git, the CLI)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(iters: int = 5) -> dict[str, Any]:
    import anyio

    res: dict[str, Any] = {}
    t0 = time.perf_counter()
    root = _repo()
    print(
        f"  generated {COMMITS:,} commits and {EVENTS:,} events in {time.perf_counter() - t0:.1f} s"
    )
    try:
        t, c = time.perf_counter(), _cpu()
        s = compute(root)
        res["compute_first_s"], res["compute_first_cpu_s"] = time.perf_counter() - t, _cpu() - c
        print(
            f"  app.services.stats.compute, all history, first run (every commit diffed) "
            f"{ms(res['compute_first_s'])}; CPU {ms(res['compute_first_cpu_s'])}"
        )
        print(
            f"  {s.total.ai_commits:,} AI commits, {s.total.owner_commits:,} yours, "
            f"{s.total.reverts:,} reverts, {s.total.conflicts:,} conflicts, "
            f"{s.total.rejected:,} rejections, {len(s.weeks)} weeks"
        )
        for label, since in (("all history", None), ("last 12 weeks", "12w")):
            times, cpu = [], []
            for _ in range(iters):
                t, c = time.perf_counter(), _cpu()
                compute(root, since)
                times.append(time.perf_counter() - t)
                cpu.append(_cpu() - c)
            res[f"compute_{since or 'all'}_s"] = min(times)
            res[f"compute_{since or 'all'}_cpu_s"] = min(cpu)
            print(
                f"  app.services.stats.compute, {label:<14} (budget 1 s) best {ms(min(times))}, "
                f"max {ms(max(times))}; CPU (git included) {ms(min(cpu))}"
            )
        exe = str(Path(sys.executable).parent / "vaultwatch")
        for label, extra in (("table", []), ("--json", ["--json"])):
            times, cpu = [], []
            for _ in range(max(1, iters // 2)):
                t, c = time.perf_counter(), _cpu()
                r = subprocess.run([exe, "stats", str(root), *extra], capture_output=True)
                times.append(time.perf_counter() - t)
                cpu.append(_cpu() - c)
                assert r.returncode == 0, r.stderr
            res[f"cli_{label.strip('-')}_s"] = min(times)
            res[f"cli_{label.strip('-')}_cpu_s"] = min(cpu)
            print(
                f"  vaultwatch stats {label:<7} (subprocess, budget 1 s) best {ms(min(times))}; "
                f"CPU {ms(min(cpu))}"
            )
        runs = anyio.run(_screen, root, iters)
        first, later, everything = runs[0], runs[1:-1], runs[-1]
        for key, label in PHASES:
            mid = statistics.median(r[key][0] for r in later)
            mid_cpu = statistics.median(r[key][1] for r in later)
            res[f"screen_{key}_s"], res[f"screen_{key}_cpu_s"] = mid, mid_cpu
            res[f"screen_first_{key}_s"] = first[key][0]
            print(
                f"  stats screen, {label:<32} (12 weeks) median {ms(mid)}, CPU {ms(mid_cpu)}; "
                f"first S {ms(first[key][0])}, CPU {ms(first[key][1])}"
            )
        res["screen_all_s"], res["screen_all_cpu_s"] = everything["shown"]
        print(
            f"  stats screen on all history, open to the figures drawn "
            f"{ms(everything['shown'][0])}, CPU {ms(everything['shown'][1])}"
        )
        print(
            f"  (load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return res
