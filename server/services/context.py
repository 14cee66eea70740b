"""get_context: the block a new conversation starts from, as the config lays it out.

When the whole block would exceed the result budget it is trimmed oldest first: older notes lose
their text before newer ones, and a long note keeps its end (where the newest log entries are).
"""

from __future__ import annotations

import json
from typing import Any

from server.core.budget import fit_result
from server.notes.config import ContextItem
from server.notes.entry import Entry
from server.notes.note import decode
from server.notes.superseded import is_superseded
from server.services.conditions import Filters, select
from server.services.feedback import feedback_block
from server.services.sorting import sort_entries
from server.services.summary import summarize
from server.services.tags import tag_stats
from server.vault import Vault

RULES_SHARE = 0.4  # the rules file may take at most this share of the budget
FEEDBACK_SHARE = 0.3  # the owner's open feedback may take at most this share


def build_context(
    vault: Vault, *, include_superseded: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """(result, paths it drew on). Superseded notes are left out unless asked for."""
    cfg = vault.config
    entries = [
        e
        for e in vault.entries().values()
        if include_superseded or not is_superseded(e.doc.frontmatter)
    ]
    budget = cfg.limits.result_chars - 1_000
    blocks: list[dict[str, Any]] = []
    texts: list[tuple[dict[str, Any], Entry]] = []  # doc items that carry content
    paths: list[str] = []
    # the owner's open feedback first: what they asked the AI to fix comes before the notes
    fb = feedback_block(vault, int(budget * FEEDBACK_SHARE))
    if fb is not None:
        blocks.append(fb)
        budget -= _size([fb])
        paths += sorted({i["path"] for i in fb["items"]})

    for item in cfg.context:
        block: dict[str, Any] = {"title": item.title, "kind": item.kind}
        if item.kind == "rules":
            rel, text, why = vault.read_rules()
            block["path"] = rel
            if text is None:
                block["content"] = ""
                block["note"] = why
            else:
                cap = int(budget * RULES_SHARE)
                block["content"] = text if len(text) <= cap else text[:cap] + "\n… (cut)"
                paths.append(rel)
        elif item.kind == "latest":
            chosen = _latest(entries, item)
            block["docs"] = []
            for e in chosen:
                doc_item = {
                    "path": e.doc.path,
                    "title": e.doc.title,
                    "date": e.date.isoformat() if e.date else None,
                    "hash": e.doc.hash,
                    "content": _read_text(vault, e),
                }
                block["docs"].append(doc_item)
                texts.append((doc_item, e))
                paths.append(e.doc.path)
        elif item.kind == "where":
            found = sort_entries(
                select(
                    entries,
                    Filters(
                        type=item.type, where=item.where, include_superseded=include_superseded
                    ),
                    cfg,
                ),
                "-date",
            )
            block["total"] = len(found)
            block["docs"] = [
                summarize(e, list(item.fields) if item.fields else None)
                for e in found[: item.count]
            ]
            paths += [e.doc.path for e in found[: item.count]]
        elif item.kind == "recent":
            pool = [e for e in entries if item.type is None or e.type == item.type]
            # notes of one commit: the one written last on disk first
            pool.sort(key=lambda e: (e.modified_ns, e.doc.mtime_ns), reverse=True)
            block["docs"] = [
                {
                    "path": e.doc.path,
                    "title": e.doc.title,
                    "type": e.type,
                    "modified": e.modified.isoformat(timespec="seconds"),
                }
                for e in pool[: item.count]
            ]
        elif item.kind == "tags":
            rows, _ = tag_stats(entries, cfg, item.days)
            block["days"] = item.days
            block["tags"] = [
                {"tag": r["tag"], "count": r["in_window"], "trend": r["trend"]}
                for r in rows[: item.count]
                if r["in_window"] > 0
            ]
        blocks.append(block)

    trimmed = _trim(blocks, texts, budget)
    result: dict[str, Any] = {"blocks": blocks, "trimmed": trimmed}
    notice = vault.config_notice
    warnings = [f"config not applied: {p}" for p in vault.config_errors]
    warnings += ([notice] if notice else []) + vault.private_glob_warnings()
    if warnings:
        result["warnings"] = warnings
    return result, paths


def context_text(vault: Vault) -> str:
    """Exactly the text the get_context tool sends a new conversation now: the same blocks
    (build_context) through the same last step as every tool result (budget.fit_result). The
    owner's preview calls this; it never rebuilds the context its own way."""
    data, _ = build_context(vault)
    return fit_result(data, vault.config.limits.result_chars)[1]


def _latest(entries: list[Entry], item: ContextItem) -> list[Entry]:
    pool = [e for e in entries if e.type == item.type]
    pool.sort(key=lambda e: (e.day, e.modified_ns, e.doc.mtime_ns), reverse=True)
    return pool[: item.count]


def _read_text(vault: Vault, e: Entry) -> str:
    try:
        text, _ = decode((vault.root / e.doc.disk).read_bytes())
    except OSError:
        return ""
    return text


def _size(blocks: list[dict[str, Any]]) -> int:
    return len(json.dumps(blocks, ensure_ascii=False))


def _trim(
    blocks: list[dict[str, Any]], texts: list[tuple[dict[str, Any], Entry]], budget: int
) -> list[str]:
    """Shrink note texts, oldest first, until the blocks fit. Returns what was trimmed."""
    over = _size(blocks) - budget
    if over <= 0:
        return []
    trimmed: list[str] = []
    # oldest first; the newest note is cut last and keeps its end
    for doc_item, e in sorted(texts, key=lambda t: (t[1].day, t[1].modified_ns)):
        if over <= 0:
            break
        content = doc_item["content"]
        keep = max(0, len(content) - over - 200)
        if keep < 400:
            doc_item["content"] = ""
            doc_item["left_out"] = f"{len(content)} chars; read_doc({e.doc.path!r}) for the text"
        else:
            doc_item["content"] = content[-keep:]
            doc_item["left_out"] = (
                f"the first {len(content) - keep} chars; read_doc({e.doc.path!r}) for all"
            )
        trimmed.append(e.doc.path)
        over = _size(blocks) - budget
    # Still over (many list blocks): drop list rows from the end of each block.
    while over > 0:
        lists = [b for b in blocks if b.get("docs") and b["kind"] in ("where", "recent")]
        if not lists:
            break
        biggest = max(lists, key=lambda b: len(json.dumps(b, ensure_ascii=False)))
        biggest["docs"].pop()
        biggest["more"] = biggest.get("more", 0) + 1
        over = _size(blocks) - budget
    return trimmed
