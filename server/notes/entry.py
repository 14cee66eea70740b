"""An `Entry`: a note together with the two things the config decides about it, its type and its
date. Below both the listing (`query`) and the write checks (`validate`), which classify notes
the same way."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
from dataclasses import dataclass
from datetime import date

from server.notes.config import Config
from server.notes.dates import as_date
from server.notes.note import Doc


@dataclass(frozen=True, slots=True)
class Entry:
    doc: Doc
    type: str | None
    date: dt.date | None  # the type's date field, else `date:`, else None
    day: dt.date  # for windows and months: the note's date, else the day it was modified
    tagkeys: frozenset[str]  # casefolded tags and their parents: 'area/sub' -> area, area/sub
    # the last commit that touched the note, or its mtime when git has not seen it as it is
    # (server/write/modified.py): a clone gives every file the same mtime
    modified_ns: int = 0

    @property
    def modified(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.modified_ns / 1e9).astimezone()


@functools.lru_cache(maxsize=65536)
def _keys_of(tag: str) -> tuple[str, ...]:
    parts = tag.casefold().split("/")
    return tuple("/".join(parts[: i + 1]) for i in range(len(parts)))


# A fresh process classifies every note at once (bench --only startup: the first list_docs),
# so both are cached: single tags recur across notes far more often than whole tag lists do.
@functools.lru_cache(maxsize=16384)
def _tag_keys(tags: tuple[str, ...]) -> frozenset[str]:
    return frozenset(itertools.chain.from_iterable(map(_keys_of, tags)))


def classify(doc: Doc, config: Config, modified_ns: int | None = None) -> Entry:
    """The note with its type, date and modified time (`modified_ns`; its mtime when None)."""
    fm = doc.frontmatter
    type_name: str | None = None
    declared = fm.get("type")
    if isinstance(declared, str) and declared in config.types:
        type_name = declared
    else:
        for prefix, name in config.type_folders:  # deepest folder first
            if doc.path.startswith(prefix):
                type_name = name
                break
    d: date | None = None
    fields = config.types[type_name].dates if type_name else ()
    for f in (*fields, "date"):
        d = as_date(fm.get(f))
        if d is not None:
            break
    modified = doc.mtime_ns if modified_ns is None else modified_ns
    day = d or date.fromtimestamp(modified / 1e9)
    return Entry(
        doc=doc, type=type_name, date=d, day=day, tagkeys=_tag_keys(doc.tags), modified_ns=modified
    )
