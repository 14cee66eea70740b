"""Near pairs from recall's stored whole-note vectors (nothing is embedded here): the blocked
matrix product (`near_pairs`), the near-duplicates weighed by what the notes say beyond a shared
skeleton (a template, a daily note's sections), and the notes on one subject, the newer after."""

from __future__ import annotations

import operator
import re
from typing import TYPE_CHECKING, Any

from server.notes.entry import Entry
from server.notes.frontmatter import split_frontmatter
from server.notes.note import Doc
from server.notes.superseded import is_superseded
from server.notes.templates import in_folders, template_folders, template_texts
from server.services.cross_language import cross_language_pairs, written_in_cjk
from server.services.health_findings import Finding
from server.services.health_links import _parse

if TYPE_CHECKING:
    import numpy as np

    from server.vault import Vault

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
