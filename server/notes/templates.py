"""Obsidian's template folders: where the vault keeps its templates (the core Templates
plugin's `.obsidian/templates.json` `folder`, the Templater plugin's
`.obsidian/plugins/templater-obsidian/data.json` `templates_folder`). A template is a skeleton
other notes are made from, not a note of the owner's: health leaves templates out of the
near-duplicates, and the lines a note shares with one are not what the note says."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from server.notes.walk import walk_files

SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)


def template_folders(root: Path) -> tuple[str, ...]:
    """The vault's template folders, as vault paths without slashes at the ends (none when
    neither plugin names one, or its settings cannot be read)."""
    out: list[str] = []
    for rel, key in SETTINGS:
        try:
            data = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # a synced file nested too deep too
            continue
        folder = data.get(key) if isinstance(data, dict) else None
        if isinstance(folder, str):
            folder = unicodedata.normalize("NFC", folder.strip().strip("/"))
            if folder and folder not in out and ".." not in folder.split("/"):
                out.append(folder)
    return tuple(out)


def in_folders(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def template_texts(root: Path, folders: tuple[str, ...], limit: int = 200) -> list[str]:
    """The text of every markdown template in `folders` (at most `limit` files: a template
    folder is a handful of files; a vault that names its whole tree is not read in full)."""
    out: list[str] = []
    for folder in folders:
        base = root / folder
        if not base.is_dir() or base.is_symlink():
            continue
        # the one walk (notes/walk.py): no dot-names, no symlinked folder, a symlinked file
        # only when it points inside the vault, and no fifo (opening one waits for ever)
        for f in walk_files(root, start=(folder, folder)):
            if len(out) >= limit:
                return out
            if f.rel.lower().endswith(".md"):
                try:
                    out.append((root / f.disk).read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError):
                    continue
    return out
