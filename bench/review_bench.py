"""Review figures on a vault with 10,000 commits, of which the newest 300 AI commits (across 150
notes, with owner edits between them) are unreviewed and every older AI commit is marked
reviewed: the per-note list, one note's net diff, `vaultwatch review --json`, marking 300
commits, and the review screen under Pilot (key press to the frame that shows the list, then a
note's diff). Printed only (`uv run python -m bench --only review`)."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from app.services.net_diff import net_diff, net_diffs
from app.services.review import mark_reviewed, summaries
from app.services.rewritten import NOTES_REF
from bench.fastimport import Commit, fast_import
from server.core.git_log import CLIENT, TOOL, commit_message

from .frames import Frames, drawn, until
from .stats import ms

NOTES = 500
UNREVIEWED = 300  # AI commits, two per note over 150 notes
AI = "Claude <claude@vaultwatch.local>"
OWNER = "Owner <owner@example.test>"


def _commit(i: int, who: str, msg: str, path: str, text: str) -> Commit:
    return (1_760_000_000 + i * 60, who, msg, path, text)


def _ai_msg(path: str) -> str:
    return commit_message(
        f"append_section: {path} § Log", {TOOL: "append_section", CLIENT: "bench/1"}
    )


def _repo(n_commits: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix="vw-bench-review-")) / "vault"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    notes = {k: [f"# Note {k}\n", "\n", "## Log\n"] for k in range(NOTES)}
    out = []
    old = n_commits - UNREVIEWED - UNREVIEWED // 4  # then the unreviewed stretch, owner edits too
    for i in range(old):
        k = i % NOTES
        notes[k].append(f"- entry {i}\n")
        ai = i % 3 != 0
        who, msg = (AI, _ai_msg(f"notes/n{k}.md")) if ai else (OWNER, f"owner edit {i}\n")
        out.append(_commit(i, who, msg, f"notes/n{k}.md", "".join(notes[k])))
    i = old
    for j in range(UNREVIEWED):
        k = j % (UNREVIEWED // 2)
        notes[k].append(f"- ai entry {i}\n")
        out.append(_commit(i, AI, _ai_msg(f"notes/n{k}.md"), f"notes/n{k}.md", "".join(notes[k])))
        i += 1
        if j % 4 == 3:  # the owner edits between the AI's writes
            notes[k][0] = f"# Note {k} (owner {i})\n"
            out.append(_commit(i, OWNER, f"owner edit {i}\n", f"notes/n{k}.md", "".join(notes[k])))
            i += 1
    fast_import(root, out)
    return root


def _line(what: str, walls: list[float], cpus: list[float]) -> str:
    return (
        f"  {what:<40} median {ms(statistics.median(walls))} (best {ms(min(walls))}, "
        f"worst {ms(max(walls))}), CPU {ms(statistics.median(cpus))}"
    )


async def _screen(root: Path, iters: int) -> dict[str, float]:
    """The review screen under Pilot, timed as the owner sees it: from the key press to the
    first frame that shows the list (the first note's path in it), to the first frame that
    shows that note's diff, and from moving to another note to the frame that shows its diff.
    Not Pilot's `press` returning: that waits until the process is idle, which includes the
    diffs read ahead for the neighbouring notes and the dashboard's own polling. The dashboard
    has read the history and counted first (what the owner sees at launch)."""
    from textual.widgets import DataTable

    from app.ui.dashboard import Dashboard
    from app.ui.screens.review_screen import ReviewScreen

    app = Dashboard(root, poll_seconds=0.5)
    lists: tuple[list[float], list[float]] = ([], [])
    firsts: tuple[list[float], list[float]] = ([], [])
    diffs: tuple[list[float], list[float]] = ([], [])
    inner: list[float] = []  # as the screen measures it: from its creation to the list filled
    listed = 0
    async with app.run_test(size=(160, 48)) as pilot:
        frames = Frames(app)
        await until(lambda: app.review_watch.count is not None and app.feed.complete)
        await app.workers.wait_for_complete()
        review = app.review_watch.current()
        assert review is not None and len(review.notes) > 2
        first, middle = review.notes[0], review.notes[len(review.notes) // 2]
        listed = len(review.notes)
        for _ in range(iters):
            await pilot.pause(0.3)  # the last round's reads ahead are done
            frames.seen.clear()
            t, c = time.perf_counter(), time.process_time()
            await pilot.press("v")
            # the list shows a note by its file name first (then its folder, muted)
            wall, cpu = await drawn(frames, "Review ·", f"{first.path.rsplit('/', 1)[-1]}  ")
            lists[0].append(wall - t)
            lists[1].append(cpu - c)
            wall, cpu = await drawn(frames, f"{first.path} — {first.title}")
            firsts[0].append(wall - t)
            firsts[1].append(cpu - c)
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            inner.append(screen.listed_in or 0.0)
            await pilot.pause(0.3)
            frames.seen.clear()
            t, c = time.perf_counter(), time.process_time()
            screen.query_one("#review-notes", DataTable).move_cursor(row=len(review.notes) // 2)
            wall, cpu = await drawn(frames, f"{middle.path} — {middle.title}")
            diffs[0].append(wall - t)
            diffs[1].append(cpu - c)
            await pilot.press("escape")
            await until(lambda: not isinstance(app.screen, ReviewScreen))
    print(_line(f"`v` to the list drawn (0.5 s, {listed} notes)", *lists))
    print(
        f"  (the screen's own clock, built to list filled: median {ms(statistics.median(inner))})"
    )
    print(_line("`v` to the first note's diff drawn", *firsts))
    print(_line("another note's diff drawn (200 ms)", *diffs))
    return {
        "screen_open_s": statistics.median(lists[0]),
        "screen_open_cpu_s": statistics.median(lists[1]),
        "screen_first_diff_s": statistics.median(firsts[0]),
        "screen_diff_s": statistics.median(diffs[0]),
        "screen_diff_cpu_s": statistics.median(diffs[1]),
    }


def run(iters: int = 5) -> dict[str, Any]:
    res: dict[str, Any] = {}
    t0 = time.perf_counter()
    root = _repo(10_000)
    count = int(
        subprocess.run(
            ["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True, text=True
        ).stdout
    )
    print(f"  generated {count} commits in {time.perf_counter() - t0:.1f} s")
    try:
        # everything before the last stretch is reviewed: one notes commit for all of it
        cut = subprocess.run(
            ["git", "-C", str(root), "rev-parse", f"HEAD~{UNREVIEWED + UNREVIEWED // 4}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        from app.services.review_marks import _log, write_marks

        old = [m.commit for m in _log(root, cut) if m.commit.is_ai]
        t = time.perf_counter()
        write_marks(root, {c.sha: list(c.files) for c in old}, {c.sha: c.files for c in old})
        res["mark_old_s"] = time.perf_counter() - t
        print(f"  marked {len(old)} older AI commits reviewed   {ms(res['mark_old_s'])}")

        review = summaries(root)
        print(
            f"  {review.unreviewed_commits} unreviewed AI commits across {len(review.notes)} notes"
        )
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            summaries(root)
            times.append(time.perf_counter() - t)
        res["summaries_s"] = min(times)
        print(
            f"  per-note list (budget 0.5 s)          best {ms(min(times))}, max {ms(max(times))}"
        )
        times = []
        note = review.notes[len(review.notes) // 2]
        for _ in range(iters):
            t = time.perf_counter()
            net_diffs(root, [note])  # what a screen that listed the notes asks for
            times.append(time.perf_counter() - t)
        res["net_diff_s"] = min(times)
        print(
            f"  one note's net diff (budget 200 ms)   best {ms(min(times))}, max {ms(max(times))}"
        )
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            net_diff(root, note.path)  # from a path alone: the scan, then the diff
            times.append(time.perf_counter() - t)
        res["net_diff_cold_s"] = min(times)
        print(
            f"  the same from a path alone            best {ms(min(times))}, max {ms(max(times))}"
        )
        exe = str(Path(sys.executable).parent / "vaultwatch")
        times = []
        for _ in range(max(1, iters // 2)):
            t = time.perf_counter()
            r = subprocess.run([exe, "review", str(root), "--json"], capture_output=True)
            times.append(time.perf_counter() - t)
            assert r.returncode == 0, r.stderr
        res["review_json_s"] = min(times)
        print(
            f"  vaultwatch review --json (budget 2 s) best {ms(min(times))}, "
            f"{len(r.stdout) // 1024} KB"
        )
        before = subprocess.run(
            ["git", "-C", str(root), "rev-parse", NOTES_REF], capture_output=True, text=True
        ).stdout.strip()
        t = time.perf_counter()
        n, _ = mark_reviewed(root)
        res["mark_all_s"] = time.perf_counter() - t
        print(f"  mark all {n} reviewed (one ref update)  {ms(res['mark_all_s'])}")
        subprocess.run(["git", "-C", str(root), "update-ref", NOTES_REF, before], check=True)
        res.update(anyio.run(_screen, root, iters))
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return res
