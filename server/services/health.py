"""Library health: what in the vault needs the owner's look, each finding with a reason and what
can be done about it. A plain service (no MCP, no Textual): `vaultwatch health` and the
dashboard's health screen both call `check`.

Every rule comes from where it already lives: problems under the config are the write checks'
(`validate.problems`), links are parsed and resolved as the owner's move rewrites them
(`links`), "modified" is the vault's (last commit, or mtime for unsaved edits), "too big" is
read_doc's own budget (`reading.fits_one_read`), near-duplicates use the vectors recall already
stored (nothing is embedded here). Health never changes a note; the only file it writes is the
ignore list, `.git/vaultwatch/health-ignore.json`.

Private notes never appear: they are not in the vault's note index, a link that resolves into a
private folder is neither a link nor a broken one, and a private note's own links are not read.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import posixpath
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.core.budget import escaped_len
from server.core.state_files import make_state_dir, read_state, state_dir
from server.notes.config import Config
from server.notes.entry import Entry
from server.notes.frontmatter import split_frontmatter
from server.notes.links import Link, LinkIndex, code_spans, heading_key, mask_code, parse_links
from server.notes.note import Doc, content_hash, decode, parse_doc
from server.notes.reading import FOOTER_ROOM, fits_one_read
from server.notes.superseded import DATE_FIELD, is_superseded
from server.notes.templates import in_folders, template_folders, template_texts
from server.notes.walk import walk_files
from server.services.cross_language import cross_language_pairs, written_in_cjk
from server.services.supersede import successor
from server.write.validate import problems as note_problems

if TYPE_CHECKING:
    import numpy as np

    from server.vault import Vault

IGNORE_FILE = "health-ignore.json"
KINDS = (
    "problem",
    "broken_link",
    "orphan",
    "duplicate",
    "stale",
    "too_big",
    "superseded",
    "same_subject",
)
TITLES = {
    "problem": "Problems under the config",
    "broken_link": "Broken links",
    "orphan": "Orphans",
    "duplicate": "Near-duplicates",
    "stale": "Stale open items",
    "too_big": "Too big to read in one call",
    "superseded": "Superseded",
    "same_subject": "Same subject, newer",
}
# What the owner can do with each kind (the screen offers these keys; the CLI prints them).
ACTIONS = {
    "problem": ("open", "ignore"),
    "broken_link": ("open", "ignore"),
    "orphan": ("open", "move", "delete", "ignore"),
    "duplicate": ("open", "delete", "ignore"),
    "stale": ("open", "move", "ignore"),
    "too_big": ("open", "move", "ignore"),
    "superseded": ("open", "delete", "ignore"),
    "same_subject": ("open", "delete", "ignore"),
}
# problems a move or rename mends (the note is in another type's folder, or misnamed)
MOVE_FIXES = ("wrong_folder", "wrong_filename")
MAX_DUPLICATES = 500  # closest pairs weighed; a threshold set too low would find millions
LISTED_DUPLICATES = 100  # pairs listed, the ones the owner would act on first
# A line in this many notes (and in at least SKELETON_MIN of them) is a skeleton the notes share
# (a template's headings, a daily note's sections), not what any of them says.
SKELETON_SHARE = 0.02
SKELETON_MIN = 5
# Two notes made from one skeleton pair only when what they add to it overlaps this much; a
# note that adds fewer words than CONTENT_MIN to its skeleton pairs with nothing.
CONTENT_OVERLAP = 0.3
CONTENT_MIN = 8
CONTENT_CHARS = 8_000  # what a note says is judged on its first 8,000 characters
_WORDS = re.compile(r"[^\W_]+")
_CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]{2,}")
# "Same subject" (recall's whole-note cosine): a newer note this close to an older one may
# replace it. Below the near-duplicate score (those pairs are listed as such); the demo's two
# closest different notes score 0.72, two APISIX pages on one subject (key-auth plugin, key
# authentication tutorial) 0.79-0.81, a page and its translation 0.77 at the median.
SAME_SUBJECT = 0.75
MIN_NEWER_DAYS = 1  # the newer note changed at least this many days after the older
BLOCK = 1024  # rows of the vector matrix compared at a time (10,000 notes: 40 MB a block)
# a block id ends its line after a space, or right after an embed or link (Obsidian's own help
# writes `![[image.png]]^version-history-image`)
BLOCK_ID = re.compile(r"(?:^|\s|(?<=\]\])|(?<=\)))\^([A-Za-z0-9-]+)[ \t]*$", re.M)


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    path: str  # the note the finding is about (a duplicate: the first of the pair; same
    # subject: the older)
    reason: str  # one line, for the owner
    other: str | None = None  # a duplicate's second note; same subject: the newer one
    link: str | None = None  # a broken link as written
    line: int | None = None  # where the link is (1-based)
    code: str | None = None  # a problem's code (missing_field, bad_date, ...)
    key: str | None = None  # what a problem is about (field, tag): part of its id
    score: float | None = None  # a duplicate's score
    days: int | None = None  # orphans and stale items: days since the note changed
    rank: float | None = None  # a duplicate's place in the list (higher first); not shown

    @property
    def id(self) -> str:
        """Stable across runs and edits elsewhere in the note: kind, paths, and the link or the
        problem's code (a link's line is left out: a line added above it must not un-ignore)."""
        if self.kind == "duplicate":
            a, b = sorted((self.path, self.other or ""))
            return f"duplicate:{a}|{b}"
        if self.kind == "same_subject":
            return f"same_subject:{self.path}|{self.other}"
        if self.kind == "broken_link":
            return f"broken_link:{self.path}:{self.link}"
        if self.kind == "problem":
            return f"problem:{self.path}:{self.code}:{self.key}"
        return f"{self.kind}:{self.path}"

    @property
    def paths(self) -> list[str]:
        return [self.path, self.other] if self.other else [self.path]

    @property
    def actions(self) -> tuple[str, ...]:
        if self.kind == "problem" and self.code in MOVE_FIXES:
            return ("open", "move", "ignore")  # what the finding itself says to do
        return ACTIONS[self.kind]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "path": self.path}
        for k in ("other", "link", "line", "code", "score", "days"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        out["reason"] = self.reason
        out["actions"] = list(self.actions)
        return out


@dataclass
class Report:
    notes: int  # visible notes checked
    findings: list[Finding]  # not ignored (all of them with include_ignored)
    ignored: list[Finding]  # the ignored ones found now
    warnings: list[str] = field(default_factory=list)  # config, ignore file, recall not ready
    duplicates_checked: bool = False
    duplicates_unlisted: int = 0  # pairs at or above the threshold beyond MAX_DUPLICATES
    seconds: float = 0.0

    def by_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def to_json(self) -> dict[str, Any]:
        ignored_ids = {f.id for f in self.ignored}
        return {
            "notes": self.notes,
            "problems": [
                {"path": f.path, "code": f.code, "message": f.reason}
                for f in self.by_kind("problem")
            ],
            "broken_links": [
                {"path": f.path, "link": f.link, "line": f.line, "reason": f.reason}
                for f in self.by_kind("broken_link")
            ],
            "orphans": [f.path for f in self.by_kind("orphan")],
            "duplicates": [
                {"a": f.path, "b": f.other, "score": f.score} for f in self.by_kind("duplicate")
            ],
            "duplicates_checked": self.duplicates_checked,
            "duplicates_not_listed": self.duplicates_unlisted,
            "stale": [f.path for f in self.by_kind("stale")],
            "too_big": [f.path for f in self.by_kind("too_big")],
            "superseded": [f.path for f in self.by_kind("superseded")],
            "same_subject": [
                {"older": f.path, "newer": f.other, "score": f.score}
                for f in self.by_kind("same_subject")
            ],
            "findings": [{**f.to_json(), "ignored": f.id in ignored_ids} for f in self.findings],
            "ignored": len(self.ignored),
            "warnings": self.warnings,
        }


# -- the ignore list ------------------------------------------------------------------------------


def ignore_path(root: Path) -> Path:
    return state_dir(root) / IGNORE_FILE


def load_ignored(root: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """(finding id -> what was ignored and when, a warning when the file cannot be used). A
    missing file is an empty list; a damaged one is a warning and an empty list, never a crash
    (it is left as it is until the next ignore or unignore sets it aside)."""
    path = ignore_path(root)
    try:
        raw = read_state(path).decode("utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError, StateDamaged
        return {}, f"the health ignore list {path} cannot be read ({exc}); nothing is ignored"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return {}, (
            f"the health ignore list {path} is damaged ({exc.__class__.__name__}: {exc}); "
            "nothing is ignored until it is fixed or the next ignore starts a new one"
        )
    items = data.get("ignored") if isinstance(data, dict) else None
    if not isinstance(items, dict) or not all(isinstance(v, dict) for v in items.values()):
        return {}, (
            f"the health ignore list {path} is not a list vaultwatch wrote (no 'ignored' "
            "mapping); nothing is ignored until it is fixed or the next ignore starts a new one"
        )
    return {str(k): v for k, v in items.items()}, None


def _write_ignored(root: Path, items: dict[str, dict[str, Any]]) -> None:
    """Atomically: a temp file in the same folder, fsync, rename; 0600 like every state file."""
    folder = make_state_dir(state_dir(root))
    fd, tmp = tempfile.mkstemp(prefix=f".{IGNORE_FILE}.", suffix=".vaultwatch-tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"v": 1, "ignored": items}, fh, ensure_ascii=False, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / IGNORE_FILE)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _editable(root: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The list to change; a damaged file is kept beside it (`.damaged`), never overwritten
    unseen, and the change starts a new list (the message says so)."""
    items, warning = load_ignored(root)
    if warning is None:
        return items, None
    src = ignore_path(root)
    kept = src.with_name(IGNORE_FILE + ".damaged")
    os.replace(src, kept)
    return {}, f"the damaged ignore list was kept as {kept.name}; a new one was started"


def ignore(root: Path, finding: Finding) -> str | None:
    """Put a finding on the ignore list (a note about a damaged list set aside, or None)."""
    items, note = _editable(root)
    items[finding.id] = {
        "kind": finding.kind,
        "paths": finding.paths,
        "reason": finding.reason,
        "at": datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    _write_ignored(root, items)
    return note


def unignore(root: Path, finding_id: str) -> str | None:
    items, note = _editable(root)
    if items.pop(finding_id, None) is not None or note:
        _write_ignored(root, items)
    return note


# -- the checks ------------------------------------------------------------------------------------


def all_files(root: Path) -> Iterator[str]:
    """Every file of the vault outside dot-folders (private ones included: a link into a
    private folder must resolve there, to be left out, not be called broken), as the one walk
    (notes/walk.py) names them; a symlink is a file when it points inside the vault."""
    return (f.rel for f in walk_files(root))


@dataclass
class _Parsed:
    """What health needs of one note, kept per process by content hash (the index's, kept
    current by stat), so the screen's re-checks read only the notes that changed."""

    hash: str
    text: str
    links: tuple[Link, ...]
    fits: bool  # read_doc returns it whole in one call
    limit: int  # the budget `fits` was judged under
    anchors: tuple[set[str], set[str]] | None = None  # headings and ^blocks, when asked
    cjk: bool | None = None  # written in a CJK script (cross_language), when asked


_CACHE: dict[tuple[str, str], _Parsed] = {}
_CACHE_LOCK = threading.Lock()


def _fits(doc: Doc, text: str, type_name: str | None, limit: int) -> bool:
    # Every note of a few KB fits whatever its outline (at most a third) and the note's
    # own fields (at most a quarter) take, and measuring that costs one JSON encode of the
    # text; only longer notes get read_doc's exact rule, which needs their headings.
    if escaped_len(text) + 2 + limit // 3 + limit // 4 + FOOTER_ROOM + 20 <= limit:
        return True
    full = parse_doc(doc.path, text.encode("utf-8"), disk=doc.disk, mtime_ns=doc.mtime_ns)
    return fits_one_read(full, text, type_name, limit)


def _parse(vault: Vault, e: Entry, limit: int) -> _Parsed | None:
    key = (str(vault.root), e.doc.path)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit.hash == e.doc.hash and hit.limit == limit:
        return hit
    try:
        data = (vault.root / e.doc.disk).read_bytes()
    except OSError:
        return None  # gone since the index saw it
    text, _ = decode(data)
    links: tuple[Link, ...] = ()
    if "[[" in text or "](" in text:  # every link has one of these; most notes have neither
        spans = code_spans(text) if ("`" in text or "~~~" in text) else []  # as parse_doc does
        links = tuple(parse_links(text, mask_code(text, spans)))
    out = _Parsed(content_hash(data), text, links, _fits(e.doc, text, e.type, limit), limit)
    with _CACHE_LOCK:
        _CACHE[key] = out
    return out


def _parse_all(vault: Vault, entries: dict[str, Entry], limit: int) -> dict[str, _Parsed]:
    out: dict[str, _Parsed] = {}
    for path, e in entries.items():
        p = _parse(vault, e, limit)
        if p is not None:
            out[path] = p
    return out


def _anchors(path: str, p: _Parsed) -> tuple[set[str], set[str]]:
    """The note's headings (as links compare them) and block ids, parsed when first asked."""
    if p.anchors is None:
        full = parse_doc(path, p.text.encode("utf-8"))
        p.anchors = (
            {heading_key(h.text) for h in full.headings},
            set(BLOCK_ID.findall(p.text)) if "^" in p.text else set(),
        )
    return p.anchors


def _target_path(link: Link, source: str) -> str:
    """Where a link that resolves to nothing would point, to tell whether that is private."""
    if link.kind == "md" and not link.target.startswith("/"):
        return posixpath.normpath(posixpath.join(posixpath.dirname(source), link.target))
    return link.target.lstrip("/")


def _links(
    vault: Vault, parsed: dict[str, _Parsed]
) -> tuple[list[Finding], dict[str, int], set[str]]:
    """(broken links, incoming link count per note, notes with a link that resolves)."""
    private = vault.policy.is_private
    index = LinkIndex(all_files(vault.root))
    broken: list[Finding] = []
    lines: dict[tuple[str, str], tuple[str, list[int]]] = {}  # (note, link as written)
    incoming: dict[str, int] = {}
    linking: set[str] = set()
    for src, p in parsed.items():
        for link in p.links:
            if "<%" in link.target or "{{" in link.target:
                continue  # a template's placeholder (Templater's <% %>, the core plugin's {{ }})
            written = p.text[link.start : link.end]
            target = index.resolve(link, src)
            if target is None:
                if private(_target_path(link, src)):
                    continue  # a link into a private folder: not shown, even as broken
                what = (
                    "embed" if link.embed else ("link" if link.kind == "wiki" else "markdown link")
                )
                reason = f"{what} {link.target!r}: no such note or file"
            elif private(target):
                continue  # neither a link nor a broken one: private notes never appear
            else:
                if target != src:
                    incoming[target] = incoming.get(target, 0) + 1
                    linking.add(src)
                missing = _missing_heading(link, target, parsed)
                if missing is None:
                    continue
                reason = missing
            line = p.text.count("\n", 0, link.start) + 1
            lines.setdefault((src, written), (reason, []))[1].append(line)
    # The same link written twice in a note is one finding (its id has no line, so that one
    # ignore quiets both), naming every line it is on.
    for (src, written), (reason, at) in lines.items():
        more = f" (also on line{'s' if len(at) > 2 else ''} {', '.join(map(str, at[1:]))})"
        broken.append(
            Finding(
                "broken_link", src, reason + (more if len(at) > 1 else ""), link=written, line=at[0]
            )
        )
    return broken, incoming, linking


def _missing_heading(link: Link, target: str, parsed: dict[str, _Parsed]) -> str | None:
    """Why a wikilink's #heading or #^block is not in its note (None when it is, or when the
    link names none). Markdown links' fragments are slugs in many tools: not judged."""
    if link.kind != "wiki" or not link.heading or target not in parsed:
        return None
    headings, blocks = _anchors(target, parsed[target])
    part = link.heading.rsplit("#", 1)[-1].strip()  # [[Note#Top#Sub]]: the last one
    if part.startswith("^"):
        if part[1:] in blocks:
            return None
        return f"no block ^{part[1:]} in {target}"
    if not part or heading_key(part) in headings:
        return None
    return f"no heading {part!r} in {target}"


def _age_days(e: Entry, today: date) -> int:
    return (today - e.modified.date()).days


def near_pairs(
    mat: np.ndarray, threshold: float, cap: int = MAX_DUPLICATES, block: int = BLOCK
) -> tuple[list[tuple[float, int, int]], int]:
    """(the best `cap` pairs of rows (score, i, j), i < j, whose cosine is at or above
    `threshold`; how many pairs are at or above it in all). Time and memory are those of the
    blocked matrix product whatever the scores: a vault of look-alike notes has hundreds of
    thousands of such pairs (every one counted, `cap` kept), and each block gives at most
    `cap` candidates, taken only above the cap-th best score found so far."""
    return near_pairs_at(mat, [threshold], cap, block)[0]


class _Best:
    """The best `cap` pairs at or above one threshold, and the count of all, block by block."""

    def __init__(self, threshold: float, cap: int) -> None:
        import numpy as np

        self.threshold, self.cap, self.total = threshold, cap, 0
        self.s = np.zeros(0, np.float32)
        self.i = np.zeros(0, np.int64)
        self.j = np.zeros(0, np.int64)
        self.floor = threshold  # what a pair must reach to be kept; the cap-th best once full

    def add(self, sims: np.ndarray, a: int) -> None:
        import numpy as np

        cap = self.cap
        self.total += int(np.count_nonzero(sims >= self.threshold))
        hit = sims >= self.floor if len(self.s) < cap else sims > self.floor
        found = int(np.count_nonzero(hit))
        if not found:
            return
        if found > cap:  # only the block's best `cap` can be among the best `cap` overall
            rows, cols = np.unravel_index(np.argpartition(sims, -cap, axis=None)[-cap:], sims.shape)
        else:
            rows, cols = np.nonzero(hit)
        self.s = np.concatenate([self.s, sims[rows, cols]])
        self.i = np.concatenate([self.i, rows + a])
        self.j = np.concatenate([self.j, cols + a])
        if len(self.s) > cap:
            top = np.argpartition(-self.s, cap - 1)[:cap]
            self.s, self.i, self.j = self.s[top], self.i[top], self.j[top]
        if len(self.s) >= cap:
            self.floor = max(self.floor, float(self.s.min()))

    def result(self) -> tuple[list[tuple[float, int, int]], int]:
        pairs = list(zip(self.s.tolist(), self.i.tolist(), self.j.tolist(), strict=True))
        return pairs, self.total


def near_pairs_at(
    mat: np.ndarray, thresholds: list[float], cap: int = MAX_DUPLICATES, block: int = BLOCK
) -> list[tuple[list[tuple[float, int, int]], int]]:
    """near_pairs for each threshold, from one pass of the matrix product (the product is the
    cost: health asks for the near-duplicates and the same-subject pairs of one matrix)."""
    import numpy as np

    n = len(mat)
    norms = np.linalg.norm(mat, axis=1)
    mat = (mat / np.where(norms == 0, 1, norms)[:, None]).astype(np.float32)
    best = [_Best(t, cap) for t in thresholds]
    for a in range(0, n, block):
        # rows a..a+b against columns a.. only (half the work); in the b x b square where the
        # rows meet their own columns, the diagonal and below are pairs seen once already
        sims = mat[a : a + block] @ mat[a:].T
        b = sims.shape[0]
        sims[:, :b][np.tril_indices(b)] = -np.inf
        for k in best:
            k.add(sims, a)
    return [k.result() for k in best]


class _Near:
    """One check's whole-note vectors and near pairs: the near-duplicates and the same-subject
    pairs are read from one matrix (the same notes when no template or superseded note sets
    them apart), its product computed once for both thresholds: the product is the cost."""

    def __init__(self, sem: Any, thresholds: list[float]) -> None:
        self.sem, self.thresholds = sem, thresholds
        self._vectors: dict[tuple[str, ...], tuple[list[str], np.ndarray, list[str]]] = {}
        self._pairs: dict[tuple[str, ...], dict[float, tuple[list[Any], int]]] = {}

    def vectors(self, docs: dict[str, Doc]) -> tuple[list[str], np.ndarray, list[str]]:
        key = tuple(docs)
        if key not in self._vectors:
            self._vectors[key] = self.sem.whole_vectors(docs)
        return self._vectors[key]

    def pairs(
        self, paths: list[str], mat: np.ndarray, threshold: float
    ) -> tuple[list[tuple[float, int, int]], int]:
        if threshold not in self.thresholds:
            return near_pairs(mat, threshold)
        key = tuple(paths)
        if key not in self._pairs:
            found = near_pairs_at(mat, self.thresholds)
            self._pairs[key] = dict(zip(self.thresholds, found, strict=True))
        return self._pairs[key][threshold]


def _written_in_cjk(vault: Vault, e: Entry, limit: int) -> bool:
    """cross_language.written_in_cjk of the note, kept in the parse cache with its text (the
    judgment reads the note's opening: 10,000 notes cost seconds, each re-check nothing)."""
    p = _parse(vault, e, limit)
    if p is None:
        return written_in_cjk(vault.root / e.doc.disk)
    if p.cjk is None:
        p.cjk = written_in_cjk(vault.root / e.doc.disk)
    return p.cjk


def _duplicates(
    vault: Vault, entries: dict[str, Entry], threshold: float, near: _Near | None = None
) -> tuple[list[Finding], str | None, bool, int]:
    """Near-duplicate pairs from recall's stored whole-note vectors: (findings, a warning,
    whether any were compared, how many pairs at or above the threshold are not listed).
    Nothing is embedded: when recall has not indexed the vault,
    the warning says so and this finding is skipped."""
    if not vault.semantic_wanted():
        return [], "near-duplicates not checked: recall is off in this vault", False, 0
    if len(entries) < 2:
        return [], None, True, 0  # nothing to compare: no pair can be a duplicate
    sem = vault.semantic()
    if sem is None:
        return [], f"near-duplicates not checked: {vault.semantic_unavailable()}", False, 0
    near = near if near is not None else _Near(sem, [threshold])
    # a template is a skeleton, not a note of the owner's: never one of a pair
    folders = template_folders(vault.root)
    if folders:
        entries = {p: e for p, e in entries.items() if not in_folders(p, folders)}
    paths, mat, missing = near.vectors({p: e.doc for p, e in entries.items()})
    if len(paths) < 2:
        return (
            [],
            (
                "near-duplicates not checked: recall has not indexed these notes yet (the "
                "dashboard's server embeds them in the background as it starts, any other "
                "server after a client's first call; check again when the header says recall "
                "is ready)"
            ),
            False,
            0,
        )
    warning = (
        f"near-duplicates: {len(missing)} notes changed since recall indexed them and were "
        "not compared (the dashboard's server embeds a saved note within seconds, any other "
        "server at a client's next call; press r to check again)"
        if missing
        else None
    )
    found, total = near.pairs(paths, mat, threshold)
    found = list(found)  # the cross-language pairs are added below: not to the shared list
    # a note and its counterpart in the other language score lower than two notes in one
    # language: scored by their own rule (cross_language), weighed with the others
    seen = {(i, j) for _, i, j in found}
    limit = vault.config.limits.result_chars
    cjk = [_written_in_cjk(vault, entries[p], limit) for p in paths]
    across = [x for x in cross_language_pairs(mat, cjk, threshold) if (x[1], x[2]) not in seen]
    found += across
    total += len(across)
    crossed = {(i, j) for _, i, j in across}
    kept, skeletal = _meaningful(vault, entries, paths, found)
    kept.sort(key=lambda x: (-x[0], paths[x[3]], paths[x[4]]))
    listed = kept[:LISTED_DUPLICATES]
    unlisted = total - len(listed)
    if unlisted:
        why = [
            f"the {len(listed):,} listed are the ones to act on first: the same text, then "
            "the closest meaning"
        ]
        if skeletal:
            why.append(
                f"{skeletal:,} of the closest {len(found):,} share only a template's or a "
                "recurring note's skeleton and are left out"
            )
        note = (
            f"near-duplicates: {unlisted:,} more pairs at or above {threshold} not listed "
            f"({'; '.join(why)}; raise health.duplicate_score to see the closest only)"
        )
        warning = f"{warning}; {note}" if warning else note
    out = []
    for rank, score, overlap, i, j in listed:
        a_path, b_path = sorted((paths[i], paths[j]))
        what = (
            f"shares {overlap:.0%} of its words with {b_path}"
            if overlap >= CONTENT_OVERLAP
            else f"means nearly the same as {b_path}"
        )
        if (i, j) in crossed:
            what += ", in the other language"
        out.append(
            Finding(
                "duplicate",
                a_path,
                f"{what} (score {score:.2f})",
                other=b_path,
                score=round(score, 3),
                rank=rank,
            )
        )
    return out, warning, True, unlisted


def _words(text: str) -> set[str]:
    """A text's words as a set, case-folded; a run of CJK as its character pairs."""
    folded = text.casefold()
    out = set(_WORDS.findall(folded))
    for run in _CJK_RUN.findall(folded):
        out.update(map(operator.add, run, run[1:]))
    return out


def _body_lines(text: str) -> list[str]:
    """The note's lines after its frontmatter (its keys are a skeleton; its values are
    metadata, not what the note says), stripped, the empty ones left out."""
    _, _, body_start = split_frontmatter(text)
    body = text[body_start : body_start + CONTENT_CHARS]
    return [ln for ln in (raw.strip() for raw in body.splitlines()) if ln]


def _meaningful(
    vault: Vault,
    entries: dict[str, Entry],
    paths: list[str],
    pairs: list[tuple[float, int, int]],
) -> tuple[list[tuple[float, float, float, int, int]], int]:
    """The pairs that mean something, each as (rank, score, overlap of what the notes say, i,
    j), and how many were left out as sharing only a skeleton. A skeleton is the lines of the
    vault's templates and any line that recurs in many of the paired notes (a daily note's
    sections): two
    notes that share one pair only when what each adds to it overlaps, and a note that adds
    next to nothing to it pairs with nothing. Pairs rank by the words they share (a copy
    first), then by score."""
    if not pairs:
        return [], 0
    limit = vault.config.limits.result_chars
    folders = template_folders(vault.root)
    template_lines: set[str] = set()
    for text in template_texts(vault.root, folders):
        template_lines.update(_body_lines(text))
    # every line's note count, over the notes of the closest pairs (the parse cache has their
    # text): a skeleton that made notes alike recurs among them
    lines: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    near = sorted({paths[k] for _, i, j in pairs for k in (i, j)})
    for path in near:
        e = entries.get(path)
        p = _parse(vault, e, limit) if e is not None else None
        body = list(dict.fromkeys(_body_lines(p.text))) if p is not None else []
        lines[path] = body
        for ln in body:
            counts[ln] = counts.get(ln, 0) + 1
    recurring = max(SKELETON_MIN, int(len(near) * SKELETON_SHARE))
    content: dict[str, tuple[set[str], set[str]]] = {}  # path -> (skeleton lines, words)

    def of(path: str) -> tuple[set[str], set[str]]:
        if path not in content:
            skeleton = {ln for ln in lines[path] if ln in template_lines or counts[ln] >= recurring}
            rest = " ".join(ln for ln in lines[path] if ln not in skeleton)
            content[path] = (skeleton, _words(rest))
        return content[path]

    kept: list[tuple[float, float, float, int, int]] = []
    skeletal = 0
    for score, i, j in pairs:
        (skel_a, words_a), (skel_b, words_b) = of(paths[i]), of(paths[j])
        union = words_a | words_b
        overlap = len(words_a & words_b) / len(union) if union else 0.0
        shared_skeleton = len(skel_a & skel_b) >= 2
        if (skel_a or skel_b) and min(len(words_a), len(words_b)) < CONTENT_MIN:
            skeletal += 1  # a note that is its skeleton and little else
            continue
        if shared_skeleton and overlap < CONTENT_OVERLAP:
            skeletal += 1  # alike through the skeleton they share, not what they say
            continue
        kept.append((score + overlap, score, overlap, i, j))
    return kept, skeletal


def check(
    vault: Vault,
    *,
    include_ignored: bool = False,
    today: date | None = None,
    duplicates: bool = True,
) -> Report:
    """Every finding in the vault now. Reads only; writes nothing. `duplicates=False` leaves
    the near-duplicates out (`with_duplicates` adds them): the screen shows the rest first."""
    started = time.monotonic()
    # the notes read once for the whole check: each vault.entries() walks the vault again
    entries = vault.entries()
    found, warnings = _findings(vault, today or date.today(), entries)
    report = _report(vault, found, warnings, include_ignored, started, len(entries))
    if not duplicates:
        return report
    return with_duplicates(vault, report, include_ignored=include_ignored, entries=entries)


def with_duplicates(
    vault: Vault,
    report: Report,
    *,
    include_ignored: bool = False,
    entries: dict[str, Entry] | None = None,
) -> Report:
    """`report` (made with `duplicates=False`) with the near-duplicates added (`entries`: the
    notes the report was made of, when the caller has them; read again otherwise)."""
    started = time.monotonic() - report.seconds
    seen = {f.id for f in report.findings}
    found = report.findings + [f for f in report.ignored if f.id not in seen]
    entries = vault.entries() if entries is None else entries
    threshold = vault.config.health.duplicate_score
    sem = vault.semantic() if vault.semantic_wanted() else None
    near = _Near(sem, [threshold, SAME_SUBJECT]) if sem is not None else None
    dups, warning, checked, unlisted = _duplicates(vault, entries, threshold, near)
    warnings = [*report.warnings, *([warning] if warning else [])]
    dups += _same_subject(vault, entries, near) if checked else []
    out = _report(vault, found + dups, warnings, include_ignored, started, len(entries))
    out.duplicates_checked, out.duplicates_unlisted = checked, unlisted
    return out


def _findings(
    vault: Vault, today: date, entries: dict[str, Entry]
) -> tuple[list[Finding], list[str]]:
    """Every finding but the near-duplicates, and the warnings so far."""
    cfg: Config = vault.config
    hc = cfg.health
    warnings: list[str] = []
    if vault.config_notice:
        warnings.append(vault.config_notice)
    warnings += [f"health config: {p}" for p in cfg.health_problems]
    limit = cfg.limits.result_chars
    parsed = _parse_all(vault, entries, limit)
    found: list[Finding] = []

    for path, e in entries.items():
        for pr in note_problems(e.doc, cfg):
            found.append(
                Finding("problem", path, f"{pr.message} ({pr.hint})", code=pr.code, key=pr.key)
            )

    broken, incoming, linking = _links(vault, parsed)
    found += broken

    owners = {p.casefold() for p in cfg.protected_paths()}
    for path, e in entries.items():
        age = _age_days(e, today)
        if (
            age >= hc.orphan_days
            and not incoming.get(path)
            and path not in linking
            and path.casefold() not in owners
        ):
            found.append(
                Finding(
                    "orphan",
                    path,
                    f"no note links to it and it links to none; unchanged for {age} days",
                    days=age,
                )
            )

    for path, e in entries.items():
        rule = hc.stale_rule(e.type)
        status = e.doc.frontmatter.get(rule.field)
        if not isinstance(status, str) or status.strip().casefold() not in {
            s.casefold() for s in rule.open
        }:
            continue
        age = _age_days(e, today)
        if age >= rule.days:
            found.append(
                Finding(
                    "stale",
                    path,
                    f"{rule.field}: {status} and unchanged for {age} days "
                    f"(since {e.modified.date().isoformat()}; stale after {rule.days})",
                    days=age,
                )
            )

    for path, p in parsed.items():
        if not p.fits:
            found.append(
                Finding(
                    "too_big",
                    path,
                    f"{len(p.text):,} chars: more than one read_doc returns under "
                    f"limits.result_chars ({limit:,}); the AI reads it in parts",
                )
            )

    found += _superseded(entries)
    return found, warnings


def _superseded(entries: dict[str, Entry]) -> list[Finding]:
    """Notes marked superseded: the AI no longer finds them; the owner deletes them when ready."""
    out = []
    for path, e in entries.items():
        fm = e.doc.frontmatter
        if not is_superseded(fm):
            continue
        by = successor(fm, entries)
        when = fm.get(DATE_FIELD)
        out.append(
            Finding(
                "superseded",
                path,
                f"superseded by {by or 'a note that is not in the vault'}"
                + (f" on {when}" if when not in (None, "") else "")
                + ": the AI no longer finds it; delete it when you no longer need it",
                other=None,
            )
        )
    return out


def _same_subject(vault: Vault, entries: dict[str, Entry], near: _Near | None) -> list[Finding]:
    """Pairs on one subject by recall's stored whole-note vectors (nothing is embedded; the
    near-duplicates' warning says when they are not there), the older note first: the newer
    may replace it, which the owner judges (contradiction is beyond a vector). Pairs close
    enough to be near-duplicates, and superseded notes, are listed as such instead."""
    live = {p: e for p, e in entries.items() if not is_superseded(e.doc.frontmatter)}
    if near is None or len(live) < 2:
        return []
    paths, mat, _ = near.vectors({p: e.doc for p, e in live.items()})
    if len(paths) < 2:
        return []
    pairs, _ = near.pairs(paths, mat, SAME_SUBJECT)
    top = vault.config.health.duplicate_score
    out = []
    for score, i, j in sorted(pairs, key=lambda x: -x[0]):
        if score >= top:
            continue
        a, b = sorted((live[paths[i]], live[paths[j]]), key=lambda e: e.modified_ns)
        days = (b.modified - a.modified).days
        if days < MIN_NEWER_DAYS:
            continue
        out.append(
            Finding(
                "same_subject",
                a.doc.path,
                f"{b.doc.path} is on the same subject (score {score:.2f}) and {days} days newer: "
                "if it replaces this note, delete this one (or ask the AI to supersede it)",
                other=b.doc.path,
                score=round(score, 3),
                days=days,
            )
        )
    return out


def _report(
    vault: Vault,
    found: list[Finding],
    warnings: list[str],
    include_ignored: bool,
    started: float,
    notes: int,
) -> Report:
    """The findings one per id, in order, the ignored ones set apart (or marked)."""
    ignored_ids, ignore_warning = load_ignored(vault.root)
    if ignore_warning:  # last, and once (`with_duplicates` passes the first report's on)
        warnings = [w for w in warnings if w != ignore_warning] + [ignore_warning]
    # one finding per id: the id is what the screen keys its rows by and what an ignore names
    firsts: dict[str, Finding] = {}
    for f in found:
        firsts.setdefault(f.id, f)
    found = list(firsts.values())
    order = {k: i for i, k in enumerate(KINDS)}
    found.sort(
        key=lambda f: (order[f.kind], -(f.rank or f.score or 0), f.path, f.other or "", f.line or 0)
    )
    ignored = [f for f in found if f.id in ignored_ids]
    shown = found if include_ignored else [f for f in found if f.id not in ignored_ids]
    return Report(
        notes=notes,
        findings=shown,
        ignored=ignored,
        warnings=warnings,
        seconds=time.monotonic() - started,
    )


def check_root(root: Path, *, include_ignored: bool = False, today: date | None = None) -> Report:
    """`check` on the vault at `root`, opened and closed here (the CLI and the screen)."""
    from server.vault import Vault

    vault = Vault(root, client="vaultwatch-health")
    try:
        return check(vault, include_ignored=include_ignored, today=today)
    finally:
        vault.close()
