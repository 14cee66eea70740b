"""What the AI reads: the notes it reads most, the notes it has not read for a while, and what
its tool results cost per local day, per client and per tool, all from the journal.

Plain functions over journal events (and, for "not read", the vault's visible notes): no MCP, no
Textual. The dashboard's Reads screen and `vaultwatch reads` both call these.

Which events count:
- cost: every tool result the model received (`read`, and the results of writes, `commit` and
  `noop`), with the server's token estimate (journal.estimate_tokens);
- reads of a note: `read` events only; a read names every note its result named
  (budget.paths_named), and its tokens are shared evenly between them, so the notes' tokens
  add up to the reads' tokens.
Times are the owner's local time: the journal keeps UTC, a day is the owner's calendar day.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from .journal import estimate_tokens
from .vault import Vault

COST_KINDS = ("read", "commit", "noop")  # results the model received
DAYS = 14  # earlier days in `context_cost`
SPAN = 30  # days in `cost_per_day`


def local_time(event: dict[str, Any]) -> datetime | None:
    """An event's time in the owner's time zone (the journal keeps UTC)."""
    try:
        return datetime.fromisoformat(str(event["ts"]).replace("Z", "+00:00")).astimezone()
    except (KeyError, ValueError):
        return None


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


def event_paths(event: dict[str, Any]) -> list[str]:
    """The notes a read named; old or odd events may carry none, or not a list."""
    paths = event.get("paths")
    return [p for p in paths if isinstance(p, str) and p] if isinstance(paths, list) else []


def today_local() -> date:
    return datetime.now().astimezone().date()


def context_cost(events: list[dict[str, Any]], day: date | None = None) -> dict[str, Any]:
    """Characters and estimated tokens the tools returned on the owner's `day` (today, local
    time), per tool and per client, and the totals of the DAYS days before it."""
    day = day or today_local()
    per_tool: Counter[str] = Counter()
    per_tool_tokens: Counter[str] = Counter()
    per_client: Counter[str] = Counter()
    per_client_tokens: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    days: dict[date, list[int]] = {day - timedelta(days=n): [0, 0, 0] for n in range(DAYS + 1)}
    biggest = []
    for e in events:
        if not costs(e):
            continue
        at = local_time(e)
        when = at.date() if at is not None else None
        if when not in days:
            continue
        chars, toks = int(e.get("chars") or 0), event_tokens(e)
        totals = days[when]
        totals[0], totals[1], totals[2] = totals[0] + 1, totals[1] + chars, totals[2] + toks
        if when != day:
            continue
        tool, client = str(e.get("tool", "?")), str(e.get("client", "?"))
        per_tool[tool] += chars
        per_tool_tokens[tool] += toks
        per_client[client] += chars
        per_client_tokens[client] += toks
        calls[tool] += 1
        biggest.append((chars, e))
    biggest.sort(key=lambda x: -x[0])
    return {
        "day": day,
        "tools": per_tool,
        "tool_tokens": per_tool_tokens,
        "clients": per_client,
        "client_tokens": per_client_tokens,
        "calls": calls,
        "biggest": biggest[:20],
        "total": sum(per_tool.values()),
        "tokens": sum(per_tool_tokens.values()),
        "days": days,
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
    for e in events:
        if not costs(e):
            continue
        at = local_time(e)
        if at is None:
            continue
        i = (at.date() - first).days
        if not 0 <= i < span:
            continue
        toks = event_tokens(e)
        tokens[i] += toks
        chars[i] += int(e.get("chars") or 0)
        calls[i] += 1
        clients[str(e.get("client") or "?")][i] += toks
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
    clients: Counter[str] = field(default_factory=Counter)
    tools: Counter[str] = field(default_factory=Counter)

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "reads": self.reads,
            "tokens": round(self.tokens),
            "last": self.last.isoformat(timespec="seconds") if self.last else None,
            "clients": [c for c, _ in self.clients.most_common()],
            "tools": [t for t, _ in self.tools.most_common()],
        }


def note_reads(
    events: Iterable[dict[str, Any]], private: Callable[[str], bool]
) -> dict[str, NoteReads]:
    """Per note: how many `read` events named it, its share of their tokens, the last one,
    which clients and tools. Notes `private` says are private now are left out, whatever the
    config was when they were read."""
    out: dict[str, NoteReads] = {}
    for e in events:
        if e.get("kind") != "read":
            continue
        paths = [p for p in event_paths(e) if not private(p)]
        if not paths:
            continue
        share = event_tokens(e) / len(event_paths(e))
        at = local_time(e)
        client, tool = str(e.get("client") or "?"), str(e.get("tool") or "?")
        for p in dict.fromkeys(paths):
            n = out.get(p)
            if n is None:
                n = out[p] = NoteReads(p)
            n.reads += 1
            n.tokens += share
            if at is not None and (n.last is None or at > n.last):
                n.last = at
            n.clients[client] += 1
            n.tools[tool] += 1
    return out


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
    policy = vault.policy
    reads = note_reads(events, policy.is_private)
    notes = vault_notes(vault)
    return Reads(
        days=days,
        most=most_read(reads),
        unread=not_read(reads, notes, days, now),
        per_day=cost_per_day(events, now.date()),
        notes=len(notes),
    )
