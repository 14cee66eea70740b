"""search_text: query -> ranked, filtered, paged hits with snippets. No MCP here."""

from __future__ import annotations

import time
from typing import Any

from .docs import decode
from .entry import Entry
from .filters import NoteFilter
from .query import QueryError, fingerprint, page, read_cursor
from .search import Hit
from .search_query import SearchError, fts_expression, parse, snippets, title_expression
from .vault import Vault

TITLE_WEIGHT = 0.6  # a title holding every word: worth 60% of the best body match of the query
RECENCY = 0.1  # a note changed today scores up to 10% better: a tie-break, not a ranking


def rank(hits: list[Hit], entries: dict[str, Entry], now: float) -> list[Entry]:
    """Matching notes, best first. The body's bm25 is scaled by the query's best body score
    (1.0 = the best match in the vault), a title holding every word adds TITLE_WEIGHT: a strong
    weight, not a tier, so the note all about a word outranks short notes that only carry it in
    their title. The scale is taken over every hit, before filters, so a filtered list keeps the
    unfiltered order."""
    best = min((h.body for h in hits), default=0.0)  # bm25 is negative: lower is better
    scored: list[tuple[float, str, Entry]] = []
    for h in hits:
        e = entries.get(h.path)
        if e is None:
            continue
        score = (h.body / best if best < 0 else 0.0) + (TITLE_WEIGHT if h.title else 0.0)
        age_days = max(0.0, now - e.modified_ns / 1e9) / 86400
        score *= 1.0 + RECENCY * max(0.0, 1.0 - age_days / 365)
        scored.append((-score, h.path, e))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [e for _, _, e in scored]


def search_text(
    vault: Vault,
    query: str,
    *,
    type: str | None = None,
    folder: str | None = None,
    tags: list[str] | None = None,
    limit: int = 10,
    cursor: str | None = None,
) -> dict[str, Any]:
    cfg = vault.config
    try:
        pq = parse(query)
    except SearchError as exc:
        raise QueryError(str(exc)) from exc
    keep = NoteFilter.of(
        cfg,
        types=[type, *pq.types],
        folders=[folder, *pq.paths],
        tags_all=[*(tags or []), *pq.tags],
    ).matches

    entries = vault.searchable_entries()
    expr = fts_expression(pq)
    fp = fingerprint("s", query, type, folder, tags)
    off = read_cursor(cursor, fp)
    if expr is None:  # filters only: newest first
        ranked = sorted(
            (e for e in entries.values() if keep(e)),
            key=lambda e: (-e.modified_ns, -e.doc.mtime_ns),
        )
        total = len(ranked)
    else:
        try:
            found = vault.search.query(expr, title_expression(pq))
        except ValueError as exc:
            raise QueryError(
                f'{exc}. Simplify the query: plain words, "phrases", -exclusions'
            ) from exc
        ranked = rank(found, entries, time.time())
        ranked = [e for e in ranked if keep(e)]
        total = len(ranked)

    items = []
    for e in ranked[off : off + limit]:
        item: dict[str, Any] = {
            "path": e.doc.path,
            "folder": e.doc.folder,
            "title": e.doc.title,
            "type": e.type,
            "modified": e.modified.isoformat(timespec="seconds"),
            "hash": e.doc.hash,
            "tags": list(e.doc.tags),
        }
        try:
            text, _ = decode((vault.root / e.doc.disk).read_bytes())
            # body lines first; a match only in the frontmatter shows that line instead
            item["snippets"] = snippets(text, e.doc.body_start, pq) or snippets(text, 0, pq)
        except OSError:
            item["snippets"] = []
        items.append(item)
    budget = cfg.limits.result_chars - 600
    kept, nxt = page(items, off, budget, fp, total)
    result: dict[str, Any] = {"total": total, "hits": kept, "next_cursor": nxt}
    if not total:
        result["hint"] = (
            "No note matched every term. Try fewer or shorter terms (terms are ANDed), "
            "or list_docs to browse by type, tag or folder."
        )
    return result
