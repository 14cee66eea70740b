"""What the AI reads: the notes it reads most, the notes it has not read for a while, and what
its tool results cost per local day, per client and per tool, all from the journal.

Plain functions over journal events (and, for "not read", the vault's visible notes): no MCP, no
Textual. The dashboard's Reads screen and `vaultwatch reads` both call these.

Which events count:
- cost: every tool result the model received (`read`, and the results of writes, `commit` and
  `noop`), with the server's token estimate (journal.estimate_tokens);
- reads of a note: `read` events only; a read names every note its result named
  (budget.paths_named), and its tokens are shared evenly between them, so the notes' tokens
  add up to the reads' tokens;
- a note moved or renamed since (a rename git's history shows: the dashboard's move, or the
  owner's own commit) keeps its reads under its name of now.
Times are the owner's local time: the journal keeps UTC, a day is the owner's calendar day.
A client is named as Stats names it (server.core.clients.client_name: `claude-code`, not
`claude-code/2.1.0`): the journal keeps the version, an upgrade does not start a new row.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from server.core.clients import client_name
from server.core.git_log import renames
from server.notes.paths import PathPolicy
from server.vault import Vault
from server.write.journal import estimate_tokens, event_time, parse_time

COST_KINDS = ("read", "commit", "noop")  # results the model received
SPAN = 30  # days in `cost_per_day`


def local_time(event: dict[str, Any]) -> datetime | None:
    """An event's time in the owner's time zone (the journal keeps UTC)."""
    return LocalClock().of(event)


class LocalClock:
    """Journal times in the owner's time zone, for many events: the zone's offset is looked up
    once per quarter hour of UTC time (every zone changes its offset on a quarter hour), not
    once per event. One per pass: the zone may change between passes (tests set TZ)."""

    def __init__(self) -> None:
        self._zones: dict[str, tzinfo | None] = {}

    def of(self, event: dict[str, Any]) -> datetime | None:
        at = event_time(event)
        if at is None:
            return None
        key = f"{at.astimezone(UTC):%Y%m%d%H}{at.minute // 15}"
        zone = self._zones.get(key)
        if zone is None:
            zone = self._zones[key] = at.astimezone().tzinfo
        return at.astimezone(zone)


class DayIndex:
    """Which of `span` local days ending `last` an event falls on. The journal's stamps have one
    fixed UTC format, which sorts as text, so each local midnight is turned into that format
    once (time zone and daylight saving applied) and an event is placed by one bisect of its
    stamp: no date parsing per event. Stamps of another shape are parsed."""

    def __init__(self, last: date, span: int) -> None:
        self.first = last - timedelta(days=span - 1)
        self.span = span
        self.bounds = [
            datetime.combine(self.first + timedelta(days=n), time())
            .astimezone()
            .astimezone(UTC)
            .strftime("%Y-%m-%dT%H:%M:%S.000Z")
            for n in range(span + 1)
        ]
        self.clock = LocalClock()

    def of(self, event: dict[str, Any]) -> int | None:
        ts = event.get("ts")
        if isinstance(ts, str) and len(ts) == 24 and ts[-1] == "Z" and ts[10] == "T":
            i = bisect_right(self.bounds, ts) - 1
            return i if 0 <= i < self.span else None
        at = self.clock.of(event)
        if at is None:
            return None
        i = (at.date() - self.first).days
        return i if 0 <= i < self.span else None


def event_tokens(event: dict[str, Any]) -> int:
    """The server's estimate for the text it returned; events from before it journaled one
    are estimated from their length as Latin text."""
    if isinstance(event.get("tokens"), int):
        return int(event["tokens"])
    return estimate_tokens("x" * int(event.get("chars") or 0))


def costs(event: dict[str, Any]) -> bool:
    """The one rule for what counts as context cost: a result the model received. A snapshot
    commit is the owner's text saved before an AI write, not something the model read."""
    return event.get("kind") in COST_KINDS and event.get("tool") != "snapshot"


def costs_by_day(
    events: Iterable[dict[str, Any]], index: DayIndex
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(day within `index`, event) for every event that costs, on a day `index` spans."""
    for e in events:
        if costs(e) and (i := index.of(e)) is not None:
            yield i, e


def event_paths(event: dict[str, Any]) -> list[str]:
    """The notes a read named; old or odd events may carry none, or not a list."""
    paths = event.get("paths")
    return [p for p in paths if isinstance(p, str) and p] if isinstance(paths, list) else []


def today_local() -> date:
    return datetime.now().astimezone().date()


@dataclass
class BigRead:
    """One of today's biggest results: its size, its event, and the notes it named that are
    not private now (`hidden` counts the others: a note read before its folder became
    private)."""

    chars: int
    tokens: int  # the estimate the biggest are ranked by (`event_tokens`)
    event: dict[str, Any]
    paths: list[str]
    hidden: int

    @property
    def client(self) -> str:
        return client_name(self.event.get("client"))


def context_cost(
    events: list[dict[str, Any]],
    day: date | None = None,
    private: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Characters and estimated tokens the tools returned on the owner's `day` (today, local
    time), per tool and per client (`cost_per_day` has the days before it). The biggest
    results, most tokens first (the cost; a Chinese note costs more than its chars say), name
    their notes under the vault's `private` rules of now; without them (the vault not read
    yet) that list is left empty rather than name a note that may be private."""
    day = day or today_local()
    per_tool: Counter[str] = Counter()
    per_tool_tokens: Counter[str] = Counter()
    per_client: Counter[str] = Counter()
    per_client_tokens: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    biggest = []
    for _, e in costs_by_day(events, DayIndex(day, 1)):
        chars, toks = int(e.get("chars") or 0), event_tokens(e)
        tool, client = str(e.get("tool", "?")), client_name(e.get("client"))
        per_tool[tool] += chars
        per_tool_tokens[tool] += toks
        per_client[client] += chars
        per_client_tokens[client] += toks
        calls[tool] += 1
        biggest.append((toks, chars, e))
    biggest.sort(key=lambda x: (-x[0], -x[1]))  # stable: among equals, the earlier first
    big: list[BigRead] = []
    if private is not None:
        for toks, chars, e in biggest[:20]:
            named = event_paths(e)
            shown = [p for p in named if not private(p)]
            big.append(BigRead(chars, toks, e, shown, len(named) - len(shown)))
    return {
        "day": day,
        "tools": per_tool,
        "tool_tokens": per_tool_tokens,
        "clients": per_client,
        "client_tokens": per_client_tokens,
        "calls": calls,
        "biggest": big,
        "total": sum(per_tool.values()),
        "tokens": sum(per_tool_tokens.values()),
    }


# -- cost per day ---------------------------------------------------------------------------------


@dataclass
class DailyCost:
    """Estimated tokens per local day, oldest first, the last day being `days[-1]`."""

    days: list[date]
    tokens: list[int]
    chars: list[int]
    calls: list[int]
    clients: dict[str, list[int]] = field(default_factory=dict)  # biggest total first
    tools: dict[str, list[int]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "days": [d.isoformat() for d in self.days],
            "tokens": self.tokens,
            "chars": self.chars,
            "calls": self.calls,
            "clients": self.clients,
            "tools": self.tools,
        }


def cost_per_day(
    events: Iterable[dict[str, Any]], today: date | None = None, span: int = SPAN
) -> DailyCost:
    """Tokens the model received per local day over the `span` days ending `today`, in total,
    per client and per tool."""
    today = today or today_local()
    first = today - timedelta(days=span - 1)
    days = [first + timedelta(days=n) for n in range(span)]
    tokens, chars, calls = [0] * span, [0] * span, [0] * span
    clients: dict[str, list[int]] = defaultdict(lambda: [0] * span)
    tools: dict[str, list[int]] = defaultdict(lambda: [0] * span)
    for i, e in costs_by_day(events, DayIndex(today, span)):
        toks = event_tokens(e)
        tokens[i] += toks
        chars[i] += int(e.get("chars") or 0)
        calls[i] += 1
        clients[client_name(e.get("client"))][i] += toks
        tools[str(e.get("tool") or "?")][i] += toks

    def biggest_first(d: dict[str, list[int]]) -> dict[str, list[int]]:
        return dict(sorted(d.items(), key=lambda kv: (-sum(kv[1]), kv[0])))

    return DailyCost(days, tokens, chars, calls, biggest_first(clients), biggest_first(tools))


# -- notes read -----------------------------------------------------------------------------------


@dataclass
class NoteReads:
    path: str
    reads: int = 0
    tokens: float = 0.0  # its share of the reads that named it
    last: datetime | None = None
    clients: dict[str, int] = field(default_factory=dict)  # most reads first
    tools: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "reads": self.reads,
            "tokens": round(self.tokens),
            "last": self.last.isoformat(timespec="seconds") if self.last else None,
            "clients": list(self.clients),
            "tools": list(self.tools),
        }


class Moves:
    """Where a note read under one name is now: each rename after the read, followed in turn
    (a note moved twice; a new note made at the old name after a move is not the moved one)."""

    def __init__(self, moves: Iterable[tuple[int, str, str]] = ()) -> None:
        self._after: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for when, old, new in moves:  # oldest first
            self._after[old].append((when, new))

    @classmethod
    def of(cls, vault: Vault, events: list[dict[str, Any]]) -> Moves:
        """The renames since the oldest read in `events` (git's history, one `git log`)."""
        first = next((e.get("ts") for e in events if e.get("kind") == "read"), None)
        since = _epoch(first) if isinstance(first, str) else None
        moves = renames(vault.root, since=None if since is None else int(since) - 1)
        return cls((m.when, m.old, m.new) for m in reversed(moves))

    def __bool__(self) -> bool:
        return bool(self._after)

    def now(self, path: str, ts: object) -> str:
        if path not in self._after:
            return path
        stamp = _epoch(ts) if isinstance(ts, str) else None
        if stamp is None:
            return path
        when = int(stamp)  # a commit's time has whole seconds: one in the read's second is after it
        for _ in range(100):  # a chain of renames; never a cycle of them for ever
            step = next((m for m in self._after.get(path, ()) if m[0] >= when), None)
            if step is None:
                break
            when, path = step
        return path


def _epoch(ts: str) -> float | None:
    at = parse_time(ts)
    return at.timestamp() if at is not None else None


def _ranked(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def note_reads(
    events: Iterable[dict[str, Any]], private: Callable[[str], bool], moves: Moves | None = None
) -> dict[str, NoteReads]:
    """Per note: how many `read` events named it, its share of their tokens, the last one,
    which clients and tools. Notes `private` says are private now are left out, whatever the
    config was when they were read; a note `moves` knows under a later name counts there.

    One pass over tens of thousands of events, so: plain lists as accumulators, the private
    rule asked once per path, the newest read found by comparing the journal's UTC stamps
    (one fixed format) and turned into a local time once per note."""
    acc: dict[str, list[Any]] = {}
    _tally(events, acc, private, moves)
    return _rows(acc)


def _tally(
    events: Iterable[dict[str, Any]],
    acc: dict[str, list[Any]],
    private: Callable[[str], bool],
    moves: Moves | None,
    touched: set[str] | None = None,
) -> None:
    """Add `events` to `acc` (path: [reads, tokens, newest ts, clients, tools]), private notes
    left out; the paths they named go into `touched` when given."""
    hidden: dict[str, bool] = {}
    for e in events:
        if e.get("kind") != "read":
            continue
        paths = event_paths(e)
        if not paths:
            continue
        if moves:
            paths = [moves.now(p, e.get("ts")) for p in paths]
        share = event_tokens(e) / len(paths)
        ts = e.get("ts")
        ts = ts if isinstance(ts, str) else ""
        client, tool = client_name(e.get("client")), str(e.get("tool") or "?")
        named = dict.fromkeys(paths)
        if touched is not None:
            touched.update(named)
        for p in named:
            h = hidden.get(p)
            if h is None:
                h = hidden[p] = private(p)
            if h:
                continue
            a = acc.get(p)
            if a is None:
                a = acc[p] = [0, 0.0, "", {}, {}]
            a[0] += 1
            a[1] += share
            if ts > a[2]:
                a[2] = ts
            a[3][client] = a[3].get(client, 0) + 1
            a[4][tool] = a[4].get(tool, 0) + 1


def _rows(acc: dict[str, list[Any]], only: Iterable[str] | None = None) -> dict[str, NoteReads]:
    """`acc`'s sums as NoteReads (of the paths `only` names, when given)."""
    clock = LocalClock()
    return {
        p: NoteReads(p, a[0], a[1], clock.of({"ts": a[2]}), _ranked(a[3]), _ranked(a[4]))
        for p in (acc if only is None else only)
        if (a := acc.get(p)) is not None
    }


@dataclass
class _Tally:
    """`note_reads` of the events counted so far in one vault, kept for the next call (the
    Reads screen counts again whenever it opens and whenever an event arrives): the first
    and the last event counted (the dashboard's list only grows, so a list that still holds
    them where they were holds the same events before them), under which private rules and
    renames. Private notes are never in it: left out as they are counted, and a change of
    the rules counts everything again."""

    policy: PathPolicy
    moves: Moves
    first: dict[str, Any] | None
    last: dict[str, Any] | None
    done: int
    acc: dict[str, list[Any]]
    rows: dict[str, NoteReads]

    def extended_by(self, events: list[dict[str, Any]]) -> bool:
        """Whether `events` are the events counted, with (maybe) more after them."""
        if len(events) < self.done:
            return False
        return self.done == 0 or (events[0] is self.first and events[self.done - 1] is self.last)


_TALLIES: dict[str, _Tally] = {}  # vault root -> its last tally
_TALLY_LOCK = threading.Lock()


def vault_note_reads(vault: Vault, events: list[dict[str, Any]]) -> dict[str, NoteReads]:
    """`note_reads` of `events` under the vault's private rules and renames now, counting only
    the events added since the last call on the same list (`_Tally`)."""
    policy = vault.policy
    moves = Moves.of(vault, events)
    root = str(vault.root)
    with _TALLY_LOCK:
        t = _TALLIES.get(root)
        if (
            t is None
            or t.policy is not policy
            or t.moves._after != moves._after
            or not t.extended_by(events)
        ):
            t = _TALLIES[root] = _Tally(policy, moves, None, None, 0, {}, {})
        if t.done < len(events):
            touched: set[str] | None = set() if t.done else None
            _tally(events[t.done :], t.acc, policy.is_private, moves, touched)
            t.rows = {**t.rows, **_rows(t.acc, touched)}
            t.first, t.last, t.done = events[0], events[-1], len(events)
        return dict(t.rows)


def most_read(reads: Mapping[str, NoteReads], limit: int | None = None) -> list[NoteReads]:
    """Most reads first; then most tokens, then by path."""
    ranked = sorted(reads.values(), key=lambda n: (-n.reads, -n.tokens, n.path))
    return ranked[:limit] if limit is not None else ranked


@dataclass
class Unread:
    path: str
    last: datetime | None  # None: never read (in the journal this vault has)
    modified: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "last_read": self.last.isoformat(timespec="seconds") if self.last else None,
            "modified": self.modified.isoformat(timespec="seconds"),
        }


def not_read(
    reads: Mapping[str, NoteReads],
    notes: Mapping[str, datetime],
    days: int,
    now: datetime | None = None,
) -> list[Unread]:
    """The `notes` (path: modified) no read named in the last `days` days, or ever: never
    read first, then the longest unread; among equals the oldest note first."""
    now = now or datetime.now().astimezone()
    since = now - timedelta(days=days)
    out = []
    for path, modified in notes.items():
        n = reads.get(path)
        last = n.last if n is not None else None
        if last is None or last < since:
            out.append(Unread(path, last, modified))
    never = datetime.min.replace(tzinfo=now.tzinfo)
    out.sort(key=lambda u: (u.last is not None, u.last or never, u.modified, u.path))
    return out


# -- the vault's view ------------------------------------------------------------------------------


@dataclass
class Reads:
    """Everything the Reads screen and `vaultwatch reads` show, from one pass over events."""

    days: int
    most: list[NoteReads]
    unread: list[Unread]
    per_day: DailyCost
    notes: int  # visible notes in the vault

    def as_json(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "notes": self.notes,
            "most_read": [n.as_json() for n in self.most],
            "not_read": [u.as_json() for u in self.unread],
            "per_day": self.per_day.as_json(),
        }


def vault_notes(vault: Vault) -> dict[str, datetime]:
    """The notes the AI may see (private ones never), with when each was last modified."""
    return {p: e.modified for p, e in vault.entries().items()}


def reads_report(
    vault: Vault,
    events: list[dict[str, Any]],
    days: int = 30,
    now: datetime | None = None,
) -> Reads:
    """Most read notes, notes not read in `days` days, and the last SPAN days' cost, with the
    vault's current private rules applied to every list."""
    now = now or datetime.now().astimezone()
    reads = vault_note_reads(vault, events)
    notes = vault_notes(vault)
    return Reads(
        days=days,
        # notes of the vault as it is: a path that is gone (or never was: a rules file the
        # config names but that does not exist) is no note to keep or prune
        most=most_read({p: n for p, n in reads.items() if p in notes}),
        unread=not_read(reads, notes, days, now),
        per_day=cost_per_day(events, now.date()),
        notes=len(notes),
    )
