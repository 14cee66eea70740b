"""The vault's doc types as the owner's forms need them: the types, a type's fields, the fields
a new note's file name takes from its date, and the folder a note's type lives in (the move
dialog's suggestion). No Textual here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.services.actions import ActionError
from app.services.vault_files import file_bytes, vault_config
from server.notes.config import DocType
from server.notes.dates import note_date
from server.notes.note import parse_doc
from server.notes.paths import is_note


def type_fields(root: Path, type_name: str) -> tuple[list[str], list[str]]:
    """(required fields, date fields) of a doc type: the form for a new note."""
    t = doc_type(root, type_name)
    return list(t.required), list(t.dates)


def doc_type(root: Path, type_name: str) -> DocType:
    """A doc type as the config gives it (fields, dates, allowed values, folder and filename):
    the new-note form is built from it."""
    t = _types(root).get(type_name)
    if t is None:
        raise ActionError(f"unknown type {type_name!r}")
    return t


def _types(root: Path) -> dict[str, Any]:
    config = vault_config(root)
    return dict(config.types) if config is not None else {}


def doc_types(root: Path) -> list[str]:
    return sorted(_types(root))


DATE_PARTS = ("week", "year", "month", "day")  # file-name fields `note_path` fills from the date


def from_date(t: DocType, fields: dict[str, str]) -> dict[str, str]:
    """The required fields the file name takes from the note's date (`week` in
    `{year}-W{week}.md`), as that date gives them (`2026-W49`, `2026`, `12`, `04`): the path
    was computed from `start` while the form still asked for `week`. The date is the one
    `note_path` uses: the type's first date field given, else today."""
    pattern = t.filename or ""
    wanted = [f for f in t.required if f in DATE_PARTS and "{" + f + "}" in pattern]
    if not wanted:
        return {}
    d = note_date(t.dates, fields)
    year, week, _ = d.isocalendar()
    parts = {"week": f"{year}-W{week:02d}", "year": f"{d.year:04d}"}
    parts |= {"month": f"{d.month:02d}", "day": f"{d.day:02d}"}
    return {f: parts[f] for f in wanted}


def suggest_folder(root: Path, path: str) -> str | None:
    """The folder a note's doc type lives in, when the note is elsewhere: its declared `type`,
    else the one type whose required fields it all has."""
    config = vault_config(root)
    data = file_bytes(root, path)
    if config is None or data is None or not is_note(path, config.extensions):
        return None
    fm = parse_doc(path, data).frontmatter
    declared = fm.get("type")
    if isinstance(declared, str) and declared in config.types:
        t = config.types[declared]
    else:
        fits = [
            t
            for t in config.types.values()
            if t.required and all(fm.get(f) not in (None, "") for f in t.required)
        ]
        if len(fits) != 1:
            return None
        t = fits[0]
    return None if path.startswith(t.folder + "/") else t.folder
