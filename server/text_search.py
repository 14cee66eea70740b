"""search_text: query -> ranked, filtered, paged hits with snippets. No MCP here."""

from __future__ import annotations

from typing import Any

from .docs import decode
from .query import Entry, QueryError, fingerprint, page, read_cursor
from .search_query import SearchError, fts_expression, parse, snippets
from .vault import Vault


def keep_entry(e: Entry, types: list[str], folders: list[str], tags: list[str]) -> bool:
    if types and e.type not in types:
        return False
    if folders and not any(e.doc.path.startswith(f.strip("/") + "/") or e.doc.path.startswith(f)
                           for f in folders):  # fmt: skip
        return False
    if tags:
        for t in tags:
            if t.casefold().lstrip("#").rstrip("/") not in e.tagkeys:
                return False
    return True


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
    types = [t for t in [type, *pq.types] if t]
    for t in types:
        if t not in cfg.types:
            known = ", ".join(sorted(cfg.types)) or "none are configured"
            raise QueryError(f"unknown type {t!r}; types in this vault: {known}")
    folders = [f for f in [folder, *pq.paths] if f]
    want_tags = [*(tags or []), *pq.tags]

    entries = vault.searchable_entries()
    expr = fts_expression(pq)
    fp = fingerprint("s", query, type, folder, tags)
    off = read_cursor(cursor, fp)
    filtered = bool(types or folders or want_tags)
    if expr is None:  # filters only: newest first
        ranked = sorted(
            (e for e in entries.values() if keep_entry(e, types, folders, want_tags)),
            key=lambda e: -e.doc.mtime_ns,
        )
        total = len(ranked)
    else:
        try:
            in_title = vault.search.query(expr, title_only=True)
            # Unfiltered, only the top of the ranking is needed; filtered, every match is.
            body = vault.search.query(expr, limit=None if filtered else off + limit + len(in_title))
            total = len(body) if filtered else vault.search.count(expr)
        except ValueError as exc:
            raise QueryError(
                f'{exc}. Simplify the query: plain words, "phrases", -exclusions'
            ) from exc
        title_paths = {h.path for h in in_title}
        ordered = [*in_title, *(h for h in body if h.path not in title_paths)]
        ranked = [
            e for h in ordered
            if (e := entries.get(h.path)) is not None and keep_entry(e, types, folders, want_tags)
        ]  # fmt: skip
        if filtered:
            total = len(ranked)

    items = []
    for e in ranked[off : off + limit]:
        item: dict[str, Any] = {
            "path": e.doc.path,
            "folder": e.doc.folder,
            "title": e.doc.title,
            "type": e.type,
            "modified": e.doc.mtime.isoformat(timespec="seconds"),
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
