"""recall: notes ranked by meaning (a query, or the note at `path`), filtered like search_text.
No MCP here."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from server.index.search import IndexBroken, IndexUnavailable, note_words
from server.index.search_query import ParsedQuery, contains_all, excluded
from server.notes.filters import QueryError
from server.notes.note import Doc, decode
from server.services.text_search import parsed_query, query_filter
from server.vault import Vault

if TYPE_CHECKING:  # numpy loads with the first recall, not with the server
    from server.index.semantic import SemanticIndex

# a word in more notes than this adds no keyword boost: in a large vault bm25 gives it little
# weight, and scoring every note that has it is what a query would spend its time on
KEYWORD_MAX_NOTES = 400
KEYWORD_BEST = 100  # notes the keyword boost looks at: below these it is a few thousandths
READY_WAIT_S = 3.0  # a small vault is embedded in about this long: wait instead of saying "later"


def _wait_ready(sem: SemanticIndex) -> None:
    """Wait up to READY_WAIT_S for the index, but not once the rate so far says it will not be
    ready by then: on a big vault every not-ready call spent its 3 s for nothing."""
    deadline = time.monotonic() + READY_WAIT_S
    while not sem.ready and sem.error is None:
        now = time.monotonic()
        left = sem.seconds_left()
        if now >= deadline or (left is not None and left > deadline - now):
            return
        time.sleep(0.05)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(5, round(seconds / 5) * 5):.0f} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60):.0f} min"
    return f"{seconds / 3600:.1f} h"


def not_ready(sem: SemanticIndex) -> dict[str, Any]:
    """recall's answer while the vault is being embedded: how far (n of N), about how long is
    left at the rate so far, and what to do meanwhile. A model told only "call again in a few
    seconds" spent minutes in calls that each waited 3 s (719 s for 6,106 notes, audit)."""
    meanwhile = (
        "Meanwhile use search_text (words, names, phrases; it is ready now); recall answers "
        "nothing until indexing is done"
    )
    if not sem.counted:
        # the indexer is still reading the vectors kept from earlier runs: not "0 of N"
        hint = (
            f"recall is starting: checking which of {sem.total:,} notes are already embedded "
            f"(vectors from earlier runs are kept). {meanwhile}; call recall again in about 30 s."
        )
    else:
        done = f"indexed {sem.indexed:,} of {sem.total:,} notes"
        rate, left = sem.rate(), sem.seconds_left()
        if rate is None or left is None:
            hint = (
                f"{done}; the embedding model is loading, so there is no estimate yet. "
                f"{meanwhile}; call recall again in about a minute."
            )
        else:
            hint = (
                f"{done} ({rate:.1f} notes/s so far): about {_duration(left)} left. "
                f"{meanwhile}; call recall again in about {_duration(left)}."
            )
    return {
        "ready": False,
        "indexed": sem.indexed if sem.counted else None,
        "total": sem.total,
        "hits": [],
        "hint": hint,
    }


def indexed_words(vault: Vault, doc: Doc) -> str | None:
    """A note's words as search_text indexes them, or None if it cannot be read."""
    try:
        text, _ = decode((vault.root / doc.disk).read_bytes())
    except OSError:
        return None
    return "\n".join(note_words(doc, text))


def has_every_word(vault: Vault, doc: Doc, pq: ParsedQuery) -> bool:
    """recall's lexical match: the note has every word of the query, as search_text reads it."""
    w = indexed_words(vault, doc)
    return w is not None and contains_all(pq, w)


def keyword_scores(vault: Vault, pq: ParsedQuery) -> dict[str, float]:
    """The best notes that have any word of the query, with their bm25 from the full-text index
    (higher is better): recall adds a bounded boost for them (semantic.KEYWORD_WEIGHT). Any
    word, not every word, so one rare word that the model cannot place (a product name,
    WebAssembly in a Chinese question) still counts. Common words are left out (see
    KEYWORD_MAX_NOTES): scoring the thousands of notes that have them doubled the time of a query
    at 10,000 notes. The text index is upkeep here: if it cannot answer, recall ranks by
    meaning alone."""
    # whole tokens: search_text's prefix match would count "a" in every word that starts with it
    tokens = sorted({tok for t in pq.positive for tok, _ in t.tokens if tok})
    try:
        counts = vault.search.doc_counts(tokens)
        keep = [
            '"' + tok.replace('"', '""') + '"'
            for tok in tokens
            if 0 < counts[tok] <= KEYWORD_MAX_NOTES
        ]
        if not keep:
            return {}
        return vault.search.best(" OR ".join(keep), KEYWORD_BEST)
    except (ValueError, IndexUnavailable, IndexBroken):
        return {}


def recall(
    vault: Vault,
    query: str | None = None,
    *,
    path: str | None = None,
    limit: int = 8,
    type: str | None = None,
    folder: str | None = None,
    include_superseded: bool = False,
) -> dict[str, Any]:
    sem = vault.semantic()
    if sem is None:
        raise QueryError(vault.semantic_unavailable())
    if not query and not path:
        raise QueryError(
            "give query= (what the note is about, any language) or path= (a note "
            "to find related notes for)"
        )
    cfg = vault.config
    pq = parsed_query(query) if query else None
    wanted = query_filter(cfg, pq, type, folder, include_superseded=include_superseded)
    negates = pq is not None and any(t.negated for t in pq.terms)

    vault.start_semantic()
    _wait_ready(sem)
    if sem.error:
        raise QueryError(
            f"the meaning index could not be built ({sem.error}); use search_text "
            "and tell the owner"
        )
    if not sem.ready:
        return not_ready(sem)
    before = vault.index.generation
    entries = vault.searchable_entries()  # the text index too: keyword_scores reads it
    generation = vault.index.generation
    if not sem.in_step(generation):  # an edit made in Obsidian since: embedded now
        sem.reconcile(
            {p: e.doc for p, e in entries.items()},
            vault.note_meta,
            # these docs are that generation only if no refresh ran meanwhile
            generation=generation if generation == before else None,
        )

    exclude: set[str] = set()
    if path:
        rel = vault.resolve(path).rel
        if rel not in entries:
            raise QueryError(f"{rel!r} is not a note recall can see")
        vec = sem.whole_vector(rel)
        if vec is None:
            raise QueryError(f"{rel!r} has no text to compare")
        exclude.add(rel)
    else:
        text = " ".join(t.text for t in pq.positive) if pq else ""  # no filters, no exclusions
        if not text:
            raise QueryError(
                "the query has only filters or exclusions: add words that say what "
                "the note is about"
            )
        vec = sem.encode_query(text)

    def words(p: str) -> str | None:
        return indexed_words(vault, entries[p].doc)

    def keep(p: str) -> bool:
        e = entries.get(p)
        if e is None or not wanted.matches(e):
            return False
        if negates and pq is not None:
            w = words(p)
            if w is None or excluded(pq, w):
                return False
        return True

    def lexical(p: str) -> bool:
        return pq is not None and has_every_word(vault, entries[p].doc, pq)

    hits = []
    ranked = sem.rank(
        vec,
        keep,
        limit=limit,
        exclude=exclude,
        lexical=lexical if pq else None,
        keyword=keyword_scores(vault, pq) if pq else None,
    )
    for m in ranked:
        e = entries[m.path]
        # lexical: the note has every word of the query; semantic: found by meaning alone
        how = "lexical" if m.lexical else "semantic"
        hits.append(
            {
                "path": m.path,
                "title": e.doc.title,
                "type": e.type,
                "modified": e.modified.isoformat(timespec="seconds"),
                "hash": e.doc.hash,
                "score": round(m.score, 3),
                "match": how,
                "section": m.heading,
                "snippet": m.excerpt,
            }
        )
    out: dict[str, Any] = {"ready": True, "model": sem.embedder.name, "hits": hits}
    if not hits:
        out["hint"] = "no note passed the filters; drop a filter, or try search_text"
    return out
