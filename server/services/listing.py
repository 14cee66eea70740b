"""list_docs and list_tags: notes by filters (or counted by group), tags with their trends;
selected, paged to the result budget, with cursors. No MCP here."""

from __future__ import annotations

from typing import Any

from server.core.budget import json_len, shrink
from server.services.conditions import Filters, select
from server.services.grouping import group
from server.services.paging import fingerprint, page, read_cursor
from server.services.sorting import sort_entries
from server.services.summary import summarize
from server.services.tags import tag_stats
from server.vault import Vault


def list_docs(
    vault: Vault,
    filters: Filters,
    *,
    sort: str,
    fields: list[str] | None,
    group_by: str | None,
    limit: int,
    cursor: str | None,
) -> dict[str, Any]:
    """The notes `filters` select, sorted and paged; or, with `group_by`, their counts."""
    cfg = vault.config
    found = select(list(vault.entries().values()), filters, cfg)
    budget = cfg.limits.result_chars - 500
    if group_by:
        rows = group(found, group_by)
        fp = fingerprint("g", vars(filters), group_by)
        off = read_cursor(cursor, fp)
        kept, nxt = page(rows[off : off + limit], off, budget, fp, len(rows))
        return {"total": len(found), "groups": kept, "next_cursor": nxt}
    ordered = sort_entries(found, sort)
    fp = fingerprint("d", vars(filters), sort, fields)
    off = read_cursor(cursor, fp)
    items = [summarize(e, fields) for e in ordered[off : off + limit]]
    kept, nxt = page(items, off, budget, fp, len(ordered))
    return {"total": len(found), "docs": kept, "next_cursor": nxt}


def list_tags(
    vault: Vault, *, days: int, prefix: str | None, limit: int, cursor: str | None
) -> dict[str, Any]:
    """Every tag (starting with `prefix`) with its trend over `days`, paged; plus the
    vocabulary's unused tags."""
    cfg = vault.config
    rows, unused = tag_stats(list(vault.entries().values()), cfg, days)
    if prefix:
        p = prefix.casefold().lstrip("#")
        rows = [r for r in rows if r["tag"].casefold().startswith(p)]
        unused = [t for t in unused if t.casefold().startswith(p)]
    fp = fingerprint("t", days, prefix)
    off = read_cursor(cursor, fp)
    # unused vocabulary takes at most a quarter of the budget, the page of rows the rest
    unused = shrink(unused[:500], cfg.limits.result_chars // 4)
    budget = cfg.limits.result_chars - 300 - json_len(unused)
    kept, nxt = page(rows[off : off + limit], off, budget, fp, len(rows))
    return {
        "days": days,
        "total": len(rows),
        "tags": kept,
        "unused_vocabulary": unused,
        "next_cursor": nxt,
    }
