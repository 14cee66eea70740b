"""Commits as we write and read them: the trailers (one set of names for writer and reader), the
`git log` record format with its one reader (`read_log`, `parse_log`, `LogRecord`), and renames."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from server.core.git_run import git

# The commit trailers, written by the server (the AI's tool and client, the owner's snapshot) and
# by the dashboard's owner actions, and read back by the history, review and feed. One set of
# names: a writer and a reader can never spell one differently.
TOOL = "Vaultwatch-Tool"  # the AI tool that made the commit: its presence makes it an AI commit
CLIENT = "Vaultwatch-Client"  # the MCP client (name/version) that called the tool
ACTION = (
    "Vaultwatch-Action"  # an owner action: revert, undo, move, create, remove, snapshot, import
)
REVERTS = "Vaultwatch-Reverts"  # one per commit a revert undoes: the "reverted" marks
# "<sha> <path>": a revert took back only this commit's change to one file (not a full revert)
REVERTS_PATH = "Vaultwatch-Reverts-Path"
UNDOES = "Vaultwatch-Undoes"  # on an undo commit: the AI commits whose lines it took back
ANSWERS = "Vaultwatch-Answers"  # on an AI commit: the owner's feedback (id) the write answers

# A trailer value is one line of printable text: git ends the trailer block at a blank line
# and reads any "Key: value" line inside it as a trailer, so a client name carrying a newline
# could hide `Vaultwatch-Tool` (the dashboard would take the AI commit for the owner's) or
# forge `Vaultwatch-Action`. The name comes from the peer, so it is made safe where trailers
# are written, and capped so one peer cannot bloat every commit.
TRAILER_VALUE_MAX = 120


def printable(text: str) -> str:
    """`text` with every character that is not printable (newlines included) made a space:
    a path or name put in a commit message can then never start a line of its own."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def trailer_value(value: str) -> str:
    """`value` as one printable line of at most TRAILER_VALUE_MAX chars ("unknown" if empty)."""
    text = " ".join(printable(value[: TRAILER_VALUE_MAX * 4]).split())
    if len(text) > TRAILER_VALUE_MAX:
        text = text[: TRAILER_VALUE_MAX - 1] + "…"
    return text or "unknown"


def commit_message(
    subject: str, trailers: Mapping[str, str] | Iterable[tuple[str, str]], body: str = ""
) -> str:
    """`subject` (one line), a blank line, `body` (its own paragraphs, if any), then one
    `Key: value` line per trailer (a key may repeat). Every value is made one printable line;
    a value that comes from a peer (a client's name) goes through `trailer_value` first."""
    head = " ".join(printable(subject).split()) or "(no subject)"
    pairs = trailers.items() if isinstance(trailers, Mapping) else trailers
    lines = "".join(f"{key}: {printable(value)}\n" for key, value in pairs)
    para = body.strip("\n") + "\n\n" if body.strip("\n") else ""
    return f"{head}\n\n{para}{lines}"


def trailer_field(key: str, separator: str = "") -> str:
    """The `git log --format` placeholder for every value of trailer `key`, joined by
    `separator` (a git format escape such as %x2C)."""
    return f"%(trailers:key={key},valueonly,separator={separator})"


def trailer_values(field: str, separator: str = ",") -> tuple[str, ...]:
    """The values a `trailer_field` printed, split back (blanks dropped)."""
    return tuple(v.strip() for v in field.split(separator) if v.strip())


# -- commits as `git log` prints them: one record format and one reader ---------------------------
# Every reader of commits and their trailers (the history, review, stats, feedback) asks for the
# fields it needs by name; the placeholders, separators and parsing of each are written here once.
FIELD, RECORD = "\x1f", "\x1e"  # between a record's fields; before each record
PATH_SEPARATOR = "\x1d"  # between Vaultwatch-Reverts-Path values (a path may hold a comma)
LOG_FIELDS: dict[str, str] = {
    "sha": "%H",
    "parents": "%P",
    "author": "%an",
    "email": "%ae",
    "time": "%at",  # author time: kept by a rebase
    "subject": "%s",
    # who wrote it when, and what it says: equal for a rebased commit and its original
    "ident": "%an %ae %ad %s",
    "tool": trailer_field(TOOL),
    "client": trailer_field(CLIENT),
    "action": trailer_field(ACTION),
    "reverts": trailer_field(REVERTS, "%x2C"),
    "reverts_path": trailer_field(REVERTS_PATH, "%x1d"),
    "undoes": trailer_field(UNDOES, "%x2C"),
    "answers": trailer_field(ANSWERS, "%x2C"),
}


class LogRecord(NamedTuple):
    """One commit as `git log` printed the fields asked for (the others stay empty). A tuple:
    stats reads 10,000 of them per run."""

    sha: str = ""
    parents: tuple[str, ...] = ()
    author: str = ""
    email: str = ""
    time: int = 0  # epoch seconds
    subject: str = ""
    ident: str = ""
    tool: str | None = None  # Vaultwatch-Tool: present on every AI commit
    client: str | None = None
    action: str | None = None
    reverts: tuple[str, ...] = ()  # the commits a revert undoes
    reverts_path: tuple[str, ...] = ()  # "<sha> <path>": one file's change taken back
    undoes: tuple[str, ...] = ()  # the AI commits whose lines an undo took back
    answers: tuple[str, ...] = ()  # the owner's feedback ids an AI write answers
    files: tuple[str, ...] = ()  # with `--name-only -z`

    @property
    def path_reverts(self) -> tuple[tuple[str, str], ...]:
        """(commit, path) of each one-file revert (a value without both is no such revert)."""
        pairs = (v.partition(" ") for v in self.reverts_path)
        return tuple((sha, path) for sha, _, path in pairs if sha and path)

    @property
    def took_back(self) -> tuple[str, ...]:
        """Every commit a revert or an undo took back, whole or one file of it."""
        if not (self.reverts or self.reverts_path or self.undoes):
            return ()
        one_file = (v.split(" ", 1)[0] for v in self.reverts_path)
        return tuple(dict.fromkeys([*self.reverts, *one_file, *self.undoes]))


def _values(v: str) -> tuple[str, ...]:
    return trailer_values(v) if v else ()


def _optional(v: str) -> str | None:
    return v or None


# How each field's text becomes its value (a field not named here is its text, stripped). A
# ValueError (a time that is not a number) drops the record.
_CONVERT: dict[str, Callable[[str], Any]] = {
    "time": int,
    "parents": lambda v: tuple(v.split()),
    "tool": _optional,
    "client": _optional,
    "action": _optional,
    "reverts": _values,
    "undoes": _values,
    "answers": _values,
    "reverts_path": lambda v: trailer_values(v, PATH_SEPARATOR) if v else (),
}
_FILES = LogRecord._fields.index("files")


def log_format(fields: tuple[str, ...]) -> str:
    """The `git log --format` value for these fields (names of LOG_FIELDS)."""
    return RECORD + FIELD.join(LOG_FIELDS[f] for f in fields)


def parse_log(out: str, fields: tuple[str, ...]) -> list[LogRecord]:
    """The records `git log --format=<log_format(fields)>` printed, newest first; with
    `--name-only -z`, each with its files (the NUL-separated names after its fields)."""
    slots = [(LogRecord._fields.index(f), _CONVERT.get(f)) for f in fields]
    empty = list(LogRecord())
    records = []
    for rec in out.split(RECORD)[1:]:
        head, _, names = rec.partition("\x00")
        parts = head.split(FIELD)
        if len(parts) < len(slots):
            continue
        row = empty.copy()
        try:
            for (i, convert), part in zip(slots, parts, strict=False):
                text = part.strip()
                row[i] = convert(text) if convert is not None else text
        except ValueError:
            continue
        if names:
            row[_FILES] = tuple(f.strip("\n") for f in names.split("\x00") if f.strip("\n"))
        records.append(LogRecord._make(row))
    return records


def read_log(
    root: Path, fields: tuple[str, ...], *args: str, input: bytes | None = None
) -> list[LogRecord] | None:
    """`git log` with these fields and `args` (revisions, `--name-only -z`, ...), or None when
    git fails (an unborn branch: no history yet)."""
    r = git(root, "log", f"--format={log_format(fields)}", *args, check=False, input=input)
    if r.returncode != 0:
        return None
    return parse_log(r.stdout.decode("utf-8", "replace"), fields)


class Rename(NamedTuple):
    sha: str  # the commit that moved the file
    when: int  # its commit time, epoch seconds
    old: str
    new: str


def renames(root: Path, *rng: str, since: int | None = None) -> list[Rename]:
    """Each rename in these commits (HEAD's history by default) as git's rename detection sees
    it (`git log -M`), newest first; with `since` (epoch seconds) only commits from then on.
    The one reader of renames: the Reads screen follows a moved note by time, review by commit.
    `-z`: a Chinese path (or one with a tab) comes unquoted."""
    args = ["log", "-M", "--diff-filter=R", "--name-status", "-z", "--format=%x1e%H %ct"]
    args += [*([f"--since={since}"] if since is not None else []), *(rng or ["HEAD"])]
    r = git(root, *args, check=False)
    if r.returncode != 0:  # no commit yet, or git could not tell: no renames known
        return []
    out: list[Rename] = []
    for rec in r.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
        head, _, rest = rec.partition("\x00")
        sha, _, when = head.strip().partition(" ")
        items = [i.strip("\n") for i in rest.split("\x00")]
        for i, item in enumerate(items):
            if item.startswith("R") and i + 2 < len(items):
                out.append(Rename(sha, int(when or 0), items[i + 1], items[i + 2]))
    return out
