"""Review marks: which AI commits the owner has reviewed, read from and written to the notes ref
`refs/notes/vaultwatch-review` (one note per commit, the paths reviewed in it). Plain Python."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from app.services.actions import ActionError
from app.services.history import (
    COMMIT_FIELDS,
    Commit,
    cat_blobs,
    commit_of,
)
from app.services.rewritten import NOTES_REF, follow_rebases
from app.services.wording import plural
from server.core.faults import crash_point
from server.core.git_log import read_log
from server.core.git_run import git, human_identity
from server.core.state_files import open_state, state_dir

ALL_REVIEWED = "Reviewed-all: yes"  # in a note: every file of the commit is reviewed
# ------------------------------------------------------------------------------------------------
# reading: commits with their marks


@dataclass(frozen=True)
class Marked:
    commit: Commit
    parents: tuple[str, ...]
    reviewed: frozenset[str]  # paths marked reviewed in this commit's note


class Marks(NamedTuple):
    """The review notes, commit sha -> the note's text, and why they could not be read (then
    there are none: every AI change counts as unreviewed, and the warning says so)."""

    notes: dict[str, str]
    warning: str | None = None


MARKS_UNREADABLE = (
    "the review marks ({ref}) cannot be read ({why}); every AI change is shown as unreviewed "
    "until they can. To fix: `git update-ref -d {ref}` drops them (the changes come back to "
    "review), or restore the ref from a backup"
)


def read_marks(root: Path) -> Marks:
    """Every review note, read apart from the commit log: `git notes list`, then the note
    blobs. A note's text can hold any byte (the record separators of a log format too: a
    forged record could settle any commit), so it never shares a stream with commit records.
    No ref: no marks. A ref git cannot read (a blob, a missing object): no marks, and a
    warning, never "nothing to review" (adversarial pass 3, N3)."""
    ref = git(root, "rev-parse", "-q", "--verify", NOTES_REF, check=False)
    if ref.returncode != 0:
        return Marks({})
    r = git(root, "notes", f"--ref={NOTES_REF}", "list", check=False)
    said = r.stderr.decode("utf-8", "replace").strip().splitlines()
    if r.returncode != 0:
        return Marks({}, MARKS_UNREADABLE.format(ref=NOTES_REF, why=said[-1] if said else "?"))
    pairs = [ln.split() for ln in r.stdout.decode("ascii", "replace").splitlines()]
    pairs = [p for p in pairs if len(p) == 2]
    blobs = cat_blobs(root, [blob for blob, _ in pairs])
    if any(b is None for b in blobs):
        why = "a note's object is missing"
        return Marks({}, MARKS_UNREADABLE.format(ref=NOTES_REF, why=why))
    return Marks(
        {
            sha: (b or b"").decode("utf-8", "replace")
            for (_, sha), b in zip(pairs, blobs, strict=True)
        }
    )


def _log(
    root: Path, *args: str, stdin: list[str] | None = None, marks: Marks | None = None
) -> list[Marked]:
    """Commits with their files (and, given `marks`, what is marked reviewed in each), newest
    first, through one `git log` (with `stdin`: exactly these commits)."""
    if stdin is not None and not stdin:
        return []
    extra = ["--no-walk=unsorted", "--stdin"] if stdin is not None else []
    records = read_log(
        root,
        (*COMMIT_FIELDS, "parents"),
        "--no-notes",
        "--name-only",
        "-z",
        "--no-renames",
        *extra,
        *args,
        input=("\n".join(stdin) + "\n").encode() if stdin else None,
    )
    out = []
    for rec in records or []:  # None: an unborn branch
        note = marks.notes.get(rec.sha, "") if marks else ""
        out.append(Marked(commit_of(rec), rec.parents, frozenset(parse_note(note))))
    return out


def parse_note(text: str) -> list[str]:
    """The paths a review note marks. Lines are split at LF only: str.splitlines also breaks at
    U+2028, U+0085 and \x1c-\x1e, so `Reviewed: plan.md\u2028 (summary).md` read back as a
    mark for `plan.md` (adversarial pass 3, N2)."""
    return [ln[len("Reviewed: ") :] for ln in text.split("\n") if ln.startswith("Reviewed: ")]


@dataclass(frozen=True)
class _Head:
    """A commit as the quick scan sees it: no file list (that is the costly part of a log)."""

    sha: str
    is_ai: bool
    reverts: tuple[str, ...]
    path_reverts: tuple[tuple[str, str], ...]  # (sha, path) from Vaultwatch-Reverts-Path
    settled: bool  # its note says every file of it is reviewed


_SCAN = ("sha", "tool", "reverts", "reverts_path")


def _scan(root: Path, marks: Marks, *rng: str) -> list[_Head]:
    """Every commit in the range with what review needs to pick the few to read in full: one
    `git log` without file lists (timed by `uv run python -m bench --only review`)."""
    out = []
    for rec in read_log(root, _SCAN, "--no-notes", *rng) or []:
        note = marks.notes.get(rec.sha, "")
        out.append(
            _Head(
                rec.sha,
                rec.tool is not None,
                rec.reverts,
                rec.path_reverts,
                ALL_REVIEWED in note.split("\n"),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# marks


@contextlib.contextmanager
def _marks_lock(root: Path) -> Iterator[None]:
    fd = open_state(state_dir(root) / "review.lock", os.O_RDWR | os.O_CREAT)  # never a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _existing_notes(root: Path, shas: list[str]) -> dict[str, str]:
    if not shas:
        return {}
    specs = [f"{NOTES_REF}:{s[:2]}/{s[2:]}" for s in shas] + [f"{NOTES_REF}:{s}" for s in shas]
    blobs = cat_blobs(root, specs)
    out = {}
    for i, s in enumerate(shas):
        b = blobs[i] or blobs[len(shas) + i]
        if b is not None:
            out[s] = b.decode("utf-8", "replace")
    if len(out) < len(shas):  # a deeper fan-out: ask git notes itself
        for s in shas:
            if s not in out:
                r = git(root, "notes", f"--ref={NOTES_REF}", "show", s, check=False)
                if r.returncode == 0:
                    out[s] = r.stdout.decode("utf-8", "replace")
    return out


def write_marks(
    root: Path, marks: dict[str, list[str]], files: dict[str, tuple[str, ...]] | None = None
) -> int:
    """Add reviewed paths to AI commits' notes (sha -> paths), as one notes commit and one ref
    update (`git fast-import`). With `files` (sha -> every file the commit changed), a note
    that now covers them all says so (`Reviewed-all: yes`): the next scan skips the commit
    without reading its files. Returns how many commits got new marks."""
    marks = {s: sorted(set(p)) for s, p in marks.items() if p}
    if not marks:
        return 0
    follow_rebases(root)  # a rebase (the Obsidian Git plugin's sync) carries the marks along
    name, email = human_identity(root)
    now = datetime.now(UTC)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    with _marks_lock(root):
        old = git(root, "rev-parse", "-q", "--verify", NOTES_REF, check=False).stdout.strip()
        have = _existing_notes(root, list(marks)) if old else {}
        stream = []
        msg = f"vaultwatch: {plural(len(marks), 'commit')} reviewed\n".encode()
        stream.append(
            f"commit {NOTES_REF}\ncommitter {name} <{email}> {int(now.timestamp())} +0000\n".encode()
            + b"data %d\n" % len(msg)
            + msg
        )
        if old:
            stream.append(b"from " + old + b"\n")
        changed = 0
        for sha, paths in marks.items():
            prev = have.get(sha, "")
            done = set(parse_note(prev))
            new = [p for p in paths if p not in done]
            if not new:
                continue
            changed += 1
            block = "".join(f"Reviewed: {p}\n" for p in new)
            block += f"Reviewed-by: {name} <{email}>\nReviewed-at: {stamp}\n"
            if files is not None and set(files.get(sha, ("",))) <= done | set(new):
                block += ALL_REVIEWED + "\n"
            body = (prev.rstrip("\n") + "\n\n" + block if prev.strip() else block).encode()
            stream.append(f"N inline {sha}\n".encode() + b"data %d\n" % len(body) + body)
        if not changed:
            return 0
        stream.append(b"\n")
        r = git(root, "fast-import", "--quiet", input=b"".join(stream), check=False)
        if r.returncode != 0:
            said = r.stderr.decode(errors="replace").strip().splitlines()
            raise ActionError(f"the review marks were not saved: {said[-1] if said else '?'}")
        crash_point("marks_written")
    return changed


def listed_commit(root: Path, sha: str) -> str:
    """The full id of `sha`, a commit in the branch's history (what a review listing showed
    is marked by it). ActionError when it is not a commit id, or not in HEAD's history (a
    rebase rewrote it: list again)."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,64}", sha):
        raise ActionError(f"{sha!r} is not a commit id (the one `vaultwatch review` printed)")
    r = git(
        root, "rev-parse", "-q", "--verify", "--end-of-options", f"{sha}^{{commit}}", check=False
    )
    full = r.stdout.decode().strip()
    if r.returncode != 0 or not full:
        raise ActionError(f"{sha} is not a commit here; run `vaultwatch review` again")
    if git(root, "merge-base", "--is-ancestor", full, "HEAD", check=False).returncode != 0:
        raise ActionError(
            f"{sha} is no longer in the branch's history (rewritten since it was listed); "
            "run `vaultwatch review` again"
        )
    return full
