"""An `Entry`: a note together with the two things the config decides about it, its type and its
date. Below both the listing (`query`) and the write checks (`validate`), which classify notes
the same way."""

from __future__ import annotations

import datetime as dt
import functools
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


@functools.lru_cache(maxsize=16384)  # the same tag lists recur across notes; a fresh process
def _tag_keys(tags: tuple[str, ...]) -> frozenset[str]:  # classifies every note at once
    keys: set[str] = set()
    for t in tags:
        parts = t.casefold().split("/")
        keys.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(keys)


def classify(doc: Doc, config: Config, modified_ns: int | None = None) -> Entry:
    """The note with its type, date and modified time (`modified_ns`; its mtime when None)."""
    fm = doc.frontmatter
    type_name: str | None = None
    declared = fm.get("type")
    if isinstance(declared, str) and declared in config.types:
        type_name = declared
    else:
        best = -1
        for t in config.types.values():
            if (doc.path.startswith(t.folder + "/")) and len(t.folder) > best:
                type_name, best = t.name, len(t.folder)
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
