"""Search before store: the notes already in the vault that say nearly what a new note says.

`create_doc` (alone or in a batch) asks `near_notes` about the note it is about to write and
refuses when one of them is close enough to be the same note (`Near.refuse`), unless the call
names it in `distinct_from`; the closer ones that do not refuse are listed after the create as
`similar`. One home for "means nearly the same as a new note": nothing else decides it.

Three signals, each measured (`uv run python -m bench --only dedupe`, docs/measurements.md
"Search before store"):
- meaning, from recall's vectors (any language): the new note's units are embedded and scored
  against the stored notes by `semantic.overlap`; a pair in one script must reach
  SAME_SCRIPT, a pair across scripts (a Chinese note and an English one) OTHER_SCRIPT, since
  the model scores translations lower than same-language paraphrases;
- the title: another note (any folder) with the same title, folded;
- while recall is not ready (or off): the words, as the text index has them, weighted by how
  rare each is in the vault (LEXICAL).

Superseded notes are left out (they are out of what the AI finds), as are private ones (not in
the vault's entries). No MCP here.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.core.budget import fit_text
from server.index.search import IndexBroken, IndexUnavailable
from server.index.units import units_of
from server.notes.note import decode, parse_doc
from server.notes.superseded import is_superseded
from server.notes.textfold import CJK, fold, query_tokens
from server.vault import Vault

log = logging.getLogger("vaultwatch.dedupe")

# Thresholds on semantic.overlap, chosen on tests/apisix_docs (71 pages in English and the same
# 71 in Chinese) and example_vault: see bench/dedupe_bench.py for the figures.
SAME_SCRIPT = 0.80  # two different pages in one language reach 0.77
OTHER_SCRIPT = 0.675  # a page and its translation: median 0.77; different pages across, 0.70
# ... or, across scripts, at least STANDS_OUT and ahead of every other note in that script by
# GAP: on example_vault a short Chinese translation of an English note scores 0.66 against it
# and 0.36 against the next; on APISIX (every page on one subject) this catches nothing more
# and refuses nothing more.
STANDS_OUT = 0.60
GAP = 0.25
SIMILAR = 0.60  # listed after a create (not refused): related enough to look at
LEXICAL = 0.75  # words weighted by rarity, both ways; two different pages reach 0.70
TITLE_MIN = 4  # characters of a folded title for "same title" to mean anything
LEXICAL_POOL = 10  # notes sharing the rarest words that the lexical check reads
RARE_WORDS = 24  # of the new note's words, the rarest in the vault, to find those notes by
TEXT_CHARS = 20_000  # of a note read for its words
# a new note of fewer distinct words is not judged by its words: a line or two shared with
# another note is most of such a note, and says nothing of whether it is the same note
LEXICAL_MIN_WORDS = 20
SHOWN = 3  # notes named in a refusal or listed as similar


@dataclass(frozen=True)
class Near:
    path: str
    title: str
    score: float
    why: str  # "meaning" | "title" | "words"
    refuse: bool  # close enough to be the same note

    def said(self) -> str:
        how = {
            "meaning": f"means nearly the same, score {self.score:.2f}",
            "title": "the same title",
            "words": f"nearly the same words, score {self.score:.2f}",
        }[self.why]
        return f"{fit_text(self.path, 300)} ({fit_text(self.title, 120)!r}: {how})"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "title": fit_text(self.title, 120), "score": self.score}


def script_of(text: str) -> str:
    """'cjk' when Chinese, Japanese or Korean characters are at least a fifth of the letters
    (a Chinese page full of English code is still Chinese), else 'other'."""
    cjk = sum(len(m) for m in CJK.findall(text))
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return "cjk" if cjk and cjk >= 0.2 * (cjk + latin) else "other"


def title_key(title: str) -> str:
    """A title as "the same title" compares it: folded, punctuation and spacing as one space
    (words stay apart: "W1 10" is not "W11 0")."""
    return re.sub(r"[\W_]+", " ", fold(title)).strip()


def near_notes(
    vault: Vault, path: str, text: str, *, leave_out: frozenset[str] = frozenset()
) -> list[Near]:
    """The notes that say nearly what `text` (the new note at `path`) says, those to refuse
    for first, then the closest. `leave_out`: notes to compare as if absent (the bench
    measures "is a page refused when its translation is not there" on one indexed vault)."""
    entries = vault.entries()

    def keep(p: str) -> bool:
        e = entries.get(p)
        return (
            e is not None
            and p != path
            and p not in leave_out
            and not is_superseded(e.doc.frontmatter)
        )

    doc = parse_doc(path, text.encode("utf-8"))
    found: dict[str, Near] = {}
    key = title_key(doc.title)
    # a title the note gives itself: a file name (notes.md, README.md) says little of content
    named = bool(doc.h1) or isinstance(doc.frontmatter.get("title"), str)
    if named and len(key.replace(" ", "")) >= TITLE_MIN and not key.replace(" ", "").isdigit():
        for p, e in entries.items():
            if keep(p) and title_key(e.doc.title) == key:
                found[p] = Near(p, e.doc.title, 1.0, "title", True)
    sem = vault.semantic()
    pool: list[tuple[str, float, bool]] | None = None
    if sem is not None and sem.ready and sem.error is None:
        try:
            units = units_of(doc, text)
            vecs = sem.embedder.encode([u.text for u in units])
            mine = script_of(" ".join(u.excerpt for u in units) or doc.title)
            pool = [(p, score, script_of(ex) == mine) for p, score, ex in sem.overlaps(vecs, keep)]
        except Exception:  # recall's problems stay recall's: the words decide instead
            log.exception("search before store: comparing by meaning failed")
    if pool is not None:
        across = sorted((score for _, score, same in pool if not same), reverse=True)
        for p, score, same in pool:
            if p in found or score < SIMILAR:
                continue
            if same:
                refuse = score >= SAME_SCRIPT
            else:
                # the best other note in that script: the runner-up when this one leads
                runner = across[1] if len(across) >= 2 and score >= across[0] else across[0]
                refuse = score >= OTHER_SCRIPT or (
                    len(across) >= 2 and score >= STANDS_OUT and score - runner >= GAP
                )
            found[p] = Near(p, entries[p].doc.title, round(score, 3), "meaning", refuse)
    else:
        for p, score in lexical_overlaps(vault, text, keep):
            if p not in found and score >= SIMILAR:
                found[p] = Near(p, entries[p].doc.title, round(score, 3), "words", score >= LEXICAL)
    return sorted(found.values(), key=lambda n: (not n.refuse, -n.score, n.path))


def _words(text: str) -> set[str]:
    return {tok for tok, _ in query_tokens(text[:TEXT_CHARS]) if tok}


def lexical_overlaps(
    vault: Vault, text: str, keep: Callable[[str], bool]
) -> list[tuple[str, float]]:
    """(path, score) of the notes that share the new note's rarest words, scored by `words_overlap`.
    The text index is upkeep here: if it cannot answer, nothing is found (the create goes
    ahead, as it did before this check)."""
    try:
        entries = vault.searchable_entries()
        mine = _words(text)
        if len(mine) < LEXICAL_MIN_WORDS:
            return []
        df = vault.search.doc_counts(sorted(mine))
        rare = sorted((t for t in mine if df[t] > 0), key=lambda t: (df[t], t))[:RARE_WORDS]
        if not rare:
            return []
        expr = " OR ".join('"' + t.replace('"', '""') + '"' for t in rare)
        pool = [p for p in vault.search.best(expr, LEXICAL_POOL * 2) if keep(p)][:LEXICAL_POOL]
        out = []
        for p in pool:
            try:
                other, _ = decode((vault.root / entries[p].doc.disk).read_bytes())
            except OSError:
                continue
            theirs = _words(other)
            unknown = sorted(theirs - df.keys())
            df.update(vault.search.doc_counts(unknown) if unknown else {})
            out.append((p, words_overlap(mine, theirs, df, len(entries))))
        return sorted(out, key=lambda t: -t[1])
    except (ValueError, IndexUnavailable, IndexBroken):
        return []


def words_overlap(a: set[str], b: set[str], df: dict[str, int], notes: int) -> float:
    """The share of each note's words (weighted by rarity: idf) that the other has, averaged
    both ways: a note whose words are all in a long note scores half, not whole."""

    def weight(t: str) -> float:
        return math.log(1 + notes / max(df.get(t, 0), 1))

    def contained(x: set[str], y: set[str]) -> float:
        total = sum(weight(t) for t in x)
        return sum(weight(t) for t in x if t in y) / total if total else 0.0

    return (contained(a, b) + contained(b, a)) / 2
