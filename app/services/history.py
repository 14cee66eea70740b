"""The vault's commits, read with one `git log` call, and the file contents of one commit's
change (for the diff pane). No Textual here: the screens render what this returns."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Protocol

from app.services.actions import ActionError
from server.core.git_log import LogRecord, read_log
from server.core.git_run import cat_blobs, git

# A commit's fields as the history reads them (server/core/gitrepo.py's one `git log` reader).
COMMIT_FIELDS = ("sha", "author", "email", "time", "subject", "tool", "client", "action", "reverts")


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    email: str
    time: datetime
    subject: str
    tool: str | None  # Vaultwatch-Tool: the AI tool that made it
    client: str | None  # Vaultwatch-Client
    action: str | None  # Vaultwatch-Action: revert, move, create, remove, snapshot, import
    files: tuple[str, ...]
    reverts: tuple[str, ...] = ()  # Vaultwatch-Reverts: the commits this one undoes

    @property
    def short(self) -> str:
        return self.sha[:8]

    @property
    def is_ai(self) -> bool:
        return self.tool is not None


def read_commits(
    root: Path, limit: int | None = None, rev: str = "HEAD", skip: int = 0
) -> list[Commit]:
    """Newest first, through one git process (timed on 10,000 commits by
    `uv run python -m bench --only dashboard`: whole history loaded)."""
    args = ["--name-only", "-z", "--no-renames"]
    if limit:
        args.append(f"-n{limit}")
    if skip:
        args.append(f"--skip={skip}")
    # --end-of-options: `rev` can come from the owner's shell (`revert -- --output=FILE`
    # made git log write a file: adversarial pass 3, N14)
    records = read_log(root, COMMIT_FIELDS, *args, "--end-of-options", rev)
    return [commit_of(r) for r in records or []]  # None: an unborn branch has no history yet


def commit_of(rec: LogRecord) -> Commit:
    """A `git log` record (read with COMMIT_FIELDS, files if it has them) as a Commit."""
    return Commit(
        rec.sha,
        rec.author,
        rec.email,
        datetime.fromtimestamp(rec.time, UTC),
        rec.subject,
        rec.tool,
        rec.client,
        rec.action,
        rec.files,
        rec.reverts,
    )


# ------------------------------------------------------------------------------------------------
# periods: what `--since` means (review and stats)


class NotAPeriod(ActionError):
    """A period that is none. `str()` says it in the shell's words (`--since 'x': ...`);
    `why` without the option, for a screen whose box the owner typed it in (the review's date
    box answered with `--since`, an option it never showed)."""

    def __init__(self, since: str, why: str, shell: str) -> None:
        super().__init__(shell)
        self.since = since
        self.why = why


def since_time(since: str, now: datetime | None = None) -> datetime | None:
    """The moment a `--since` of today, Nd (days) or YYYY-MM-DD starts, in the owner's local
    time; None for any other word (a git revision, for the caller to resolve). ActionError for
    a date that is not one."""
    now = (now or datetime.now()).astimezone()
    if since == "today":
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    if re.fullmatch(r"\d+d", since):
        return now - timedelta(days=int(since[:-1]))
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", since):
        try:
            d = date.fromisoformat(since)
        except ValueError:
            why = "is not a date (YYYY-MM-DD)"
            raise NotAPeriod(since, why, f"{since} {why}") from None
        if d > now.date():  # a typo of the year, most likely: an empty period would hide it
            why = f"is in the future (today is {now:%Y-%m-%d}); give a date up to today"
            raise NotAPeriod(since, why, f"--since {since} {why}")
        return datetime(d.year, d.month, d.day).astimezone()
    return None


def parse_since(root: Path, since: str) -> str | None:
    """The commit a period starts after (None: the start of history), for `--since`:
    today, Nd (days), YYYY-MM-DD, or any git revision. ActionError when it is none of these."""
    when = since_time(since)
    if when is not None:
        r = git(root, "rev-list", "-1", f"--before={int(when.timestamp())}", "HEAD", check=False)
        return r.stdout.decode().strip() or None
    r = git(
        root, "rev-parse", "-q", "--verify", "--end-of-options", f"{since}^{{commit}}", check=False
    )
    if r.returncode != 0 or not since or since.startswith("-"):
        kinds = "today, a number of days (7d), a date (YYYY-MM-DD) or a commit"
        raise NotAPeriod(
            since, f"is not a period: give {kinds}", f"--since {since!r}: not last, {kinds}"
        )
    return r.stdout.decode().strip()


def is_ancestor(root: Path, old: str, new: str) -> bool:
    return git(root, "merge-base", "--is-ancestor", old, new, check=False).returncode == 0


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # A, M, D, R
    old_path: str | None
    old: str  # text before ("" for an added file)
    new: str  # text after ("" for a deleted file)


def commit_changes(root: Path, sha: str) -> list[FileChange]:
    """Each file a commit changed, with its text before and after (renames detected)."""
    return commit_changes_upto(root, sha, None)[0]


def commit_changes_upto(root: Path, sha: str, most: int | None) -> tuple[list[FileChange], int]:
    """The first `most` files a commit changed (all when None), with their texts, and how many
    it changed in all: a vault's import commit can hold 10,000 notes, too many to read for a
    diff pane."""
    raw = git(
        root, "diff-tree", "-r", "-M", "--no-commit-id", "--name-status", "-z", "--root", sha
    ).stdout.decode("utf-8", "replace")
    items = [x for x in raw.split("\x00") if x]
    entries: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(items):
        status = items[i]
        if status.startswith(("R", "C")):
            entries.append((status[0], items[i + 2], items[i + 1]))
            i += 3
        else:
            entries.append((status[0], items[i + 1], None))
            i += 2
    total = len(entries)
    entries = entries if most is None else entries[:most]
    parent = f"{sha}^"
    wanted = []
    for status, path, old_path in entries:
        wanted.append(f"{parent}:{old_path or path}" if status != "A" else "")
        wanted.append(f"{sha}:{path}" if status != "D" else "")
    blobs = _cat(root, wanted)
    changes = [
        FileChange(path, status, old_path, blobs[2 * k], blobs[2 * k + 1])
        for k, (status, path, old_path) in enumerate(entries)
    ]
    return changes, total


def _cat(root: Path, specs: list[str]) -> list[str]:
    """Contents of many `rev:path` blobs as text ("" for a missing one or an empty spec)."""
    return [b.decode("utf-8", "replace") if b is not None else "" for b in cat_blobs(root, specs)]


class Reverting(Protocol):
    """What `reverted_by` reads of a commit (a `Commit`, or a lighter record)."""

    @property
    def sha(self) -> str: ...

    @property
    def reverts(self) -> tuple[str, ...]: ...


def reverted_by(commits: Iterable[Reverting]) -> dict[str, str]:
    """Each commit whose change is undone now -> the revert that undid it. A revert that was
    itself reverted undoes nothing any more, so what it had reverted counts as live again."""
    reverters: dict[str, list[str]] = {}
    for c in commits:
        for target in c.reverts:
            reverters.setdefault(target, []).append(c.sha)
    memo: dict[str, str | None] = {}

    def undone_by(sha: str) -> str | None:
        if sha not in memo:
            memo[sha] = None  # a revert is always newer than what it reverts: no cycles
            memo[sha] = next((r for r in reverters.get(sha, ()) if undone_by(r) is None), None)
        return memo[sha]

    out: dict[str, str] = {}
    for sha in reverters:
        by = undone_by(sha)
        if by is not None:
            out[sha] = by
    return out


def line_counts(root: Path, shas: list[str]) -> dict[str, tuple[int, int]]:
    """Lines added and removed by each commit (binary files count 0), through one
    `git diff-tree --stdin`: the timeline asks only for the rows it draws. Renames are
    detected (-M, as `git show --numstat -M`): a moved note counts the lines that changed in
    it, not all of them deleted and added again (a pure rename read +125 −125)."""
    if not shas:
        return {}
    args = ["diff-tree", "--stdin", "-r", "--numstat", "--root", "-M"]
    out = git(root, *args, input=("\n".join(shas) + "\n").encode()).stdout.decode(
        "utf-8", "replace"
    )
    counts: dict[str, tuple[int, int]] = {sha: (0, 0) for sha in shas}
    current = None
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 1 and line in counts:
            current = line
        elif current is not None and len(parts) >= 3:
            added, removed = counts[current]
            counts[current] = (
                added + (int(parts[0]) if parts[0].isdigit() else 0),
                removed + (int(parts[1]) if parts[1].isdigit() else 0),
            )
    return counts


def file_versions(root: Path, path: str, limit: int = 30) -> list[tuple[Commit, str]]:
    """The newest commits that changed `path`, newest first, each with the file's text after
    it ("" where it deleted the file): what a conflict's detail compares."""
    records = read_log(root, COMMIT_FIELDS, f"-n{limit}", "--", path)
    commits = [replace(commit_of(r), files=(path,)) for r in records or []]
    texts = _cat(root, [f"{c.sha}:{path}" for c in commits])
    return list(zip(commits, texts, strict=True))
