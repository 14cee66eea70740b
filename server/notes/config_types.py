"""`types:` (doc types: folder, file name, required fields, allowed values) and `context:`
(the blocks get_context sends) in the vault config."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from server.notes.config_source import BlockParser

CONTEXT_KINDS = ("rules", "latest", "where", "recent", "tags")


@dataclass(frozen=True)
class DocType:
    name: str
    folder: str
    filename: str | None = None
    required: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    description: str | None = None


@dataclass(frozen=True)
class ContextItem:
    kind: str  # one of CONTEXT_KINDS
    title: str
    type: str | None = None
    count: int = 3
    where: dict[str, Any] = field(default_factory=dict)
    fields: tuple[str, ...] = ()
    days: int = 30


DEFAULT_CONTEXT = (
    ContextItem(kind="rules", title="Rules"),
    ContextItem(kind="recent", title="Recently changed", count=10),
    ContextItem(kind="tags", title="Top tags", days=30, count=15),
)


def parse_types(data: dict[str, Any], p: BlockParser) -> dict[str, DocType]:
    types: dict[str, DocType] = {}
    for name, spec in p.mapping(data.get("types"), "types").items():
        doc_type = _parse_type(str(name), p.mapping(spec, "types", name), p, name)
        if doc_type is not None:
            types[str(name)] = doc_type
    return types


def _parse_type(name: str, spec: dict[str, Any], p: BlockParser, key: Any) -> DocType | None:
    """One `types:` entry (`key` as written in the file, for the problem's location)."""
    folder = spec.get("folder")
    if not isinstance(folder, str) or not folder.strip("/"):
        p.fail(f"types.{key}.folder is required (the folder its notes live in)", "types", key)
        return None
    filename = spec.get("filename")
    if filename is not None and (not isinstance(filename, str) or "/" in filename):
        p.fail(
            f"types.{key}.filename must be a pattern like '{{date}}-{{slug}}.md'",
            "types",
            key,
            "filename",
        )
        filename = None
    values: dict[str, tuple[Any, ...]] = {}
    for fname, allowed in p.mapping(spec.get("values"), "types", key, "values").items():
        if not isinstance(allowed, list) or not allowed:
            p.fail(
                f"types.{key}.values.{fname} must be a list of allowed values",
                "types",
                key,
                "values",
                fname,
            )
            continue
        values[str(fname)] = tuple(allowed)
    return DocType(
        name=name,
        folder=unicodedata.normalize("NFC", folder.strip("/")),
        filename=filename,
        required=p.str_list(spec.get("required"), "types", key, "required"),
        dates=p.str_list(spec.get("dates"), "types", key, "dates"),
        values=values,
        description=spec.get("description") if isinstance(spec.get("description"), str) else None,
    )


def parse_context(
    data: dict[str, Any], p: BlockParser, types: dict[str, DocType]
) -> dict[str, Any]:
    if "context" not in data:
        return {}
    items: list[ContextItem] = []
    raw_items = data["context"]
    if not isinstance(raw_items, list):
        p.fail("context must be a list of blocks", "context")
        raw_items = []
    for i, raw in enumerate(raw_items):
        item = _parse_context_item(raw, i, p, types)
        if item is not None:
            items.append(item)
    return {"context": tuple(items)}


def _parse_context_item(
    raw: Any, i: int, p: BlockParser, types: dict[str, DocType]
) -> ContextItem | None:
    if raw == "rules":
        return ContextItem(kind="rules", title="Rules")
    if not isinstance(raw, dict):
        p.fail("a context block is 'rules' or a mapping with a title", "context", i)
        return None
    title = str(raw.get("title") or f"Block {i + 1}")
    type_name = raw.get("type")
    if type_name is not None and type_name not in types:
        p.fail(f"context block {title!r} names unknown type {type_name!r}", "context", i, "type")
        return None
    if "latest" in raw:
        if type_name is None:
            p.fail(f"context block {title!r}: latest needs a type", "context", i)
            return None
        n = p.positive_int(raw["latest"], 1, "context", i, "latest")
        return ContextItem(kind="latest", title=title, type=type_name, count=n)
    if "where" in raw:
        where = p.mapping(raw["where"], "context", i, "where")
        return ContextItem(
            kind="where",
            title=title,
            type=type_name,
            where=where,
            fields=p.str_list(raw.get("fields"), "context", i, "fields"),
            count=p.positive_int(raw.get("limit"), 20, "context", i, "limit"),
        )
    if "recent" in raw:
        n = p.positive_int(raw["recent"], 10, "context", i, "recent")
        return ContextItem(kind="recent", title=title, type=type_name, count=n)
    if "tags" in raw:
        spec = p.mapping(raw["tags"], "context", i, "tags")
        return ContextItem(
            kind="tags",
            title=title,
            days=p.positive_int(spec.get("days"), 30, "context", i, "tags", "days"),
            count=p.positive_int(spec.get("limit"), 15, "context", i, "tags", "limit"),
        )
    if raw.get("rules"):
        return ContextItem(kind="rules", title=title)
    p.fail(
        f"context block {title!r} needs one of: latest, where, recent, tags, rules", "context", i
    )
    return None
