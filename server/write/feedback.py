"""The owner's feedback to the AI, kept in the vault's git beside the review marks. One home for
its storage format: the dashboard and the `vaultwatch feedback` commands write it (through
app.services.feedback), get_context and the write tools read it (through services.feedback).

Where it lives: the notes ref `refs/notes/vaultwatch-feedback` (a commit chain of its own, never
a commit on the branch, never in a note, never in app settings). Its tree holds

    feedback/<id>      one JSON object per item (path, text, lines, quote, created, status...)
    <commit sha>       a git note on the commit an item is about: `Feedback: <id>` lines

The notes on commits are what make an item follow a rebase: with `notes.rewriteRef` naming this
ref (set on the first write), `git rebase` and `git commit --amend` copy each note to the
rewritten commit, and git keeps the `feedback/` entries (non-notes) as they are.

Status: `open` or `closed` is stored; `answered` is read from the branch: an open item is
answered by the newest commit on HEAD whose message carries `Vaultwatch-Answers: <id>` (made
after the item was last reopened). The trailer moves with its commit through a rebase, so the
answer does too.

Writers: every change is one new commit of the ref, set with compare-and-swap
(`git update-ref <ref> <new> <old>`); a writer that lost the race reads again and retries, so two
dashboards (or a shell command beside one) never drop each other's items.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from server.core.errors import VaultwatchError
from server.core.git_log import ANSWERS, read_log, renames
from server.core.git_run import cat_blobs, git, human_identity, identity_env

FEEDBACK_REF = "refs/notes/vaultwatch-feedback"
ITEMS_DIR = "feedback"
LINK = "Feedback: "  # a line of the git note on the commit an item is about
OPEN, ANSWERED, CLOSED = "open", "answered", "closed"
STATUSES = (OPEN, ANSWERED, CLOSED)
TEXT_MAX = 4000  # characters of the owner's comment
QUOTE_MAX = 1200  # characters of the lines it is about, as the owner saw them
RETRIES = 20  # compare-and-swap attempts before a writer gives up (each one re-reads)
_HEX40 = re.compile(r"[0-9a-f]{40}")
_ID = re.compile(r"fb-[0-9a-f]{6}")
_ZERO = "0" * 40


class FeedbackError(VaultwatchError):
    """A feedback change refused; nothing was written. The message says why and what to do."""

    code = "feedback"


@dataclass(frozen=True)
class Feedback:
    id: str
    path: str
    text: str
    created: str  # ISO 8601, UTC
    by: str = ""  # the owner's git identity when it was written
    line: int | None = None  # first line it is about, 1-based, in the note as the owner saw it
    end: int | None = None  # last line (== line for one line)
    quote: str = ""  # those lines as the owner saw them (a hunk's, with its +/- marks)
    commit: str | None = None  # the commit it is about (follows a rebase through the notes)
    state: str = OPEN  # stored: open or closed
    reopened: str | None = None  # ISO: answers made before this no longer count
    dismissed: tuple[str, ...] = ()  # the answers the owner set aside by reopening it
    # read, not stored:
    answered_by: str | None = field(default=None, compare=False)

    @property
    def status(self) -> str:
        if self.state == CLOSED:
            return CLOSED
        return ANSWERED if self.answered_by else OPEN

    @property
    def lines(self) -> str | None:
        """ "12" or "12-15", or None for a comment on the whole note."""
        if self.line is None:
            return None
        return (
            str(self.line) if not self.end or self.end == self.line else f"{self.line}-{self.end}"
        )

    def stored(self) -> dict[str, object]:
        out = asdict(self)
        out.pop("answered_by")
        return out

    def public(self) -> dict[str, object]:
        """What `vaultwatch feedback list --json` prints for one item."""
        return {
            "id": self.id,
            "path": self.path,
            "text": self.text,
            "status": self.status,
            "commit": self.commit,
            "created": self.created,
            "answered_by": self.answered_by,
            "lines": self.lines,
        }


def _now() -> str:
    """UTC, to the microsecond: two items made in one second still list in the order made."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(stamp: str) -> int:
    try:
        return int(datetime.fromisoformat(stamp).timestamp())
    except ValueError:
        return 0


def _parse_item(name: str, blob: bytes) -> Feedback | None:
    """One stored item, or None when it is not one we can read (a hand edit, a newer format):
    skipped, never an error that hides the others."""
    try:
        raw = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("id") != name or not _ID.fullmatch(name):
        return None
    try:
        item = Feedback(
            id=name,
            path=str(raw["path"]),
            text=str(raw["text"]),
            created=str(raw["created"]),
            by=str(raw.get("by") or ""),
            line=int(raw["line"]) if raw.get("line") is not None else None,
            end=int(raw["end"]) if raw.get("end") is not None else None,
            quote=str(raw.get("quote") or ""),
            commit=str(raw["commit"]) if raw.get("commit") else None,
            state=CLOSED if raw.get("state") == CLOSED else OPEN,
            reopened=str(raw["reopened"]) if raw.get("reopened") else None,
            dismissed=tuple(str(s) for s in raw.get("dismissed") or ()),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return item


# ------------------------------------------------------------------------------------------------
# reading the ref


@dataclass
class _Tree:
    """The ref as read: its commit, the items, the notes on commits (sha -> text), and the
    top-level entries that are neither (kept as they are)."""

    tip: str | None
    items: dict[str, Feedback]
    notes: dict[str, str]
    note_blobs: dict[str, str]  # sha -> blob id, for notes kept unchanged
    item_blobs: dict[str, str]  # id -> blob id, likewise
    other: list[str]  # `git mktree` lines of top-level entries we do not own


def _tip(root: Path) -> str | None:
    r = git(root, "rev-parse", "-q", "--verify", f"{FEEDBACK_REF}^{{commit}}", check=False)
    return r.stdout.decode().strip() or None


def _blobs(root: Path, ids: list[str]) -> dict[str, bytes]:
    return {
        oid: data for oid, data in zip(ids, cat_blobs(root, ids), strict=True) if data is not None
    }


def _read(root: Path, tip: str | None) -> _Tree:
    if tip is None:
        return _Tree(None, {}, {}, {}, {}, [])
    listing = git(root, "ls-tree", "-r", "-z", "--full-tree", tip).stdout.decode("utf-8", "replace")
    top = git(root, "ls-tree", "-z", tip).stdout.decode("utf-8", "replace")
    other = []
    for entry in filter(None, top.split("\x00")):
        _, _, name = entry.partition("\t")
        if (
            name != ITEMS_DIR
            and not _HEX40.fullmatch(name)
            and not re.fullmatch(r"[0-9a-f]{2}", name)
        ):
            other.append(entry)
    item_blobs: dict[str, str] = {}
    note_blobs: dict[str, str] = {}
    for entry in filter(None, listing.split("\x00")):
        meta, _, path = entry.partition("\t")
        oid = meta.split()[2]
        if path.startswith(ITEMS_DIR + "/"):
            item_blobs[path[len(ITEMS_DIR) + 1 :]] = oid
        elif _HEX40.fullmatch(path.replace("/", "")):
            note_blobs[path.replace("/", "")] = oid
    data = _blobs(root, sorted({*item_blobs.values(), *note_blobs.values()}))
    items = {}
    for name, oid in item_blobs.items():
        item = _parse_item(name, data.get(oid, b""))
        if item is not None:
            items[name] = item
    notes = {sha: data.get(oid, b"").decode("utf-8", "replace") for sha, oid in note_blobs.items()}
    return _Tree(tip, items, notes, note_blobs, item_blobs, other)


def _linked(notes: dict[str, str]) -> dict[str, list[str]]:
    """id -> the commits whose note names it (the one it was about, and its rewrites)."""
    out: dict[str, list[str]] = {}
    for sha, text in notes.items():
        for line in text.splitlines():
            if line.startswith(LINK):
                out.setdefault(line[len(LINK) :].strip(), []).append(sha)
    return out


def _unreachable(root: Path, shas: set[str]) -> set[str]:
    """The commits among `shas` that HEAD does not contain (rebased away), in one rev-list."""
    if not shas:
        return set()
    r = git(root, "rev-list", "--ignore-missing", *sorted(shas), "--not", "HEAD", check=False)
    if r.returncode != 0:  # an unborn branch, or an object gone: none is on the branch
        return set(shas)
    return set(r.stdout.decode().split()) & shas


def _answers(root: Path, items: list[Feedback]) -> dict[str, list[tuple[str, int]]]:
    """id -> the commits on HEAD naming it in `Vaultwatch-Answers`, newest first, with their
    author time (kept by a rebase). Only the history since the oldest item is read."""
    if not items:
        return {}
    since = min(_epoch(i.created) for i in items) - 86_400  # committer clocks may lag a little
    records = read_log(
        root,
        ("sha", "time", "answers"),
        f"--since={since}",
        "--fixed-strings",
        f"--grep={ANSWERS}:",
        "HEAD",
    )
    out: dict[str, list[tuple[str, int]]] = {}
    for rec in records or []:
        for fid in rec.answers:
            out.setdefault(fid, []).append((rec.sha, rec.time))
    return out


def read_all(root: Path) -> list[Feedback]:
    """Every item, oldest first, with its status as of now (answered by which commit) and the
    commit it is about as the branch has it now (after a rebase: the rewritten one)."""
    tree = _read(root, _tip(root))
    return _resolve(root, tree)


def _resolve(root: Path, tree: _Tree) -> list[Feedback]:
    items = sorted(tree.items.values(), key=lambda i: (i.created, i.id))
    links = _linked(tree.notes)
    wanted = {i.commit for i in items if i.commit} | {s for ss in links.values() for s in ss}
    gone = _unreachable(root, wanted)
    answers = _answers(root, [i for i in items if i.state == OPEN])
    moved = _moved(root, items)
    out = []
    for item in items:
        commit = item.commit
        if commit and commit in gone:
            rewritten = [s for s in links.get(item.id, []) if s not in gone]
            commit = rewritten[0] if rewritten else commit
        by = None
        floor = _epoch(item.reopened) if item.reopened else 0
        for sha, when in answers.get(item.id, []):
            if when >= floor and sha not in item.dismissed:
                by = sha
                break
        out.append(replace(item, path=moved.get(item.id, item.path), commit=commit, answered_by=by))
    return out


def _moved(root: Path, items: list[Feedback]) -> dict[str, str]:
    """id -> where its note is now, for items whose note the owner moved or renamed since
    (git's rename detection, each rename after the item was made, oldest first). Asked of git
    only when some item's note is not where it was: the privacy rule must judge the note where
    it is now (moved into a private folder, its feedback is hidden)."""
    gone = [i for i in items if not os.path.lexists(root / i.path)]
    if not gone:
        return {}
    moves = renames(root, since=min(_epoch(i.created) for i in gone) - 86_400)
    out = {}
    for item in gone:
        path, made = item.path, _epoch(item.created) - 86_400
        for move in reversed(moves):  # oldest first
            if move.when >= made and move.old == path:
                path = move.new
        if path != item.path:
            out[item.id] = path
    return out


# ------------------------------------------------------------------------------------------------
# writing the ref


def _hash(root: Path, data: bytes) -> str:
    return git(root, "hash-object", "-w", "--stdin", input=data).stdout.decode().strip()


def _mktree(root: Path, lines: list[str]) -> str:
    return (
        git(root, "mktree", "-z", input=("\x00".join(lines) + "\x00").encode() if lines else b"")
        .stdout.decode()
        .strip()
    )


def _write(
    root: Path, tree: _Tree, items: dict[str, Feedback], notes: dict[str, str], why: str
) -> bool:
    """One new commit of the ref with these items and notes, set only if the ref is still at
    `tree.tip`. False when another writer moved it first."""
    item_lines = []
    for fid, item in sorted(items.items()):
        same = tree.items.get(fid) == item and fid in tree.item_blobs
        blob = (
            tree.item_blobs[fid]
            if same
            else _hash(
                root, json.dumps(item.stored(), ensure_ascii=False, indent=1).encode() + b"\n"
            )
        )
        item_lines.append(f"100644 blob {blob}\t{fid}")
    top = list(tree.other)
    if item_lines:
        top.append(f"040000 tree {_mktree(root, item_lines)}\t{ITEMS_DIR}")
    for sha, text in sorted(notes.items()):
        kept = tree.note_blobs.get(sha) if tree.notes.get(sha) == text else None
        top.append(f"100644 blob {kept or _hash(root, text.encode())}\t{sha}")
    new_tree = _mktree(root, top)
    name, email = human_identity(root)
    args = ["commit-tree", new_tree, "-m", f"vaultwatch feedback: {why}"]
    if tree.tip:
        args += ["-p", tree.tip]
    new = git(root, *args, env=identity_env(name, email)).stdout.decode().strip()
    r = git(root, "update-ref", FEEDBACK_REF, new, tree.tip or _ZERO, check=False)
    return r.returncode == 0


def _follow_rewrites(root: Path) -> None:
    """`notes.rewriteRef` names our ref, so a rebase or an amend copies each item's note on its
    commit to the rewritten one (git rewrites no notes ref unless told)."""
    r = git(root, "config", "--get-all", "notes.rewriteRef", check=False)
    if FEEDBACK_REF not in r.stdout.decode().split():
        git(root, "config", "--add", "notes.rewriteRef", FEEDBACK_REF)


def _change(
    root: Path, why: str, edit: Callable[[dict[str, Feedback], dict[str, str]], Feedback]
) -> Feedback:
    """Read, `edit` (items and notes, in place; returns the item it changed), write with
    compare-and-swap; on a lost race read again and edit again."""
    for _ in range(RETRIES):
        tree = _read(root, _tip(root))
        items, notes = dict(tree.items), dict(tree.notes)
        changed = edit(items, notes)
        if _write(root, tree, items, notes, why):
            _follow_rewrites(root)
            return changed
    raise FeedbackError(
        f"the feedback ref {FEEDBACK_REF} kept changing under {RETRIES} attempts (another "
        "dashboard writing?); nothing was saved. Try again."
    )


def add(
    root: Path,
    path: str,
    text: str,
    *,
    line: int | None = None,
    end: int | None = None,
    quote: str = "",
    commit: str | None = None,
) -> Feedback:
    """Store a new open item and return it. The caller has checked `path` and `commit`."""
    text = text.strip()
    if not text:
        raise FeedbackError("the feedback has no text: say what the AI should know or change")
    if len(text) > TEXT_MAX:
        raise FeedbackError(f"the feedback is {len(text):,} characters; keep it under {TEXT_MAX:,}")
    name, email = human_identity(root)

    def edit(items: dict[str, Feedback], notes: dict[str, str]) -> Feedback:
        fid = _new_id(items)
        item = Feedback(
            id=fid,
            path=path,
            text=text,
            created=_now(),
            by=f"{name} <{email}>",
            line=line,
            end=end if end is not None else line,
            quote=quote[:QUOTE_MAX],
            commit=commit,
        )
        items[fid] = item
        if commit:
            prev = notes.get(commit, "")
            notes[commit] = (
                prev + ("" if not prev or prev.endswith("\n") else "\n") + f"{LINK}{fid}\n"
            )
        return item

    return _change(root, f"add on {path}", edit)


def _new_id(items: dict[str, Feedback]) -> str:
    for _ in range(100):
        fid = "fb-" + secrets.token_hex(3)
        if fid not in items:
            return fid
    raise FeedbackError("no free feedback id found; nothing was saved")  # 16M ids: not in practice


def set_state(root: Path, fid: str, state: str) -> Feedback:
    """Close an item, or reopen it (its earlier answers no longer count: open until answered
    again). FeedbackError for an unknown id or a change that changes nothing."""
    if state not in (OPEN, CLOSED):
        raise ValueError(state)
    now = {i.id: i for i in read_all(root)}  # with its answers: a reopen sets them aside

    def edit(items: dict[str, Feedback], notes: dict[str, str]) -> Feedback:
        item = items.get(fid)
        if item is None:
            raise FeedbackError(
                f"no feedback {fid!r}; `vaultwatch feedback list --all` shows every id"
            )
        if state == CLOSED and item.state == CLOSED:
            raise FeedbackError(f"{fid} is closed already; nothing changed")
        seen = now.get(fid)
        if state == OPEN and item.state == OPEN and (seen is None or not seen.answered_by):
            raise FeedbackError(f"{fid} is open already; nothing changed")
        if state == OPEN:
            # every answer on HEAD so far is set aside, whether the item was answered or closed
            # (a closed item's answers are not resolved, and the reopen's time alone, to the
            # second, did not set aside an answer committed in the same second)
            answered = [sha for sha, _ in _answers(root, [item]).get(fid, [])]
            dismissed = tuple(dict.fromkeys([*item.dismissed, *answered]))
            changed = replace(item, state=OPEN, reopened=_now(), dismissed=dismissed)
        else:
            changed = replace(item, state=CLOSED)
        items[fid] = changed
        return changed

    return _change(root, f"{'close' if state == CLOSED else 'reopen'} {fid}", edit)


def get(root: Path, fid: str) -> Feedback | None:
    return next((i for i in read_all(root) if i.id == fid), None)
