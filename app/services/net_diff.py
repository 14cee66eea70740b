"""A note's net diff since its reviewed state, every line attributed to the commit that wrote or
removed it (the owner's lines, pending edits on disk included, are the owner's). Plain Python."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from app.services.history import (
    Commit,
    cat_blobs,
    parse_since,
)
from app.services.review import NoteSummary, summaries
from app.services.review_marks import _log
from server.core.git_run import git
from server.core.linediff import opcodes

WORKTREE = "worktree"  # Line.commit of a line the owner has on disk but not yet committed
CONTEXT = 3
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
