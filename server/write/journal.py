"""The event journal: `.git/vaultwatch/events.jsonl`, shared by every server process and the dashboard.

One JSON object per line. Each line is written with a single `write()` on an O_APPEND descriptor,
so lines from several processes never interleave. The schema is versioned (`v`); a reader skips
lines it cannot parse (a torn last line while a writer is mid-write) and keeps its byte offset so
it can follow the file.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from server.core.redact import mask_secrets
from server.core.state_files import open_state, through_link

log = logging.getLogger("vaultwatch.journal")

SCHEMA_VERSION = 1

# The common fields of every event; each kind adds its own (below).
COMMON = ("v", "ts", "pid", "client", "kind")


def _optional() -> Any:
    """A field some writers of the kind leave out: absent from the line when None."""
    return field(default=None, metadata={"optional": True})


@dataclass(frozen=True)
class Event:
    """One journal event, typed: each kind is a subclass whose fields are the schema of its
    line. The dashboard reads these lines as dicts by these field names, so a field is never
    renamed (old journals keep them)."""

    kind: ClassVar[str]

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = value
        return out


@dataclass(frozen=True)
class ServerStarted(Event):
    kind = "server_started"
    transport: str
    read_only: bool
    version: str
    vault: str
    config_errors: list[str]


@dataclass(frozen=True)
class ServerStopped(Event):
    kind = "server_stopped"
    transport: str
    reason: str


@dataclass(frozen=True)
class Read(Event):
    kind = "read"
    tool: str
    paths: list[str]
    chars: int  # as the client received them
    tokens: int  # estimated (TOKEN_RULE)


@dataclass(frozen=True)
class Commit(Event):
    kind = "commit"
    tool: str  # a tool, or "snapshot" (the owner's pending edits, committed first as theirs)
    paths: list[str]
    sha: str
    chars: int
    tokens: int | None = _optional()  # a snapshot returns nothing to a client


@dataclass(frozen=True)
class Noop(Event):
    kind = "noop"
    tool: str
    paths: list[str]
    chars: int
    tokens: int


@dataclass(frozen=True)
class Conflict(Event):
    kind = "conflict"
    tool: str
    path: str
    expected: str
    actual: str


@dataclass(frozen=True)
class Rejected(Event):
    kind = "rejected"
    tool: str
    paths: list[str]
    code: str
    message: str
    hint: str
    diff: str  # the attempted change, masked and capped (cap_diff)


@dataclass(frozen=True)
class Error(Event):
    kind = "error"
    tool: str
    code: str
    message: str


@dataclass(frozen=True)
class ConfigReloaded(Event):
    kind = "config_reloaded"
    ok: bool
    file: str | None
    errors: list[str]


@dataclass(frozen=True)
class Recovered(Event):
    kind = "recovered"
    paths: list[str]  # put back as they were before the interrupted write
    kept: list[str]  # changed by someone since: left as found
    message: str
    tool: str | None
    committed: bool
    writer: int | None  # pid of the writer that died


@dataclass(frozen=True)
class SemanticProgress(Event):
    kind = "semantic_progress"
    model: str
    indexed: int
    total: int


EVENTS: tuple[type[Event], ...] = (
    ServerStarted,
    ServerStopped,
    Read,
    Commit,
    Noop,
    Conflict,
    Rejected,
    Error,
    ConfigReloaded,
    Recovered,
    SemanticProgress,
)

# Every kind the journal holds, with the fields each one carries besides COMMON (optional ones
# included): read off the event types, so it cannot drift from what is written.
KINDS: dict[str, tuple[str, ...]] = {
    e.kind: tuple(f.name for f in dataclasses.fields(e)) for e in EVENTS
}

MAX_DIFF_BYTES = 8 * 1024
# Any other text field (an error that quotes its arguments, a list of every heading) is kept to
# this many chars: the journal is a record of outcomes, not a copy of the model's payloads.
MAX_FIELD_CHARS = 4_000


# Chinese, Japanese and Korean script: about one token a character, where Latin text takes about
# four characters a token; counting both alike put a Chinese result at a quarter of its cost.
_WIDE = re.compile(
    "[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f"
    "\uff00-\uff60\uffe0-\uffe6\U00020000-\U0003fffd]"
)
TOKEN_RULE = (
    "estimate: a Chinese, Japanese or Korean character ≈ 1 token, other text 4 chars ≈ 1 token"
)


def parse_time(ts: object) -> datetime | None:
    """A time as the journal writes it (ISO 8601, `Z` or an offset) as an aware datetime; None
    for anything else (a hand-edited or foreign line). The one reader of journal and state
    times: the dashboard, the stats, the reads and the context preview all use it."""
    if not isinstance(ts, str):
        return None
    try:
        at = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def event_time(event: dict[str, Any]) -> datetime | None:
    """When a journal event happened (its `ts`), or None."""
    return parse_time(event.get("ts"))


def estimate_tokens(text: str) -> int:
    """Tokens a model reads for `text`, roughly (see TOKEN_RULE): no tokenizer is loaded."""
    latin = len(_WIDE.sub("", text))
    return (len(text) - latin) + (latin + 3) // 4


def now_iso() -> str:
    """UTC timestamp with milliseconds, e.g. 2026-10-02T09:14:03.120Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def cap_diff(diff: str, limit: int = MAX_DIFF_BYTES) -> str:
    """Cut a diff to `limit` UTF-8 bytes on a character boundary, marking the cut. Secrets are
    masked first, so a cut cannot leave the start of one behind."""
    diff = mask_secrets(diff)
    raw = diff.encode("utf-8")
    if len(raw) <= limit:
        return diff
    return raw[: limit - 40].decode("utf-8", "ignore") + "\n… diff cut at 8 KB\n"


def _kept(value: Any, key: str = "") -> Any:
    """An event field as the journal keeps it: every string masked, then capped."""
    if isinstance(value, str):
        if key == "diff":
            return cap_diff(value)
        value = mask_secrets(value)
        if len(value) > MAX_FIELD_CHARS:
            value = value[: MAX_FIELD_CHARS - 20] + f"… ({len(value)} chars)"
        return value
    if isinstance(value, dict):
        return {_kept(k): _kept(v, k if isinstance(k, str) else "") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_kept(v) for v in value]
    return value


class Journal:
    """Appends events for one server process."""

    def __init__(self, path: Path, client: str = "unknown") -> None:
        self.path = path
        self.client = client
        self.pid = os.getpid()

    def append(self, event: Event, *, client: str | None = None) -> dict[str, Any]:
        """Append one event (`client` overrides the process's client for this line); returns
        the line as written."""
        if type(event) not in EVENTS:
            raise ValueError(f"not a journal event: {event!r}")
        kind = event.kind
        line_fields: dict[str, Any] = {
            "v": SCHEMA_VERSION,
            "ts": now_iso(),
            "pid": self.pid,
            "client": client or self.client,
            "kind": kind,
        }
        line_fields.update(event.fields())
        event_out = _kept(line_fields)  # nothing we keep holds a secret: every field, the diff too
        line = (json.dumps(event_out, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        try:
            # never through a link: a journal that is a symlink would append every event
            # (attempted diffs included) to whatever file it names (adversarial pass 3, N15),
            # a state folder that is one, to a journal anywhere (issue 27)
            fd = open_state(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            # The journal records the work; it is not the work. A broken one (a directory in
            # its place, a full disk) never turns a tool's outcome, or a commit, into a failure.
            log.warning("journal not written (%s): %s event lost", exc, kind)
        return event_out


@dataclass
class JournalReader:
    """Follows the journal from a byte offset; `poll()` returns the events added since."""

    path: Path
    offset: int = 0
    _partial: bytes = field(default=b"", repr=False)

    def poll(self) -> list[dict[str, Any]]:
        return list(_parse_lines(self._lines()))

    def poll_tail(self, most: int) -> tuple[list[bytes], list[dict[str, Any]]]:
        """As `poll`, but only the newest `most` lines parsed: the lines before them are
        returned as they are, for `parse_lines` later. Parsing is the cost of a read (5,000
        events: ~40 ms of JSON), and a screen wants the newest first."""
        lines = self._lines()
        cut = max(0, len(lines) - most)
        return lines[:cut], list(_parse_lines(lines[cut:]))

    def _lines(self) -> list[bytes]:
        """The whole lines added since the last read (a line still being written waits)."""
        try:
            fh = _open_journal(self.path)
        except FileNotFoundError:
            return []
        if fh is None:
            return []
        with fh:
            size = os.fstat(fh.fileno()).st_size
            if size < self.offset:  # truncated or replaced: start again
                self.offset, self._partial = 0, b""
            if size == self.offset:
                return []
            fh.seek(self.offset)
            chunk = fh.read(size - self.offset)
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # empty when the chunk ended on a newline
        return lines


def parse_lines(lines: list[bytes]) -> list[dict[str, Any]]:
    """The well-formed events of these journal lines, in order (`poll_tail`'s older lines)."""
    return list(_parse_lines(lines))


def _parse_lines(lines: list[bytes]) -> Iterator[dict[str, Any]]:
    for raw in lines:
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):  # a line nested too deep is damage too
            continue
        if isinstance(event, dict) and isinstance(event.get("v"), int) and "kind" in event:
            yield event


def read_all(path: Path, kinds: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every well-formed event in the journal, oldest first; with `kinds`, only events of
    those kinds (a line that does not even spell one is skipped unparsed: reads are most of a
    journal, and parsing them is most of the cost)."""
    return JournalReader(path).poll() if kinds is None else _of_kinds(path, kinds)


def _open_journal(path: Path) -> BinaryIO | None:
    """The journal opened to read, never through a symbolic link (it would show another
    file's lines as our events): None for one that is a link (read as empty, with a warning)."""
    try:
        if through_link(path):
            raise OSError(errno.ELOOP, "in a state folder that is a link")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        log.warning("%s is a symbolic link; not read (remove it: vaultwatch remakes it)", path)
        return None
    return os.fdopen(fd, "rb")


def _of_kinds(path: Path, kinds: Collection[str]) -> list[dict[str, Any]]:
    try:
        fh = _open_journal(path)
    except FileNotFoundError:
        return []
    if fh is None:
        return []
    with fh:
        data = fh.read()
    # the lines that spell one of the kinds (as json.dumps writes it): each place a name is
    # found, widened to its line, rather than a test of every line in Python
    names = re.compile(b"|".join(re.escape(json.dumps(k).encode()) for k in kinds) or b"(?!)")
    lines: list[bytes] = []
    end = -1
    for m in names.finditer(data):
        if m.start() < end:
            continue  # the line already taken
        start = data.rfind(b"\n", 0, m.start()) + 1
        end = data.find(b"\n", m.end())
        end = len(data) if end < 0 else end
        lines.append(data[start:end])
    return [e for e in _parse_lines(lines) if e["kind"] in kinds]
