"""The vault's files as the owner's actions see them (move, delete, create): every file, the
owner's private ones and every link included, the file finder's order, the folders, a path as
the disk spells it, a path the owner typed made clean, and a path through a link refused. No
Textual here."""

from __future__ import annotations

import posixpath
from pathlib import Path

from app.services.actions import ActionError
from server.notes.config import Config, load_config
from server.notes.note import decode
from server.notes.paths import PathRefused, is_note, normalize_rel
from server.notes.walk import spelled, walk_files


def vault_files(root: Path) -> list[str]:
    """Every file as Obsidian sees the vault: no dot-folders (.git, .obsidian, .trash), names
    in NFC, by the one walk (server/notes/walk.py). Two differences, on purpose: the owner's
    private files are listed (these are the owner's own actions), and so is every symlink that
    is not a real folder, whatever it points to (a folder too): a move or delete must see a link to refuse acting
    through it (`refuse_links`), and a link's name is taken."""
    return [f.rel for f in walk_files(root, every_link=True)]


def finder_order(root: Path, files: list[str], first: str = "") -> list[str]:
    """The file finder's list before anything is typed: `first` (the note of the row the owner
    is on), the notes, the other files, and last the files the config names (rules, config,
    tag vocabulary), which are rarely what one moves or deletes: they led the list, and the
    note being read was not in it first."""
    named = set((vault_config(root) or Config()).protected_paths())

    def rank(path: str) -> int:
        return 0 if path == first else 3 if path in named else 1 if is_note(path) else 2

    return sorted(files, key=rank)  # stable: the walk's order within each group


def folders_of(files: list[str]) -> list[str]:
    """Every folder that holds a file, parents included."""
    out: set[str] = set()
    for f in files:
        d = posixpath.dirname(f)
        while d and d not in out:
            out.add(d)
            d = posixpath.dirname(d)
    return sorted(out)


def file_bytes(root: Path, rel: str) -> bytes | None:
    try:
        return (root / spelled(root, rel)).read_bytes()
    except FileNotFoundError:
        return None


def note_texts(root: Path, files: list[str], extensions: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for f in files:
        if is_note(f, extensions):
            data = file_bytes(root, f)
            if data is not None:
                out[f] = decode(data)[0]
    return out


def clean_path(raw: str, what: str) -> str:
    try:
        return normalize_rel(raw.strip().rstrip("/"))
    except PathRefused as exc:
        raise ActionError(f"{what}: {exc.message}") from None


def refuse_links(root: Path, paths: list[str]) -> None:
    """ActionError when a path is, or goes through, a symbolic link. The owner's move, delete
    and create act on the vault's own files: through a link they snapshotted and committed the
    file it points to (a private key outside the vault, as a "symlink" blob) and deleted files
    outside the vault (adversarial pass 3, N7). The AI's writes refuse links the same way."""
    for rel in paths:
        parts = spelled(root, rel).split("/")
        for i in range(1, len(parts) + 1):
            if (root.joinpath(*parts[:i])).is_symlink():
                link = "/".join(parts[:i])
                raise ActionError(
                    f"{link} is a symbolic link: vaultwatch never moves, deletes or writes "
                    "through one (it would act on the file it points to). Change it with a "
                    "file manager or git; nothing was done"
                )


def vault_config(root: Path) -> Config | None:
    try:
        return load_config(root)
    except Exception:  # a broken config does not stop the owner from moving files
        return None
