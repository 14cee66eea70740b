"""The owner's feedback to the AI: add a comment on a note (a hunk, a line, a commit), list,
close and reopen. Plain Python, no Textual: the dashboard's `c` and `F` and the `vaultwatch
feedback` commands call these. Storage (a git ref beside the review marks) and the rules of
status live in server.write.feedback; here are the owner's checks, with refusals worded for the
owner (ActionError, nothing written).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from app.services.actions import ActionError
from app.services.wording import plural
from server.core.git_run import git
from server.notes.paths import PathRefused, normalize_rel
from server.write.feedback import (
    ANSWERED,
    CLOSED,
    OPEN,
    QUOTE_MAX,
    Feedback,
    FeedbackError,
    add,
    read_all,
    set_state,
)

__all__ = [
    "ANSWERED",
    "CLOSED",
    "OPEN",
    "Feedback",
    "FeedbackCount",
    "add_feedback",
    "answer_diff",
    "close_feedback",
    "count",
    "list_feedback",
    "reopen_feedback",
]


def _note(root: Path, raw: str) -> str:
    """The note's path as stored: clean, relative, a file in the vault (or in HEAD: a note the
    owner has just deleted can still be commented on)."""
    try:
        rel = normalize_rel(raw)
    except PathRefused as exc:
        raise ActionError(exc.message) from None
    if rel.split("/")[0].startswith("."):
        raise ActionError(f"{rel} is inside a dot-folder, not a note")
    if (root / rel).is_file() or os.path.islink(root / rel):
        return rel
    r = git(root, "cat-file", "-e", f"HEAD:{rel}", check=False)
    if r.returncode == 0:
        return rel
    raise ActionError(f"{rel} is not a note in this vault (no such file); nothing saved")


def _commit(root: Path, raw: str) -> str:
    r = git(root, "rev-parse", "-q", "--verify", f"{raw}^{{commit}}", check=False)
    sha = r.stdout.decode().strip()
    if r.returncode != 0 or not sha or raw.startswith("-"):
        raise ActionError(f"{raw} is not a commit in this vault; nothing saved")
    return sha


def _line_text(root: Path, rel: str, line: int) -> str:
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        raise ActionError(
            f"{rel} has {plural(len(lines), 'line')}; --line {line} is not one of them; nothing saved"
        )
    return lines[line - 1]


def add_feedback(
    root: Path,
    path: str,
    text: str,
    *,
    line: int | None = None,
    end: int | None = None,
    commit: str | None = None,
    quote: str | None = None,
) -> Feedback:
    """A new open comment on note `path` (its lines `line`..`end`, the commit it is about);
    `quote` is what the owner was looking at (a hunk), else the line as on disk now."""
    rel = _note(root, path)
    sha = _commit(root, commit) if commit else None
    if line is not None and quote is None:
        quote = _line_text(root, rel, line)
    if end is not None and line is not None and end < line:
        raise ActionError(f"lines {line}-{end} run backwards; nothing saved")
    try:
        return add(root, rel, text, line=line, end=end, quote=(quote or "")[:QUOTE_MAX], commit=sha)
    except FeedbackError as exc:
        raise ActionError(exc.message) from None


def _state(root: Path, fid: str, state: str) -> Feedback:
    try:
        set_state(root, fid.strip(), state)
    except FeedbackError as exc:
        raise ActionError(exc.message) from None
    done = next((i for i in read_all(root) if i.id == fid.strip()), None)
    if done is None:  # written and gone: another dashboard cannot delete items; not expected
        raise ActionError(f"{fid} was saved but is not listed; run `vaultwatch feedback list`")
    return done


def close_feedback(root: Path, fid: str) -> Feedback:
    return _state(root, fid, CLOSED)


def reopen_feedback(root: Path, fid: str) -> Feedback:
    """Open again: an answer the owner did not accept no longer counts."""
    return _state(root, fid, OPEN)


def list_feedback(root: Path, *, include_closed: bool = False) -> list[Feedback]:
    """The owner's items, newest first: open and answered (and closed ones when asked). The
    owner sees every item, on private notes too: the privacy rule is for the AI."""
    items = read_all(root)
    if not include_closed:
        items = [i for i in items if i.status != CLOSED]
    return list(reversed(items))


@dataclass(frozen=True)
class FeedbackCount:
    open: int
    answered: int

    @property
    def total(self) -> int:
        return self.open + self.answered


def count(root: Path) -> FeedbackCount:
    items = read_all(root)
    return FeedbackCount(
        sum(i.status == OPEN for i in items), sum(i.status == ANSWERED for i in items)
    )


def answer_diff(root: Path, item: Feedback, limit: int = 200_000) -> str:
    """The answering commit's change to the item's note (all of the commit when it did not
    touch that note), as a unified diff; "" when the item is not answered."""
    if not item.answered_by:
        return ""
    args = ["show", "--no-color", "--format=%h %s", "--no-ext-diff", item.answered_by]
    out = git(root, *args, "--", item.path, check=False).stdout
    if len(out.decode("utf-8", "replace").splitlines()) <= 2:  # nothing in that note
        out = git(root, *args, check=False).stdout
    text = out.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "\n… (cut)"
