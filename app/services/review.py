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

API for a screen: `summaries(root)` (fast: one `git log`, one `git diff-tree`) and
`mark_reviewed` here; `net_diff(root, path)` in `net_diff`; the marks' reading and writing in
`review_marks`; `undo_hunk` and `revert_note` in `review_undo`; `note_view` in `note_view`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from app.services.actions import ActionError
from app.services.history import (
    Commit,
    parse_since,
    reverted_by,
)
from app.services.revert import recover
from app.services.review_marks import (
    Marked,
    Marks,
    _Head,
    _log,
    _scan,
    listed_commit,
    read_marks,
    write_marks,
)
from app.services.rewritten import twins
from server.core.git_log import Rename, renames
from server.core.git_run import git

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
