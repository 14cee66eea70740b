"""Write statistics: per ISO week (the owner's local time) and per client, what the AI and the
owner committed, what the owner took back, and what never became a commit. Plain Python, no
Textual: the stats screen and `vaultwatch stats` call the same `compute`.

Commits come from git, in one `git log` pass (sha, time, trailers; the AI's line counts are
asked of git once per commit and kept, see `_lines`): a commit with a
`Vaultwatch-Tool` trailer is the AI's (`Commit.is_ai`), every other one is the owner's; an
owner commit with `Vaultwatch-Action: revert` or `undo` is a revert, and its
`Vaultwatch-Reverts`, `Vaultwatch-Reverts-Path` and `Vaultwatch-Undoes` trailers say of what.
Conflicts, rejections (by code) and no-ops come from the journal, because a refused write
leaves no commit.

A client is named without its version (`claude-code`, not `claude-code/2.1.332`), as the
timeline names it: an upgrade does not split one assistant in two.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from app.services.actions import ActionError
from app.services.history import Commit, commit_of, parse_since, since_time
from app.services.rewritten import once_each
from server.core.clients import client_name
from server.core.git_log import RECORD, log_format, parse_log
from server.core.git_run import git, git_stream
from server.core.state_files import make_state_dir, read_state, state_dir
from server.write.journal import parse_time, read_all

REVERT_ACTIONS = ("revert", "undo")  # owner commits that take back earlier changes
EVENT_KINDS = ("conflict", "rejected", "noop")  # what the journal adds to git's picture
# one git log: the commit's own fields, the targets of a revert or an undo, and its identity
# (server/core/gitrepo.py's one `git log` reader)
_FIELDS = (
    "sha",
    "time",
    "tool",
    "client",
    "action",
    "reverts",
    "undoes",
    "reverts_path",
    "ident",
)
BARS = "▁▂▃▄▅▆▇█"
SINCE_HELP = "today, 7d, 4w (this week and the 3 before), YYYY-MM-DD or a commit"


@dataclass
class Tally:
    """The counts of one week, one client, or the whole period. For a client, `reverts`
    counts its commits the owner took back, and `owner_commits` stays 0."""

    ai_commits: int = 0
    owner_commits: int = 0
    reverts: int = 0
    reverted: Counter[str] = field(default_factory=Counter)  # what reverts took back: tool/action
    added: int = 0  # lines the AI added and removed
    removed: int = 0
    tools: Counter[str] = field(default_factory=Counter)  # AI commits per tool
    conflicts: int = 0
    rejections: Counter[str] = field(default_factory=Counter)  # per rejection code
    noops: int = 0

    def add(self, other: Tally) -> None:
        for name in ("ai_commits", "owner_commits", "reverts", "added", "removed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.conflicts += other.conflicts
        self.noops += other.noops
        self.reverted.update(other.reverted)
        self.tools.update(other.tools)
        self.rejections.update(other.rejections)

    @property
    def rejected(self) -> int:
        return sum(self.rejections.values())

    def measure(self, name: str) -> int:
        """A measure by name: a field, `rejected`, or `tool:<name>` / `code:<code>`."""
        if name.startswith("tool:"):
            return self.tools[name[5:]]
        if name.startswith("code:"):
            return self.rejections[name[5:]]
        if name.startswith("reverted:"):
            return self.reverted[name[9:]]
        return int(getattr(self, name))

    def as_json(self) -> dict[str, Any]:
        return {
            "ai_commits": self.ai_commits,
            "owner_commits": self.owner_commits,
            "reverts": self.reverts,
            "reverted": dict(self.reverted.most_common()),
            "tools": dict(self.tools.most_common()),
            "added": self.added,
            "removed": self.removed,
            "conflicts": self.conflicts,
            "rejections": dict(self.rejections.most_common()),
            "noops": self.noops,
        }


@dataclass
class Week:
    week: str  # ISO week, "2026-W49"
    monday: date
    tally: Tally = field(default_factory=Tally)
    clients: dict[str, Tally] = field(default_factory=dict)

    def client(self, name: str) -> Tally:
        t = self.clients.get(name)
        if t is None:  # (not setdefault: a Tally is four Counters, made for every call)
            t = self.clients[name] = Tally()
        return t

    @property
    def quiet(self) -> bool:
        """Nothing happened this week (it stays in the sparklines, not in the week table)."""
        return self.tally == Tally()


@dataclass
class Stats:
    since: str | None  # what was asked for (None: the whole history)
    start: datetime | None  # the period starts here (None: at the first commit)
    weeks: list[Week]  # oldest first, every week of the period (quiet ones too)
    total: Tally
    clients: dict[str, Tally]  # the whole period per client, busiest first

    def series(self, measure: str) -> list[int]:
        """One measure per week, oldest first: what a sparkline draws."""
        return [w.tally.measure(measure) for w in self.weeks]

    def as_json(self) -> dict[str, Any]:
        def with_clients(t: Tally, clients: dict[str, Tally]) -> dict[str, Any]:
            return {**t.as_json(), "clients": {k: c.as_json() for k, c in clients.items()}}

        return {
            "since": self.since,
            "start": self.start.isoformat() if self.start else None,
            "weeks": [
                {"week": w.week, "monday": w.monday.isoformat(), **with_clients(w.tally, w.clients)}
                for w in self.weeks
            ],
            "total": with_clients(self.total, self.clients),
        }


def sparkline(values: list[int]) -> str:
    """One cell per value, the tallest bar for the largest; a blank for zero (the tag trends
    and every measure of the stats draw with it)."""
    top = max(values, default=0) or 1
    return "".join(
        BARS[min(len(BARS) - 1, round(v / top * (len(BARS) - 1)))] if v else " " for v in values
    )


# ------------------------------------------------------------------------------------------------
# the period


def period_start(root: Path, since: str | None, now: datetime | None = None) -> datetime | None:
    """When `--since` starts, as a local time: today, Nd, Nw (this ISO week and the N-1 before,
    from Monday 00:00), YYYY-MM-DD, or a commit (its time). None: the whole history.
    ActionError when it is none of these."""
    return _period(root, since, now)[0]


def _period(
    root: Path, since: str | None, now: datetime | None = None
) -> tuple[datetime | None, str | None]:
    """(start, the commit the period starts after when `since` names one)."""
    if since is None:
        return None, None
    now = (now or datetime.now()).astimezone()
    if m := re.fullmatch(r"(\d+)w", since):
        if int(m[1]) < 1:
            raise ActionError(f"--since {since}: a number of weeks is 1 or more")
        monday = now.date() - timedelta(days=now.weekday() + 7 * (int(m[1]) - 1))
        return datetime(monday.year, monday.month, monday.day).astimezone(), None
    when = since_time(since, now)
    if when is not None:
        return when, None
    try:
        sha = parse_since(root, since)
    except ActionError:
        raise ActionError(f"--since {since!r}: not {SINCE_HELP}") from None
    r = git(root, "log", "-1", "--format=%ct", sha or "HEAD", check=False)
    return datetime.fromtimestamp(int(r.stdout.strip() or 0), UTC).astimezone(), sha


def week_of(when: datetime) -> tuple[str, date]:
    """The ISO week of a moment in the owner's local time: ("2026-W49", its Monday)."""
    d = when.astimezone().date()
    year, week, day = d.isocalendar()
    return f"{year}-W{week:02d}", d - timedelta(days=day - 1)


# ------------------------------------------------------------------------------------------------
# reading git and the journal


@dataclass(frozen=True)
class _Row:
    commit: Commit  # sha, time and trailers only: author, subject and files are left empty
    targets: tuple[str, ...]  # what a revert or undo took back
    ident: str = ""  # author, author date, subject: see rewritten.once_each


class _Log:
    """`git log` of commits with their trailers (no diffs: a commit's line counts come from
    `_lines`, which keeps them). Started first, so git works while the journal is read."""

    def __init__(self, root: Path, *args: str, stdin: list[str] | None = None) -> None:
        extra = ["--no-walk=unsorted", "--stdin"] if stdin is not None else []
        cmd = ["log", f"--format={log_format(_FIELDS)}", "-z", *extra, *args]
        self._proc = git_stream(root, *cmd, stdin=bool(stdin))
        if stdin:  # `--no-walk --stdin` reads every name before it writes anything
            assert self._proc.stdin is not None
            self._proc.stdin.write(("\n".join(stdin) + "\n").encode())
            self._proc.stdin.close()

    def rows(self) -> list[_Row]:
        assert self._proc.stdout is not None
        out = self._proc.stdout.read()
        if self._proc.wait() != 0:
            return []  # an unborn branch: no history yet
        records = parse_log(out.decode("utf-8", "replace"), _FIELDS)
        # a commit's sha, time and trailers only: author, subject and files stay empty
        return [_Row(commit_of(r), r.took_back, r.ident) for r in records]


# -- the AI's line counts, kept per commit ---------------------------------------------------------
# A commit's diff never changes (its sha names it), and diffing is most of what `git log
# --numstat` costs (10,000 commits: 0.4 s of git's CPU, the whole budget's half). So each AI
# commit's counts are asked of git once and kept in the state folder; later runs diff only the
# commits made since. The file holds shas and numbers only, nothing of a note.
LINES_FILE = "stats-lines.json"
LINES_VERSION = 1  # bump when what a count means changes (the old file is then ignored)
_SHA = re.compile(r"[0-9a-f]{40,64}")


# The file as last read or written by this process, and what it holds: the dashboard counts
# again whenever the vault moves, and parsing and checking 10,000 counts was a third of a
# 12-week count's own time (its objects also set off a full garbage collection). The bytes
# are compared, not a timestamp: a file changed by anyone in any way is parsed again.
_last: tuple[Path, bytes, dict[str, tuple[int, int]]] | None = None


def _load_lines(root: Path) -> dict[str, tuple[int, int]]:
    """The kept counts (a copy, the caller's to change); a missing, damaged or older file is
    an empty one (it is rewritten)."""
    global _last
    path = state_dir(root) / LINES_FILE
    try:
        raw = read_state(path)
    except (OSError, ValueError):  # a link or not a regular file (StateDamaged): none kept
        return {}
    last = _last
    if last is not None and last[0] == path and last[1] == raw:
        return dict(last[2])
    lines = _parse_lines(raw)
    _last = (path, raw, lines)
    return dict(lines)


def _parse_lines(raw: bytes) -> dict[str, tuple[int, int]]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("v") != LINES_VERSION:
        return {}
    lines = data.get("lines")
    if not isinstance(lines, dict):
        return {}
    out: dict[str, tuple[int, int]] = {}
    for sha, v in lines.items():
        if (
            isinstance(v, list)
            and len(v) == 2
            and all(type(n) is int and n >= 0 for n in v)
            and _SHA.fullmatch(sha)
        ):
            out[sha] = (v[0], v[1])
    return out


def _save_lines(root: Path, lines: dict[str, tuple[int, int]]) -> None:
    """Atomically (a temp file, then rename), 0600 like every state file. Not written is no
    harm: the next run asks git again."""
    global _last
    raw = json.dumps({"v": LINES_VERSION, "lines": lines}, separators=(",", ":")).encode()
    with contextlib.suppress(OSError):
        folder = make_state_dir(state_dir(root))
        fd, tmp = tempfile.mkstemp(prefix=f".{LINES_FILE}.", suffix=".vaultwatch-tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            os.replace(tmp, folder / LINES_FILE)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        _last = (folder / LINES_FILE, raw, dict(lines))


def _numstat(root: Path, shas: list[str]) -> dict[str, tuple[int, int]]:
    """Lines each commit added and removed, from one `git log --numstat` over exactly them (a
    merge counts nothing, as `git log` shows it no diff; "-" is a binary file: 0)."""
    if not shas:
        return {}
    cmd = ["log", "--no-walk=unsorted", "--stdin", f"--format={RECORD}%H", "--numstat", "-z"]
    proc = git_stream(root, *cmd, "--no-renames", stdin=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(("\n".join(shas) + "\n").encode())
    proc.stdin.close()
    out = proc.stdout.read().decode("utf-8", "replace")
    if proc.wait() != 0:
        return {}
    counts: dict[str, tuple[int, int]] = {}
    for record in out.split(RECORD)[1:]:
        sha, *items = record.split("\x00")
        added = removed = 0
        for item in items:
            stat = item.split("\t", 2)
            if len(stat) == 3:
                a, r = stat[0].strip(), stat[1]
                added += int(a) if a.isdigit() else 0
                removed += int(r) if r.isdigit() else 0
        counts[sha.strip()] = (added, removed)
    return counts


def _lines(root: Path, shas: list[str], whole: bool) -> dict[str, tuple[int, int]]:
    """Lines added and removed per commit of `shas`: the kept ones, and git's for the rest
    (then kept). `whole`: `shas` is the whole history, so counts of commits no longer in it
    (a rewritten branch) are dropped from the file."""
    kept = _load_lines(root)
    found = _numstat(root, [s for s in shas if s not in kept])
    kept.update(found)
    gone = set(kept).difference(shas) if whole else set()
    for sha in gone:
        del kept[sha]
    if found or gone:
        _save_lines(root, kept)
    return kept


def _what(c: Commit | None) -> str:
    """What a revert took back, in a word: the AI tool, or the owner's action."""
    if c is None:
        return "unknown"
    if c.is_ai:
        return c.tool or "?"
    return c.action or "edit"


def _local(ts: object) -> datetime | None:
    at = parse_time(ts)
    return at.astimezone() if at is not None else None


# ------------------------------------------------------------------------------------------------
# the statistics


def compute(
    root: Path,
    since: str | None = None,
    *,
    now: datetime | None = None,
    events: list[dict[str, Any]] | None = None,
) -> Stats:
    """The statistics of the period `since` (see `period_start`) up to now. `events`: the
    journal already read (the dashboard has it); else the journal is read here."""
    now = (now or datetime.now()).astimezone()
    start, after = _period(root, since, now)
    if after is not None:  # exactly the commits after it; journal events from its time on
        log = _Log(root, f"{after}..HEAD")
    else:
        log = _Log(root, "HEAD", *([f"--since={int(start.timestamp())}"] if start else []))
    if events is None:
        events = read_all(state_dir(root) / "events.jsonl", EVENT_KINDS)

    weeks: dict[str, Week] = {}
    by_day: dict[date, Week] = {}

    def week(when: datetime) -> Week:
        day = when.astimezone().date()
        if day not in by_day:
            label, monday = week_of(when)
            by_day[day] = weeks.get(label) or weeks.setdefault(label, Week(label, monday))
        return by_day[day]

    _count_events(events, start, week)
    rows = [r for r in log.rows() if after is not None or start is None or r.commit.time >= start]

    by_sha = {row.commit.sha: row.commit for row in rows}
    wanted = sorted({t for row in rows for t in row.targets if t not in by_sha})
    if wanted:  # reverts of commits older than the period: what they were
        by_sha.update({r.commit.sha: r.commit for r in _Log(root, stdin=wanted).rows()})
    ai = [row.commit.sha for row in rows if row.commit.is_ai]
    lines = _lines(root, ai, whole=start is None and after is None)
    # a rebased AI commit beside its original in history is one change, counted once
    # (oldest first: the original is the one counted)
    idents = {row.commit.sha: row.ident for row in rows if row.commit.is_ai}
    repeats = once_each(root, ai[::-1], idents)
    for row in rows:
        c = row.commit
        if c.sha in repeats:
            continue
        w = week(c.time)
        if c.is_ai:
            name = client_name(c.client)
            added, removed = lines.get(c.sha, (0, 0))
            for t in (w.tally, w.client(name)):
                t.ai_commits += 1
                t.tools[c.tool or "?"] += 1
                t.added += added
                t.removed += removed
            continue
        w.tally.owner_commits += 1
        if c.action not in REVERT_ACTIONS:
            continue
        w.tally.reverts += 1
        for target in row.targets:
            took = by_sha.get(target)
            w.tally.reverted[_what(took)] += 1
            if took is not None and took.is_ai:
                mine = w.client(client_name(took.client))
                mine.reverts += 1
                mine.reverted[_what(took)] += 1

    return _assemble(since, start, now, weeks)


def _count_events(
    events: list[dict[str, Any]], start: datetime | None, week: Callable[[datetime], Week]
) -> None:
    """Conflicts, rejections by code and no-ops, per week and client, from the journal."""
    for e in events:
        kind = e.get("kind")
        if kind not in EVENT_KINDS:
            continue
        at = _local(e.get("ts"))
        if at is None or (start is not None and at < start):
            continue
        w = week(at)
        for t in (w.tally, w.client(client_name(e.get("client")))):
            if kind == "conflict":
                t.conflicts += 1
            elif kind == "noop":
                t.noops += 1
            else:
                t.rejections[str(e.get("code") or "unknown")] += 1


def _assemble(
    since: str | None, start: datetime | None, now: datetime, seen: dict[str, Week]
) -> Stats:
    """Every week from the period's first to now (quiet weeks as zeros: a sparkline is a time
    line), the totals, and each client's, busiest first."""
    # (a commit after a --since commit may carry an older author date: its week is shown too)
    mondays = [w.monday for w in seen.values()] + ([week_of(start)[1]] if start else [])
    first = min(mondays, default=week_of(now)[1])
    last = max([week_of(now)[1], *mondays])
    weeks = []
    day = first
    while day <= last:
        label = week_of(datetime(day.year, day.month, day.day, 12).astimezone())[0]
        weeks.append(seen.get(label) or Week(label, day))
        day += timedelta(days=7)
    total = Tally()
    clients: dict[str, Tally] = {}
    for w in weeks:
        total.add(w.tally)
        for name, t in w.clients.items():
            clients.setdefault(name, Tally()).add(t)
    order = sorted(clients, key=lambda k: (-clients[k].ai_commits, k))
    return Stats(since, start, weeks, total, {k: clients[k] for k in order})


# ------------------------------------------------------------------------------------------------
# the tables the screen and the shell show (plain cells: text or counts)

Cell = str | int
MEASURES = (
    ("ai_commits", "AI commits"),
    ("owner_commits", "your commits"),
    ("reverts", "reverts"),
    ("added", "lines added"),
    ("removed", "lines removed"),
    ("conflicts", "conflicts"),
    ("rejected", "rejections"),
    ("noops", "no-ops"),
)
# the breakdown shown under a measure: (measure, prefix, the Tally counter it comes from)
_UNDER = {"ai_commits": "tool", "reverts": "reverted", "rejected": "code"}


def _ranked(counter: Counter[str]) -> list[str]:
    return sorted(counter, key=lambda k: (-counter[k], k))


def week_table(stats: Stats) -> tuple[list[str], list[list[Cell]]]:
    """A row per week with anything in it (newest first), then the period's total. The AI's
    commits per tool come right after its count: they are what a week is read for."""
    tools = _ranked(stats.total.tools)
    headings = ["week", "AI", *tools, "yours", "reverts", "+lines", "−lines", "conflicts"]
    headings += ["rejected", "no-ops"]

    def row(label: str, t: Tally) -> list[Cell]:
        return [
            label,
            t.ai_commits,
            *(t.tools[k] for k in tools),
            t.owner_commits,
            t.reverts,
            t.added,
            t.removed,
            t.conflicts,
            t.rejected,
            t.noops,
        ]

    rows = [row(w.week, w.tally) for w in reversed(stats.weeks) if not w.quiet]
    return headings, [*rows, row("total", stats.total)]


def measure_table(stats: Stats) -> tuple[list[str], list[list[Cell]]]:
    """Each measure with its weekly sparkline (oldest on the left) and its total; under AI
    commits each tool, under reverts what they took back, under rejections each code."""
    first, last = stats.weeks[0].week, stats.weeks[-1].week
    span = f"{first} → {last}" if first != last else first
    rows: list[list[Cell]] = []
    for key, label in MEASURES:
        rows.append([label, sparkline(stats.series(key)), stats.total.measure(key)])
        if key in _UNDER:
            prefix = _UNDER[key]
            counter = {"tool": stats.total.tools, "reverted": stats.total.reverted}.get(
                prefix, stats.total.rejections
            )
            for name in _ranked(counter):
                series = stats.series(f"{prefix}:{name}")
                rows.append([f"  {name}", sparkline(series), counter[name]])
    return ["measure", f"weekly, {span}", "total"], rows


def client_table(stats: Stats) -> tuple[list[str], list[list[Cell]]]:
    """Each client over the period, busiest first."""
    headings = ["client", "AI", "+lines", "−lines", "conflicts", "rejected", "no-ops"]
    headings += ["taken back", "tools"]
    rows: list[list[Cell]] = []
    for name, t in stats.clients.items():
        tools = ", ".join(f"{t.tools[k]} {k}" for k in _ranked(t.tools))
        counts = [t.ai_commits, t.added, t.removed, t.conflicts, t.rejected, t.noops, t.reverts]
        rows.append([name, *counts, tools])
    return headings, rows


def describe(stats: Stats) -> str:
    """The period in words: "2026-W47 – 2026-W49 (3 weeks, local time)"."""
    n = len(stats.weeks)
    span = f"{stats.weeks[0].week} – {stats.weeks[-1].week}" if n > 1 else stats.weeks[0].week
    what = (
        ""
        if stats.since is None or re.fullmatch(r"\d+w", stats.since)
        else f"since {stats.since}, "
    )
    if stats.since is None:
        what = "all history, "
    return f"{span} ({n} week{'s' if n != 1 else ''}, {what}local time)"
