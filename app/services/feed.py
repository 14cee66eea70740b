"""The timeline: git commits and journal events merged into rows, newest first, kept current
by following the journal file and polling HEAD (so it works the same whether the dashboard's
own server or Claude Desktop's made the change)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.services.history import Commit, is_ancestor, read_commits, reverted_by
from server.core.clients import client_name
from server.core.git_run import git
from server.core.state_files import state_dir
from server.write.journal import JournalReader, event_time, parse_lines

SHOWN_EVENTS = {
    "conflict",
    "rejected",
    "noop",
    "error",
    "server_started",
    "server_stopped",
    "recovered",
    "config_reloaded",
}


# what a server writes on its own behalf, not a client's: who is the server itself
SERVER_OWN = frozenset({"server_started", "server_stopped", "recovered", "config_reloaded"})


@dataclass(frozen=True)
class Row:
    key: str
    time: datetime
    kind: str  # ai, human, revert, snapshot, conflict, rejected, noop, error, server, ...
    who: str  # client / tool, or the author
    paths: tuple[str, ...]
    summary: str
    commit: Commit | None = None
    event: dict[str, Any] | None = None
    reverted_by: str | None = None  # the revert that undid this commit (its mark in the timeline)

    @property
    def group(self) -> str:
        """a: AI, h: human, e: conflicts and rejections, s: server events."""
        if self.kind == "ai":
            return "a"
        if self.kind in ("human", "revert", "snapshot", "move", "create", "remove", "import"):
            return "h"
        if self.kind in ("conflict", "rejected", "error"):
            return "e"
        return "s"


def commit_row(c: Commit) -> Row:
    if c.is_ai:  # the tool is in the summary (the subject starts with it): said once
        kind, who = "ai", client_name(c.client) if c.client else "?"
    else:
        kind, who = (c.action or "human"), c.author
    return Row(f"c:{c.sha}", c.time, kind, who, moved_first(c), c.subject, commit=c)


def moved_first(c: Commit) -> tuple[str, ...]:
    """A move's files with the moved ones (at their new place) first, the notes whose links
    changed after: the paths column then names what was moved."""
    if c.action != "move" or " → " not in c.subject:
        return c.files
    dest = c.subject.rsplit(" → ", 1)[1].strip()
    moved = [f for f in c.files if f == dest or (dest.endswith("/") and f.startswith(dest))]
    return (*moved, *(f for f in c.files if f not in moved))


def _ts(event: dict[str, Any]) -> datetime:
    return event_time(event) or datetime.now(UTC)


def event_paths(e: dict[str, Any]) -> tuple[str, ...]:
    """The notes an event names: its `paths`, or its one `path`; a rollback's, the notes it
    put back and those it left as found (`kept`)."""
    if e.get("kind") == "recovered":
        return tuple(str(p) for p in [*(e.get("paths") or []), *(e.get("kept") or [])])
    return tuple(str(p) for p in (e.get("paths") or ([e["path"]] if e.get("path") else [])))


def event_row(e: dict[str, Any], n: int) -> Row | None:
    kind = e.get("kind", "")
    if kind not in SHOWN_EVENTS:
        return None
    # the server's own events are written before any client has said its name ("unknown")
    client = (
        "vaultwatch"
        if kind in SERVER_OWN
        else client_name(e.get("client"))
        if e.get("client")
        else "?"
    )
    tool = e.get("tool") or ""
    paths = event_paths(e)
    if kind == "conflict":
        summary = "the note changed after the AI read it; nothing written"
    elif kind == "rejected":
        summary = f"{e.get('code')}: {e.get('message', '')}"
    elif kind == "noop":
        summary = "no change (content identical)"
    elif kind == "error":
        summary = f"{e.get('code', '')}: {e.get('message', '')}"
    elif kind == "server_started":
        summary = f"server started ({e.get('transport')}, pid {e.get('pid')})"
        kind = "server"
    elif kind == "server_stopped":
        summary = f"server stopped ({e.get('reason', '')}, pid {e.get('pid')})"
        kind = "server"
    elif kind == "recovered":
        summary = str(e.get("message", "recovered an interrupted write"))
    else:
        summary = (
            "config reloaded" if e.get("ok") else f"config error: {'; '.join(e.get('errors', []))}"
        )
    if tool:  # the tool once, in the summary, as an AI commit's subject has it
        summary = f"{tool}: {summary}"
    return Row(f"e:{n}:{e.get('pid')}:{e.get('ts')}", _ts(e), kind, client, paths, summary, event=e)


FIRST_COMMITS = 400  # read at start; the rest of the history follows in the background
# journal lines read at start (the newest); the older ones are parsed, and their rows made, with
# the rest of the history: on the bench's vault, rows for its 5,000 events took ~100 ms of the
# first screen's 250, and their JSON ~40 ms more
FIRST_EVENTS = 1000


class Feed:
    """All rows so far; `poll()` adds what is new and says whether anything was.

    Commits are read incrementally: at start only the newest FIRST_COMMITS (so the first screen
    does not wait for `git log` over a long history), then `backfill()` reads the rest, and each
    new HEAD reads just the commits since the last one. A HEAD that moved sideways (reset,
    rebase) rereads from the top. `poll` and `backfill` may run in different threads."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.reader = JournalReader(state_dir(root) / "events.jsonl")
        self.events: list[dict[str, Any]] = []  # every event, `read`s included (cost screen)
        self.rows: list[Row] = []
        self._head: str | None = None
        self._commit_rows: list[Row] = []
        self._event_rows: list[Row] = []
        self._precise: dict[str, datetime] = {}  # commit sha -> its journal time (ms)
        self._complete = True  # the whole history of _head is in _commit_rows
        # the journal's lines older than the first read's, not parsed yet (backfill)
        self._older: list[bytes] | None = None
        # rows' keys number the events in journal order, the older ones included before they
        # are read: events[i] is number i + _shift from index _shift_from on, i before it
        self._shift = 0
        self._shift_from = 0
        self._generation = 0  # bumped when the history is reread from the top
        self._lock = threading.Lock()
        self._backfilling = threading.Lock()

    @property
    def complete(self) -> bool:
        """The whole history is in: every commit of HEAD and every event of the journal."""
        return self._complete and self._older is None

    def _current_head(self) -> str | None:
        r = git(self.root, "rev-parse", "-q", "--verify", "HEAD", check=False)
        return r.stdout.decode().strip() or None

    def poll(self) -> bool:
        with self._lock:
            rows_changed = False
            if not self.events and not self.reader.offset:  # the first read: the newest lines
                older, new = self.reader.poll_tail(FIRST_EVENTS)
                if older:
                    self._older = older
                    # numbered after the older lines' events: as many as lines with text,
                    # unless some were damaged (then the numbers leave gaps, never repeat)
                    self._shift = sum(1 for line in older if line.strip())
            else:
                new = self.reader.poll()
            if new:
                start = len(self.events)
                self.events.extend(new)
                rows, timed = self._event_rows_of(start, len(self.events))
                self._event_rows.extend(rows)
                rows_changed = bool(rows) or timed
            head = self._current_head()
            if head != self._head:
                self._commit_rows = self._since(self._head, head)
                self._head = head
                rows_changed = True
            if rows_changed:
                self._sort()
            # any new event counts: the header (clients, recall progress) and cost screen use them
            return rows_changed or bool(new)

    def _event_rows_of(self, start: int, end: int) -> tuple[list[Row], bool]:
        """The rows of events[start:end]; the journal's times of the commits among them are
        kept (True if there were any)."""
        rows, timed = [], False
        for i in range(start, end):
            e = self.events[i]
            row = event_row(e, i + self._shift if i >= self._shift_from else i)
            if row is not None:
                rows.append(row)
            elif e.get("kind") == "commit" and e.get("sha"):
                self._precise[str(e["sha"])] = _ts(e)
                timed = True
        return rows, timed

    def _since(self, old: str | None, head: str | None) -> list[Row]:
        if head is None:
            self._complete = True
            return []
        if old is not None and is_ancestor(self.root, old, head):
            fresh = read_commits(self.root, rev=f"{old}..{head}")
            return [commit_row(c) for c in fresh] + self._commit_rows
        self._generation += 1
        first = read_commits(self.root, limit=FIRST_COMMITS, rev=head)
        self._complete = len(first) < FIRST_COMMITS
        return [commit_row(c) for c in first]

    def backfill(self) -> bool:
        """Read the history past the first screenful; True if rows were added. A call while
        another is reading returns False at once."""
        if not self._backfilling.acquire(blocking=False):
            return False
        try:
            return self._backfill()
        finally:
            self._backfilling.release()

    def _backfill(self) -> bool:
        made = False
        if self._older is not None:  # set by the first poll only, cleared only here
            parsed = parse_lines(self._older)  # unlocked: polls go on meanwhile
            with self._lock:
                n = len(parsed)
                self.events[0:0] = parsed  # in place: the Reads screen holds this list
                # the events read so far keep their numbers (and rows their keys)
                self._shift, self._shift_from = self._shift - n, n
                older, _ = self._event_rows_of(0, n)
                self._event_rows = older + self._event_rows
                self._older = None
                self._sort()
                made = True
        with self._lock:
            if self._complete or self._head is None:
                return made
            # the rows held are exactly the newest commits of `head`'s history
            head, generation, held = self._head, self._generation, len(self._commit_rows)
        rest = read_commits(self.root, rev=head, skip=held)  # the slow part, unlocked
        with self._lock:
            if generation != self._generation:
                return made  # the history was rewritten meanwhile; poll reread it
            # commits that arrived meanwhile were put on top; what was read goes below
            self._commit_rows = self._commit_rows + [commit_row(c) for c in rest]
            self._complete = True
            self._sort()
            return bool(rest) or made

    def _sort(self) -> None:
        """Newest first. Git keeps whole seconds, the journal milliseconds: a commit the server
        journaled sorts by the journal's time, so it lands in order among that second's events."""
        self._mark_reverted()
        precise = self._precise

        def when(r: Row) -> datetime:
            return precise.get(r.commit.sha, r.time) if r.commit is not None else r.time

        self.rows = sorted(self._commit_rows + self._event_rows, key=when, reverse=True)

    def _mark_reverted(self) -> None:
        """Each commit row carries the revert that undid it (None again once that revert is
        itself reverted). Only rows whose mark changes are replaced."""
        marks = reverted_by(r.commit for r in self._commit_rows if r.commit is not None)
        if not marks and not any(r.reverted_by for r in self._commit_rows):
            return
        self._commit_rows = [
            replace(r, reverted_by=marks.get(r.commit.sha))
            if r.commit is not None and r.reverted_by != marks.get(r.commit.sha)
            else r
            for r in self._commit_rows
        ]
