"""Review what the AI changed since the owner last looked. Plain Python, no Textual: the review
screen and the `vaultwatch review` shell command call the same functions.

Reviewed marks live in the vault's git, in the notes ref `refs/notes/vaultwatch-review`, one
note per AI commit listing the paths the owner reviewed in it (and who, and when):

    $ git notes --ref=vaultwatch-review show <sha>
    Reviewed: weeks/2026-W49.md
    Reviewed-by: Ann <ann@example.org>
    Reviewed-at: 2026-12-03T15:04:05Z

Never in the working tree, never a commit on the branch, never in app settings: the marks
survive restarts, travel with the repo (push/fetch the ref), and two processes on one vault see
the same marks. Marking many commits is one `git fast-import` (one notes commit, one ref update).

An AI commit's change to a note is *unreviewed* until its path is marked in the commit's note,
or the commit is reverted (a change the owner took back counts as reviewed). A note's review is
one net diff from its reviewed state (the note just before its oldest unreviewed AI commit) to
the file now, every line attributed to the commit that wrote or removed it (`Line.commit`; the
owner's lines have `Line.owner` set, pending edits on disk are the owner's too).

API for a screen: `summaries(root)` (fast: one `git log`, one `git diff-tree`), then
`net_diff(root, path)` for the note the owner opens; `mark_reviewed`, `undo_hunk`,
`revert_note`; `note_view` (share of lines the AI wrote, and the note's history).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from app.services.actions import ActionError
from app.services.history import (
    COMMIT_FIELDS,
    Commit,
    FileChange,
    cat_blobs,
    commit_of,
    parse_since,
    reverted_by,
)
from app.services.revert import owner_commit, plan_revert, recover, recover_first, revert
from app.services.rewritten import NOTES_REF, follow_rebases, twins
from app.services.wording import plural
from server.core.faults import crash_point
from server.core.git_log import ACTION, UNDOES, Rename, commit_message, printable, read_log, renames
from server.core.git_run import git, human_identity
from server.core.linediff import opcodes
from server.core.state_files import open_state, state_dir
from server.write.journal import Journal
from server.write.store import FileWrite, Store

WORKTREE = "worktree"  # Line.commit of a line the owner has on disk but not yet committed
CONTEXT = 3
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
# per-note summaries


def _forward(path: str, at: int, moves: list[Rename], order: dict[str, int]) -> str:
    """Where a note the commit at `at` (0 = newest) wrote as `path` is now: through each rename
    after that commit, oldest first."""
    for move in reversed(moves):
        if order.get(move.sha, len(order)) < at and move.old == path:
            path = move.new
    return path


def _chain(path: str, moves: list[Rename]) -> tuple[Rename, ...]:
    """The renames that brought a note to `path`, newest first."""
    out = []
    for move in moves:
        if move.new == path:
            out.append(move)
            path = move.old
    return tuple(out)


@dataclass
class NoteSummary:
    path: str
    title: str
    commits: list[Commit]  # the AI commits in view that touched it, newest first
    added: int  # lines added and removed by those commits (their sum, not the net diff)
    removed: int
    tools: list[str]
    clients: list[str]
    first: datetime
    last: datetime
    reviewed: bool  # every AI change in view is marked reviewed (only in a period view)
    base: str | None  # the commit whose version of the note the net diff starts from
    # the renames that brought the note to `path` (newest first): the owner moved it after the
    # AI wrote it, and its older commits and its base hold it under an older name
    renames: tuple[Rename, ...] = ()
    names: dict[str, str] = field(default_factory=dict)  # AI commit -> the note's path in it

    def path_in(self, sha: str) -> str:
        """The note's path in one of its AI commits: what that commit's review mark names."""
        return self.names.get(sha, self.path)

    @property
    def moved_from(self) -> str | None:
        """The note's oldest name in view, when the owner moved it since the AI wrote it."""
        old = {self.path_in(c.sha) for c in self.commits} - {self.path}
        return self.renames[-1].old if old and self.renames else None


@dataclass
class Review:
    notes: list[NoteSummary]  # newest change first
    unreviewed_commits: int  # AI commits with a change the owner has not reviewed yet
    since: str  # "last" or the period asked for
    warning: str | None = None  # the review marks could not be read: all shown as unreviewed


def summaries(root: Path, since: str = "last", upto: str | None = None) -> Review:
    """The notes with AI changes to review, newest change first. `since="last"`: the changes
    not yet reviewed; otherwise every AI change in the period (`parse_since`), reviewed or not.

    Fast on a long history: a scan without file lists finds the AI commits not yet settled
    (not fully marked, not reverted), and only those are read with their files."""
    start = None if since == "last" else parse_since(root, since)
    tip = upto or "HEAD"  # `upto`: only the commits a listing showed (mark_reviewed)
    rng = [f"{start}..{tip}"] if start else [tip]
    marks = read_marks(root)
    heads = _scan(root, marks, *rng)
    inherited = _inherited_notes(root, heads, since, marks)
    if inherited:  # a rebased AI commit is as reviewed as the one it was rewritten from
        marks = Marks({**marks.notes, **inherited}, marks.warning)
        heads = _scan(root, marks, *rng)
    reverted = set(reverted_by(heads))
    path_undone = {pr for h in heads for pr in h.path_reverts}
    if since == "last":
        wanted = [h.sha for h in heads if h.is_ai and not h.settled and h.sha not in reverted]
    else:
        wanted = [h.sha for h in heads if h.is_ai]
    log = _log(root, stdin=wanted, marks=marks)
    # a note the owner moved after the AI wrote it is listed under its name now: the AI's
    # commits hold the old name, the move is an owner commit (git rename detection)
    order = {h.sha: i for i, h in enumerate(heads)}  # 0 = newest
    # since the last review only renames after the oldest change in view matter: the range is
    # cut there (git diffs every commit it walks, 10,000 of them took ~0.6 s)
    moves: list[Rename] = []
    if log:
        span = rng if since != "last" else [tip, "--not", f"{log[-1].commit.sha}^@"]
        moves = renames(root, *span)
    # path now -> (AI commit, the note's path in it), newest first
    open_: dict[str, list[tuple[Marked, str]]] = {}  # unreviewed
    seen: dict[str, list[tuple[Marked, str]]] = {}  # every AI commit in view
    unreviewed: set[str] = set()
    for m in log:
        c = m.commit
        for f in c.files:
            now = _forward(f, order.get(c.sha, len(order)), moves, order) if moves else f
            seen.setdefault(now, []).append((m, f))
            if f in m.reviewed or c.sha in reverted or (c.sha, f) in path_undone:
                continue
            open_.setdefault(now, []).append((m, f))
            unreviewed.add(c.sha)
    if since == "last":
        # a note the owner deleted has nothing left to review (the AI cannot delete: no delete
        # tool), as a reverted change: its diff was the owner's delete under the AI's headers
        for path in [p for p in open_ if not (root / p).exists()]:
            del open_[path]
        unreviewed = {m.commit.sha for ms in open_.values() for m, _ in ms}
    shown = open_ if since == "last" else seen
    counts = _file_counts(root, sorted({m.commit.sha for ms in shown.values() for m, _ in ms}))
    notes = []
    for path, ms in shown.items():
        cs = [m.commit for m, _ in ms]
        added = sum(counts.get((m.commit.sha, f), (0, 0))[0] for m, f in ms)
        removed = sum(counts.get((m.commit.sha, f), (0, 0))[1] for m, f in ms)
        last_m = ms[-1][0]
        base = (last_m.parents[0] if last_m.parents else None) if since == "last" else start
        tools = sorted({c.tool for c in cs if c.tool})
        clients = sorted({c.client for c in cs if c.client})
        names = {m.commit.sha: f for m, f in ms if f != path}
        notes.append(
            NoteSummary(
                path,
                _title(root, path),
                cs,
                added,
                removed,
                tools,
                clients,
                cs[-1].time,
                cs[0].time,
                path not in open_,
                base,
                _chain(path, moves) if moves else (),
                names,
            )
        )
    notes.sort(key=lambda n: (n.last, n.path), reverse=True)
    return Review(notes, len(unreviewed), since, marks.warning)


def _inherited_notes(root: Path, heads: list[_Head], since: str, marks: Marks) -> dict[str, str]:
    """AI commit -> the review note of the commit it was rewritten from, for AI commits not
    settled whose original (marked, no longer in history) a rebase left behind without git
    copying its note (see app.services.rewritten). Empty at no cost when no marked commit has left the
    history."""
    candidates = [h.sha for h in heads if h.is_ai and not h.settled and h.sha not in marks.notes]
    if not candidates or not marks.notes:
        return {}
    history = {h.sha for h in heads}
    if since != "last":  # the scan saw a period only: the rest of history is still history
        history |= set(git(root, "rev-list", "HEAD", check=False).stdout.decode().split())
    found = twins(root, candidates, history, list(marks.notes))
    return {c: marks.notes[o] for c, o in found.items() if o in marks.notes}


def _file_counts(root: Path, shas: list[str]) -> dict[tuple[str, str], tuple[int, int]]:
    """(sha, path) -> lines added, removed; one `git diff-tree --stdin`."""
    if not shas:
        return {}
    args = ["diff-tree", "--stdin", "-r", "--numstat", "-z", "--root", "--no-renames"]
    out = git(root, *args, input=("\n".join(shas) + "\n").encode()).stdout.decode(
        "utf-8", "replace"
    )
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    current = ""
    for item in out.split("\x00"):
        item = item.strip("\n")
        if len(item) == 40 and "\t" not in item:
            current = item
            continue
        parts = item.split("\t")
        if len(parts) == 3 and current:
            a, r, path = parts
            counts[(current, path)] = (int(a) if a.isdigit() else 0, int(r) if r.isdigit() else 0)
    return counts


def _title(root: Path, path: str) -> str:
    """The note's first `# ` heading (or `title:` in front matter), else its file name."""
    try:
        with open(root / path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        head = ""
    for line in head.splitlines():
        if line.startswith("title:"):
            return line[6:].strip().strip("\"'") or Path(path).stem
        if line.startswith("# "):
            return line[2:].strip()
    return Path(path).stem


# ------------------------------------------------------------------------------------------------
# the net diff, every line attributed


@dataclass
class Line:
    """One line of the net diff. kind: " " context, "-" removed since the base, "+" there now.
    `commit` wrote it ("+") or removed it ("-"); None for context; WORKTREE for the owner's
    pending edits on disk. `owner`: the owner's line, set apart from the AI's."""

    kind: str
    text: str
    commit: Commit | None
    owner: bool
    old_no: int | None = None  # 1-based line in the base version
    new_no: int | None = None  # 1-based line in the file now


@dataclass
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[Line]
    first: int  # position of its first element in NetDiff._elems
    end: int  # one past its last

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@"

    @property
    def ai(self) -> bool:
        return any(ln.kind != " " and not ln.owner for ln in self.lines)


@dataclass
class _Elem:
    """A line's life between the base and now: written by `origin` (None: in the base),
    taken out by `removed` (None: still there). Lines written and removed inside the range stay
    as tombstones: they are what an undo must not override."""

    text: str
    origin: Commit | None
    removed: Commit | None = None


@dataclass
class NetDiff:
    path: str
    base: str | None  # the commit the diff starts from (None: the file did not exist)
    commits: list[Commit]  # every commit in the range that touched the note, newest first
    hunks: list[Hunk]
    before: bytes | None
    after: bytes | None
    binary: bool = False
    _elems: list[_Elem] = field(default_factory=list, repr=False)

    @property
    def added(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "+")

    @property
    def removed(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "-")

    def unified(self) -> str:
        """A plain unified diff from the reviewed state to now (what `git apply` reads)."""
        if not self.hunks:
            return ""
        a = f"a/{self.path}" if self.before is not None else "/dev/null"
        b = f"b/{self.path}" if self.after is not None else "/dev/null"
        out = [f"--- {a}\n", f"+++ {b}\n"]
        for h in self.hunks:
            out.append(h.header + "\n")
            for ln in h.lines:
                out.append(ln.kind + ln.text)
                if not ln.text.endswith("\n"):
                    out.append("\n\\ No newline at end of file\n")
        return "".join(out)


def _is_owner(c: Commit | None) -> bool:
    return c is None or not c.is_ai


def _split(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True) if data else []


def _track(base: bytes | None, versions: list[tuple[Commit, bytes | None]]) -> list[_Elem]:
    """Follow every line from the base through each version, oldest first."""
    elems = [_Elem(t, None) for t in _split(base)]
    for commit, data in versions:
        live = [i for i, e in enumerate(elems) if e.removed is None]
        old = [elems[i].text for i in live]
        new = _split(data)
        inserts: list[tuple[int, list[_Elem]]] = []  # (position in elems, new elements)
        # the one bounded engine: difflib over the whole note took past 500 s on two rewrites
        # of a 1.9 MB note (adversarial pass 3, N9)
        for tag, i1, i2, j1, j2 in opcodes(old, new):
            if tag == "equal":
                continue
            for i in live[i1:i2]:
                elems[i].removed = commit
            if j2 > j1:
                # after the lines it replaces; a pure insert goes just before the next live line
                # (after any tombstones there)
                at = live[i2 - 1] + 1 if i2 > i1 else (live[i1] if i1 < len(live) else len(elems))
                inserts.append((at, [_Elem(t, commit) for t in new[j1:j2]]))
        for at, new_elems in reversed(inserts):
            elems[at:at] = new_elems
    return elems


def _hunks(elems: list[_Elem]) -> list[Hunk]:
    """Unified hunks with CONTEXT lines around each change. A line that stays from the base is
    context; every other element (tombstones too: an undo must see them) is in some hunk."""
    ctx_before = [0]  # ctx_before[i]: context lines among elems[:i]
    for e in elems:
        ctx_before.append(ctx_before[-1] + (e.origin is None and e.removed is None))
    changed = [i for i, e in enumerate(elems) if not (e.origin is None and e.removed is None)]
    groups: list[list[int]] = []
    for i in changed:
        if groups and ctx_before[i] - ctx_before[groups[-1][-1] + 1] <= 2 * CONTEXT:
            groups[-1].append(i)
        else:
            groups.append([i])
    ctx = [i for i, e in enumerate(elems) if e.origin is None and e.removed is None]
    hunks = []
    for g in groups:
        if all(elems[i].origin is not None and elems[i].removed is not None for i in g):
            continue  # only tombstones: nothing shows
        k = ctx_before[g[0]]  # context lines before the group
        before = ctx[max(0, k - CONTEXT) : k]
        k_after = ctx_before[g[-1] + 1]
        after = ctx[k_after : k_after + CONTEXT]
        lo = before[0] if before else g[0]
        hi = (after[-1] if after else g[-1]) + 1
        hunks.append(_hunk(elems, lo, hi))
    return hunks


def _hunk(elems: list[_Elem], lo: int, hi: int) -> Hunk:
    old_no = sum(1 for e in elems[:lo] if e.origin is None)
    new_no = sum(1 for e in elems[:lo] if e.removed is None)
    lines = []
    for e in elems[lo:hi]:
        if e.origin is None and e.removed is None:
            old_no, new_no = old_no + 1, new_no + 1
            lines.append(Line(" ", e.text, None, False, old_no, new_no))
        elif e.origin is None:
            old_no += 1
            lines.append(Line("-", e.text, e.removed, _is_owner(e.removed), old_no, None))
        elif e.removed is None:
            new_no += 1
            lines.append(Line("+", e.text, e.origin, _is_owner(e.origin), None, new_no))
    old_lines = [ln for ln in lines if ln.kind != "+"]
    new_lines = [ln for ln in lines if ln.kind != "-"]
    o_start = old_lines[0].old_no if old_lines else old_no
    n_start = new_lines[0].new_no if new_lines else new_no
    return Hunk(o_start or 0, len(old_lines), n_start or 0, len(new_lines), lines, lo, hi)


_WORKTREE_COMMIT = Commit(
    WORKTREE, "you", "", datetime.now(UTC), "not committed yet", None, None, None, ()
)


def net_diffs(root: Path, notes: list[NoteSummary]) -> list[NetDiff]:
    """The net diff of each note, from its base to the file now. Batched for many notes: one
    `git log` over the span of all of them, one `git cat-file`. A note the owner moved since
    its base is read under the name each commit gave it (the base's too)."""
    if not notes:
        return []
    per = _commits_since_bases(root, notes)
    specs: list[str] = []
    for n in notes:
        start, base_name, touched, _ = per[n.path, n.base]
        specs.append(f"{start}:{base_name}" if start else "")
        specs += [f"{c.sha}:{name}" for c, name in reversed(touched)]
    blobs = iter(cat_blobs(root, specs))
    out = []
    for n in notes:
        start, _, touched, merges = per[n.path, n.base]
        before = next(blobs)
        versions = [(c, next(blobs)) for c, _ in reversed(touched)]
        diff = _net(root, n.path, start, [c for c, _ in touched], before, versions, merges)
        out.append(diff)
    return out


def _name_at(note: NoteSummary, at: int, index: dict[str, int]) -> str:
    """The note's path as the commit at `at` (0 = newest) left it: its path now, back through
    each of its renames after that commit."""
    name = note.path
    for move in note.renames:  # newest first
        if index.get(move.sha, len(index) + 1) < at and name == move.new:
            name = move.old
    return name


# (path, base) -> the commit the note's versions start from, the note's path in it, the commits
# after it that touched the note with its path in each (newest first), and the merges among them
_Since = dict[tuple[str, str | None], tuple[str | None, str, list[tuple[Commit, str]], set[str]]]


def _commits_since_bases(root: Path, notes: list[NoteSummary]) -> _Since:
    """(path, base) -> where the note's versions start (the base), the note's path there, and
    the commits in base..HEAD that touched it with its path in each (an older one before the
    owner moved it), newest first; and which of them are merges.

    With merges in the range (the Obsidian Git plugin's sync in merge mode) the versions are
    those of the first-parent chain, the branch as this machine held it, merge by merge: in
    log order, a commit of the other side followed by one of this side read as the second
    taking back the first's lines, and the merge bringing them back was the owner's (or, as
    the merge had no file list, the owner's unsaved edit). Where the base is on the other
    side, the versions start where the chain left it. `_net` then gives each line a merge
    brought in to the commit that wrote it (`_merged_origins`)."""
    bases = sorted({n.base for n in notes if n.base})
    if any(n.base is None for n in notes) or not bases:
        rng = ["HEAD"]
    elif len(bases) == 1:
        rng = [f"{bases[0]}..HEAD"]
    else:
        mb = git(root, "merge-base", "--octopus", *bases, check=False).stdout.decode().strip()
        rng = [f"{mb}..HEAD"] if mb else ["HEAD"]
    merges = git(root, "rev-list", "--min-parents=2", "--count", *rng, check=False)
    out: _Since = {}

    def touched(
        n: NoteSummary,
        log: list[Commit],
        index: dict[str, int],
        limit: int,
        start: str | None,
        merged: set[str],
    ) -> None:
        names = [(c, _name_at(n, index[c.sha], index)) for c in log if index[c.sha] < limit]
        out[n.path, n.base] = (
            start,
            _name_at(n, limit, index),
            [(c, name) for c, name in names if name in c.files],
            merged,
        )

    if merges.stdout.strip() not in (b"0", b""):
        for n in notes:  # merges: ancestry is not log order; each note its own range
            rng_n = [f"{n.base}..HEAD"] if n.base else ["HEAD"]
            names = sorted({n.path, *(m.old for m in n.renames)})
            chain = ["--first-parent", "--diff-merges=first-parent"]
            marked = _log(root, *rng_n, *chain, "--", *names)
            log = [m.commit for m in marked]
            index = {c.sha: i for i, c in enumerate(log)}  # a rename touched both its names
            merged = {m.commit.sha for m in marked if len(m.parents) > 1}
            touched(n, log, index, len(log), _chain_start(root, n.base), merged)
        return out
    # linear: the commits after a base are exactly those newer than it in log order
    order = git(root, "rev-list", *rng, check=False).stdout.decode().split()
    index = {sha: i for i, sha in enumerate(order)}  # 0 = newest
    # no pathspec: git matching many of them on every commit is far slower than reading the
    # span's file lists and filtering here (`uv run python -m bench --only review`)
    wanted = {p for n in notes for p in (n.path, *(m.old for m in n.renames))}
    log = [m.commit for m in _log(root, *rng) if wanted.intersection(m.commit.files)]
    for n in notes:
        limit = index.get(n.base, len(order)) if n.base else len(order)
        touched(n, log, index, limit, n.base, set())
    return out


def _chain_start(root: Path, base: str | None) -> str | None:
    """Where HEAD's first-parent chain leaves base..HEAD: the base itself when it is on the
    chain, else the chain's newest commit the base already holds (None: no base)."""
    if base is None:
        return None
    r = git(root, "rev-list", "--first-parent", "--parents", f"{base}..HEAD", check=False)
    oldest = r.stdout.decode().strip().rsplit("\n", 1)[-1].split()
    return oldest[1] if len(oldest) > 1 else base


def _merged_origins(
    root: Path, path: str, start: str | None, elems: list[_Elem], merges: set[str]
) -> None:
    """Each line of the note now that a merge brought in, given to the commit that wrote it
    (the other machine's AI commit, its author and trailers kept) by `git blame` over the
    range: the merge is the plugin's, the line is not. A line the merge itself made (a
    conflict resolved in it) stays the merge's."""
    rng = [f"{start}..HEAD"] if start else ["HEAD"]  # (git blames no range of --contents)
    r = git(root, "blame", "--porcelain", *rng, "--", path, check=False)
    if r.returncode != 0:
        return
    by_line: dict[int, str] = {}
    for line in r.stdout.decode("utf-8", "replace").split("\n"):
        m = re.match(r"^([0-9a-f]{40,64}) \d+ (\d+)", line)
        if m:
            by_line[int(m[2])] = m[1]
    # the lines of HEAD's version, in order: the owner's unsaved edits aside
    alive = [
        e
        for e in elems
        if (e.removed is None or e.removed.sha == WORKTREE)
        and not (e.origin is not None and e.origin.sha == WORKTREE)
    ]
    wanted = {by_line.get(k + 1, "") for k in range(len(alive))} - {"", "0" * 40}
    found = {m.commit.sha: m.commit for m in _log(root, stdin=sorted(wanted))}
    for k, e in enumerate(alive):
        origin = found.get(by_line.get(k + 1, ""))
        if origin is not None and e.origin is not None and e.origin.sha in merges:
            e.origin = origin


def _net(
    root: Path,
    path: str,
    base: str | None,
    commits: list[Commit],
    before: bytes | None,
    versions: list[tuple[Commit, bytes | None]],
    merges: set[str] | None = None,
) -> NetDiff:
    try:
        after: bytes | None = (root / path).read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        after = None
    head = versions[-1][1] if versions else before
    if after != head:
        versions = [*versions, (_WORKTREE_COMMIT, after)]
    if any(b"\0" in (d or b"") for d in (before, after)):
        return NetDiff(path, base, commits, [], before, after, binary=True)
    elems = _track(before, versions)
    if merges and any(e.origin is not None and e.origin.sha in merges for e in elems):
        _merged_origins(root, path, base, elems, merges)
    return NetDiff(path, base, commits, _hunks(elems), before, after, _elems=elems)


def _head(root: Path) -> str | None:
    r = git(root, "rev-parse", "-q", "--verify", "HEAD", check=False)
    return r.stdout.decode().strip() or None


def net_diff(root: Path, path: str, since: str = "last") -> NetDiff:
    """One note's net diff from its reviewed state (or the period's start) to now. A screen
    that has the summaries already calls `net_diffs(root, [note])` instead (no scan)."""
    review = summaries(root, since)
    note = next((n for n in review.notes if n.path == path), None)
    if note is None:  # nothing to review: the diff of the owner's unsaved edits, if any
        base = _head(root) if since == "last" else parse_since(root, since)
        now = datetime.now(UTC)
        note = NoteSummary(path, "", [], 0, 0, [], [], now, now, True, base)
    return net_diffs(root, [note])[0]


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


def mark_reviewed(
    root: Path, paths: list[str] | None = None, upto: str | None = None
) -> tuple[int, list[str]]:
    """Mark every unreviewed AI change reviewed, or only those to `paths`; with `upto` (a
    commit a listing was made at), only the commits that listing showed: one that landed
    after the owner looked stays unreviewed (adversarial pass 3, N6). Returns (commits
    marked, paths marked). ActionError, with nothing written, for a path with nothing to
    review."""
    recover(root)  # a dead writer's half-write is put back before anything is marked
    review = summaries(root, upto=listed_commit(root, upto) if upto else None)
    notes = {n.path: n for n in review.notes}
    if paths:
        missing = [p for p in paths if p not in notes]
        if missing:
            raise ActionError(f"no unreviewed AI changes to {', '.join(missing)}; nothing marked")
        chosen = [notes[p] for p in paths]
    else:
        chosen = list(notes.values())
    marks: dict[str, list[str]] = {}
    files: dict[str, tuple[str, ...]] = {}
    for n in chosen:
        for c in n.commits:
            marks.setdefault(c.sha, []).append(n.path_in(c.sha))
            files[c.sha] = c.files
    write_marks(root, marks, files)
    return len(marks), [n.path for n in chosen]


# ------------------------------------------------------------------------------------------------
# undo one hunk, revert a note's unreviewed changes


def _store(root: Path) -> Store:
    return Store(root, Journal(state_dir(root) / "events.jsonl", client="dashboard"))


def plan_undo(diff: NetDiff, index: int) -> tuple[bytes | None, list[Commit]]:
    """The note with the AI's lines in hunk `index` taken back (the owner's kept), and the AI
    commits whose lines go. ActionError when the owner changed lines the AI wrote there."""
    if not 0 <= index < len(diff.hunks):
        raise ActionError(f"{diff.path} has no hunk {index + 1} (it has {len(diff.hunks)})")
    h = diff.hunks[index]
    undone: dict[str, Commit] = {}
    out: list[str] = []
    for i, e in enumerate(diff._elems):
        inside = h.first <= i < h.end
        if not inside:
            if e.removed is None:
                out.append(e.text)
            continue
        if e.origin is not None and e.origin.is_ai and e.removed is not None:
            if _is_owner(e.removed):
                who = e.removed.short if e.removed.sha != WORKTREE else "your unsaved edit"
                raise ActionError(
                    f"{diff.path}: {who} changed lines the AI wrote in hunk {index + 1} "
                    f"({e.text.strip()[:40]!r}); undo refused, nothing changed. Edit the note "
                    "or revert the commits instead."
                )
            continue  # the AI wrote and removed it: nothing to do
        if e.removed is None:
            if e.origin is not None and e.origin.is_ai:
                undone[e.origin.sha] = e.origin  # the AI's line goes
                continue
            out.append(e.text)  # base or owner line: stays
        elif e.removed.is_ai:
            undone[e.removed.sha] = e.removed
            out.append(e.text)  # a line the AI removed comes back (the owner's too)
    if not undone:
        raise ActionError(f"hunk {index + 1} of {diff.path} has no AI lines to undo")
    data = "".join(out).encode("utf-8", "surrogateescape")
    return (data if data or diff.after is not None else None), list(undone.values())


def hunk_text(h: Hunk) -> str:
    """A hunk as the owner saw it: its lines, who wrote each (to check nothing moved since)."""
    return "".join(f"{ln.kind}{ln.commit.sha if ln.commit else ''}\t{ln.text}" for ln in h.lines)


def undo_hunk(
    root: Path, path: str, index: int, since: str = "last", expected: str | None = None
) -> str:
    """Take back the AI's lines in one hunk of the note's net diff, as one owner commit
    (`Vaultwatch-Action: undo`) through the write path. The owner's lines are never touched;
    refused with the reason, and nothing written, when a later change overlaps the AI's.
    `expected` (`hunk_text` of the hunk the owner was shown): refused when the hunk at `index`
    is no longer that one (a write landed since the screen drew it)."""
    store = _store(root)
    with store.locked():
        recover_first(store)  # before the diff: a dead writer's half-write is no owner edit
        diff = net_diff(root, path, since)  # under the lock: the file as it is now
        if expected is not None and (
            index >= len(diff.hunks) or hunk_text(diff.hunks[index]) != expected
        ):
            raise ActionError(
                f"{path} changed since its diff was shown (hunk {index + 1} is not the one you "
                "saw); undo refused, nothing changed. Look at the new diff and undo again."
            )
        new, commits = plan_undo(diff, index)
        names = ", ".join(c.short for c in commits)
        message = commit_message(
            f"Undo AI lines in {printable(path)}",
            [(ACTION, "undo"), *((UNDOES, c.sha) for c in commits)],
            f"Takes back hunk {index + 1} of the review diff ({names}).",
        )
        sha = owner_commit(root, store, [FileWrite(path, path, diff.after, new)], message, "undo")
    _mark_if_settled(root, path)
    return sha


def _mark_if_settled(root: Path, path: str) -> None:
    """A note whose AI changes are all taken back has nothing left to review: no hunk with an
    AI line, or the note back to its reviewed text (an undone replacement still showed the
    AI's removed line beside the owner's restored one, and stayed listed)."""
    review = summaries(root)
    note = next((n for n in review.notes if n.path == path), None)
    if note is None:
        return
    diff = net_diffs(root, [note])[0]
    if not any(h.ai for h in diff.hunks) or diff.after == diff.before:
        write_marks(root, marks_of(note), {c.sha: c.files for c in note.commits})


def marks_of(note: NoteSummary) -> dict[str, list[str]]:
    """The review marks that settle a note: each of its AI commits, the note under the name
    that commit gave it (an older one when the owner moved it since)."""
    return {c.sha: [note.path_in(c.sha)] for c in note.commits}


def revert_note_changes(root: Path, path: str) -> list[FileChange]:
    """What `revert_note` would change, planned and nothing written: the note as it is now
    against the note with its unreviewed AI changes taken back (the confirm showed the commits
    and not the lines they take back). ActionError, with the reason, when it cannot apply."""
    note = _to_revert(root, path)
    recover(root)  # a dead writer's half-write is no part of what the owner is shown
    return plan_revert(root, [c.sha for c in note.commits], path).changes()


def revert_note(root: Path, path: str) -> str:
    """Revert every unreviewed AI change to this note as one owner commit (only this note's
    part of each commit; the owner's commits stay). The reverted changes count as reviewed."""
    note = _to_revert(root, path)
    sha = revert(root, [c.sha for c in note.commits], path)
    write_marks(root, marks_of(note), {c.sha: c.files for c in note.commits})
    return sha


def _to_revert(root: Path, path: str) -> NoteSummary:
    """The note's unreviewed AI changes, when a revert can take them back."""
    note = next((n for n in summaries(root).notes if n.path == path), None)
    if note is None:
        raise ActionError(f"no unreviewed AI changes to {path}; nothing to revert")
    if note.moved_from is not None:
        # a revert takes back each commit's change to the path it wrote, and the note is no
        # longer there: refused before anything is written, with what works instead
        raise ActionError(
            f"{path} was moved from {note.moved_from} after the AI changed it, and a revert "
            "works on the path each commit wrote; nothing changed. Undo its hunks one by one "
            "(u) or edit the note."
        )
    return note


# ------------------------------------------------------------------------------------------------
# the note view: who wrote its lines, and its history


@dataclass
class NoteView:
    path: str
    lines: int
    ai_lines: int
    history: list[Commit]  # every commit that touched it, newest first
    # each line of the note as on disk and the sha of the commit that wrote it, by `git blame`
    # (forty zeros: not committed yet, the owner's unsaved edit)
    blame: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ai_share(self) -> float:
        return self.ai_lines / self.lines if self.lines else 0.0


def note_view(root: Path, path: str) -> NoteView:
    """The share of the note's lines (as on disk) the AI wrote, by `git blame`, and every
    commit that touched it."""
    history = [m.commit for m in _log(root, "HEAD", "--", path)]
    ai = {c.sha for c in history if c.is_ai}
    r = git(
        root,
        "blame",
        "--porcelain",
        "--contents",
        str(root / path),
        "--",
        path,
        check=False,
    )
    total = ai_lines = 0
    blame: list[tuple[str, str]] = []
    sha = ""
    for line in r.stdout.decode("utf-8", "replace").split("\n"):
        if line.startswith("\t"):  # the line itself, after its commit's header
            blame.append((sha, line[1:]))
            continue
        m = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
        if m:
            sha = m[1]
            total += 1
            ai_lines += m[1] in ai
    return NoteView(path, total, ai_lines, history, blame)
