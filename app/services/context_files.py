"""What the first-call context preview was built from (the config, the rules file, the notes its
blocks name and their folders), and a stamp of those files that changes when an editor saves
one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from app.services.context_preview import Preview, preview
from server.notes.config import CONFIG_NAMES
from server.vault import Vault

Stamp = tuple[object, ...]


def context_files(p: Preview) -> list[str]:
    """What the preview was built from, as paths in the vault: the config, the rules file and
    the notes its blocks name, and the folders they are in (a note added there may join a
    list of recent notes). A preview that is no JSON names the config only."""
    paths: list[str] = list(CONFIG_NAMES)
    try:
        data = json.loads(p.text)
    except (ValueError, RecursionError):
        data = {}
    blocks = data.get("blocks") if isinstance(data, dict) else None
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("path"), str):
            paths.append(block["path"])
        docs = block.get("docs")
        for doc in docs if isinstance(docs, list) else []:
            if isinstance(doc, dict) and isinstance(doc.get("path"), str):
                paths.append(doc["path"])
    folders = [path.rpartition("/")[0] or "." for path in paths]
    return list(dict.fromkeys([*paths, *folders]))


def files_stamp(root: Path, paths: Sequence[str]) -> Stamp:
    """The files as `stat` sees them (inode, time, size; None where missing): an editor that
    saves by rename gives a new inode, one that writes in place a new time or size."""
    out: list[object] = []
    for rel in paths:
        try:
            st = (root / rel).stat()
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


def watched_preview(
    root: Path, vault: Vault, known: list[str] | None
) -> tuple[Preview, list[str], Stamp]:
    """The preview, the files it was built from and their stamp, taken before it was built
    when those are the `known` files of the last one: a file changed while it was built is
    then seen as changed, and built again."""
    before = files_stamp(root, known) if known is not None else ()
    shown = preview(root, vault)
    files = context_files(shown)
    return shown, files, before if files == known else files_stamp(root, files)
