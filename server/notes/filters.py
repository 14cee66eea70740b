"""Which notes a read asks for: the type, folder and tag filters of list_docs, search_text and
recall, one rule for all three (list_docs adds `where` and dates on top, in `services.conditions.select`).
Pure functions over classified notes (`entry.Entry`): no I/O, no MCP.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from server.core.errors import VaultwatchError
from server.notes.config import Config
from server.notes.entry import Entry
from server.notes.superseded import is_superseded


class QueryError(VaultwatchError, ValueError):
    """Arguments the model can fix; the message says how."""

    code = "bad_arguments"


def folder_key(folder: str) -> str:
    """A folder as the model writes it ('sessions', 'sessions/', '/sessions') -> 'sessions'."""
    return unicodedata.normalize("NFC", folder.strip().strip("/"))


def in_folder(path: str, folder: str) -> bool:
    """The one folder rule of list_docs, search_text and recall: a note is in a folder when it
    is in that folder or one of its sub-folders. Never a bare name prefix: 'sess' is not
    'sessions/'. An empty folder is the whole vault."""
    key = folder_key(folder)
    return not key or path.startswith(key + "/")


def tag_key(wanted: str) -> str:
    """A tag as the model writes it ('#Area/', 'area') -> the key notes are matched by. A
    wanted tag matches itself and its children: 'area' finds 'area/sub' (`Entry.tagkeys` holds
    every parent of a note's tags)."""
    return wanted.casefold().lstrip("#").rstrip("/")


def check_types(types: Iterable[str], config: Config) -> None:
    """QueryError naming the vault's types for the first type it does not have."""
    for t in types:
        if t not in config.types:
            known = ", ".join(sorted(config.types)) or "none are configured"
            raise QueryError(f"unknown type {t!r}; types in this vault: {known}")


@dataclass(frozen=True)
class NoteFilter:
    """Type (any of), folder (any of, sub-folders included) and tag (all of, any of, none of,
    a prefix) filters, compiled once and asked per note; superseded notes are left out unless
    `include_superseded`."""

    types: frozenset[str] = frozenset()
    folders: tuple[str, ...] = ()  # folder keys ("" is the whole vault)
    tags_all: frozenset[str] = frozenset()
    tags_any: frozenset[str] = frozenset()
    tags_none: frozenset[str] = frozenset()
    tag_prefix: str | None = None
    # superseded notes are left out unless asked for (notes.superseded)
    include_superseded: bool = False

    @classmethod
    def of(
        cls,
        config: Config,
        *,
        types: Iterable[str | None] = (),
        folders: Iterable[str | None] = (),
        tags_all: Iterable[str] = (),
        tags_any: Iterable[str] = (),
        tags_none: Iterable[str] = (),
        tag_prefix: str | None = None,
        include_superseded: bool = False,
    ) -> NoteFilter:
        """The filter the arguments ask for; QueryError for a type the vault does not have."""
        wanted = [t for t in types if t]
        check_types(wanted, config)
        return cls(
            frozenset(wanted),
            tuple(folder_key(f) for f in folders if f),
            frozenset(tag_key(t) for t in tags_all),
            frozenset(tag_key(t) for t in tags_any),
            frozenset(tag_key(t) for t in tags_none),
            tag_prefix.casefold().lstrip("#") if tag_prefix else None,
            include_superseded,
        )

    @property
    def narrows(self) -> bool:
        """Any filter asked for (none: every note matches, and callers may skip asking).
        Leaving superseded notes out is a filter too."""
        return bool(
            not self.include_superseded
            or self.types
            or self.folders
            or self.tags_all
            or self.tags_any
            or self.tags_none
            or self.tag_prefix
        )

    def matches(self, e: Entry) -> bool:
        if not self.include_superseded and is_superseded(e.doc.frontmatter):
            return False
        if self.types and e.type not in self.types:
            return False
        if self.folders and not any(
            not key or e.doc.path.startswith(key + "/") for key in self.folders
        ):
            return False
        if self.tags_all and not self.tags_all <= e.tagkeys:
            return False
        if self.tags_any and self.tags_any.isdisjoint(e.tagkeys):
            return False
        if self.tags_none and not self.tags_none.isdisjoint(e.tagkeys):
            return False
        return not self.tag_prefix or any(t.startswith(self.tag_prefix) for t in e.tagkeys)
