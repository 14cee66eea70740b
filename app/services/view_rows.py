"""Which rows of the feed the timeline shows, and how: the a/h/e filters (they combine), the
text filter (summary, paths, who, and the text of each change), server sessions folded to one
row each. No Textual here: the main screen and shell commands share these rules."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from app.services.feed import Row
from server.core.git_run import git
from server.index.search_query import ParsedQuery, SearchError, matches_text, parse

# one name per filter, used by the footer, the help, the status line and the palette alike
GROUPS = {"a": "AI", "h": "You", "e": "Errors"}  # "You": the owner, as the review screen says


@dataclass(frozen=True)
class Filters:
    groups: frozenset[str] = frozenset()  # any of a, h, e: rows of any chosen group
    text: str = ""
    diff_hits: frozenset[str] = frozenset()  # commits whose change adds or removes `text`
    notes: frozenset[str] = frozenset()  # rows touching any of these (a tag's notes)
    notes_label: str = ""  # what chose them: "#crdt"

    @property
    def active(self) -> bool:
        return bool(self.groups or self.text or self.notes_label)

    def describe(self) -> str:
        """The filters in force, in the words of the keys that set them: "AI + Errors · /crdt"."""
        parts = []
        if self.groups:
            parts.append(" + ".join(GROUPS[g] for g in GROUPS if g in self.groups))
        if self.notes_label:
            parts.append(self.notes_label)
        if self.text:
            parts.append(f"/{self.text}")
        return " · ".join(parts)


def text_query(text: str) -> ParsedQuery | None:
    """The filter text read as search_text reads a query (words ANDed wherever they stand, a
    Chinese word typed without spaces found apart too, "a phrase", -word), or None when it has
    no word to look for (only punctuation, `-`, a `tag:` filter): then it is matched as typed."""
    try:
        pq = parse(text)
    except SearchError:
        return None
    return pq if pq.positive else None


def finder(text: str) -> Callable[[str], bool]:
    """Whether a line of a diff holds `text`, by the rule of the `/` filter (every word of it
    on the line, a Chinese word's words apart too), or as typed when it has no word: `n`/`N`
    find in the diff what the filter found in the timeline."""
    pq = text_query(text)
    if pq is not None:
        return lambda line: matches_text(pq, line)
    f = text.casefold()
    return lambda line: f in line.casefold()


def matches(row: Row, text: str, diff_hits: frozenset[str], pq: ParsedQuery | None = None) -> bool:
    """The row's summary, author or client, paths, or change hold `text`: by search_text's rule
    (`pq`, text_query's reading of it), else as typed. A commit's change is `diff_hits`."""
    if pq is not None:
        if matches_text(pq, "\n".join([row.summary, row.who, *row.paths])):
            return True
        if row.commit is not None:
            return row.commit.sha in diff_hits
        return matches_text(pq, str((row.event or {}).get("diff", "")))
    f = text.casefold()
    if f in row.summary.casefold() or f in row.who.casefold():
        return True
    if any(f in p.casefold() for p in row.paths):
        return True
    if row.commit is not None:
        return row.commit.sha in diff_hits
    return f in str((row.event or {}).get("diff", "")).casefold()  # what a rejected write tried


def visible(rows: Sequence[Row], filters: Filters) -> list[Row]:
    out: Iterable[Row] = fold_sessions(rows)
    if filters.groups:
        out = [r for r in out if r.group in filters.groups]
    if filters.notes_label:
        out = [r for r in out if any(p in filters.notes for p in r.paths)]
    if filters.text:
        pq = text_query(filters.text)
        out = [r for r in out if matches(r, filters.text, filters.diff_hits, pq)]
    return list(out)


def fold_sessions(rows: Sequence[Row]) -> list[Row]:
    """One row per server process: its start and stop events (same pid) become one row, at the
    newer one's place, that says both. Everything else passes through in order."""
    by_pid: dict[object, list[Row]] = {}
    for r in rows:
        if r.kind == "server" and r.event is not None:
            by_pid.setdefault(r.event.get("pid"), []).append(r)
    if not by_pid:
        return list(rows)
    folded: dict[str, Row | None] = {}  # key -> its folded row, or None: dropped
    began: dict[str, datetime] = {}  # key of a session's row -> when it started
    for pid, group in by_pid.items():
        events = {str((r.event or {}).get("kind")): r for r in group}
        started, stopped = events.get("server_started"), events.get("server_stopped")
        first = started or group[-1]
        transport = (first.event or {}).get("transport", "")
        said = f"server pid {pid} ({transport}): started {first.time.astimezone():%H:%M}"
        if stopped is not None:
            why = (stopped.event or {}).get("reason", "")
            said += f", stopped {stopped.time.astimezone():%H:%M}" + (f" ({why})" if why else "")
        newest = group[0]  # the feed is newest first
        folded.update(dict.fromkeys((r.key for r in group[1:]), None))
        folded[newest.key] = dataclasses.replace(newest, summary=said)
        began[newest.key] = first.time
    out: list[Row] = []
    run: list[Row] = []  # sessions with nothing between them, newest first
    for r in rows:
        f = folded.get(r.key, r)
        if f is None:
            continue
        if f.key in began:
            run.append(f)
            continue
        out.extend(_one_row(run, began))
        run = []
        out.append(f)
    out.extend(_one_row(run, began))
    return out


def _one_row(sessions: list[Row], began: dict[str, datetime]) -> list[Row]:
    """Server sessions with nothing between them as one row, at the newest one's place: each
    launch of the dashboard or of Claude Desktop starts one, and at 80x24 four of the five rows
    in sight were sessions, the AI's writes pushed below. The newest is the row's detail."""
    if len(sessions) < 2:
        return sessions
    newest, start = sessions[0], began[sessions[-1].key].astimezone()
    said = f"{len(sessions)} server sessions since {start:%m-%d %H:%M}, the newest {newest.summary}"
    return [dataclasses.replace(newest, summary=said)]


def commits_mentioning(root: Path, text: str) -> frozenset[str]:
    """Commits whose change adds or removes `text` (any case), by the rule `matches` applies:
    every word of it somewhere in the change (one `git log` per word, `-S` for a word or
    phrase, `-G` for a group of a Chinese word typed without spaces), or as typed."""
    if not text:
        return frozenset()
    pq = text_query(text)
    if pq is None:
        return _pickaxe(root, ["-S", text])
    found: frozenset[str] | None = None
    for t in pq.positive:
        asks = (
            [["-G", "|".join(_ere(tok) for tok, _ in g)] for g in t.apart]
            if t.apart
            else [["-S", t.text]]
        )
        for ask in asks:
            hits = _pickaxe(root, ask)
            found = hits if found is None else found & hits
            if not found:
                return frozenset()
    return found or frozenset()


def _pickaxe(root: Path, ask: list[str]) -> frozenset[str]:
    r = git(root, "log", "--format=%H", "-i", *ask, "HEAD", check=False)
    return frozenset(r.stdout.decode().split()) if r.returncode == 0 else frozenset()


def _ere(token: str) -> str:
    """A token as a literal in git's extended regular expressions (-G)."""
    return "".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in token)
