"""A write planned in memory: the files one call touches (one operation, or every operation of a batch), the refusals and conflicts a plan can raise, and where a new note goes."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from server.core.errors import VaultwatchError
from server.notes.config import Config
from server.notes.note import Doc, content_hash, decode, parse_doc
from server.notes.paths import fold, is_protected
from server.vault import Vault, VaultError
from server.write.leases import Stamp, read_stable

MAX_NOTE_BYTES = 2 * 1024 * 1024


_LATER = itertools.count()


class Rejected(VaultwatchError):
    """A write refused by a rule. Nothing was written.

    Part of the message can be left for later (`defer`): text that takes a while to build, such
    as edit_text's closest line, is filled in by `finish` once the vault's write lock is
    released, so no other writer waits for it. `apply` finishes every Rejected it raises."""

    def __init__(
        self, code: str, message: str, hint: str, paths: list[str], diff: str = ""
    ) -> None:
        super().__init__(code, message, hint)
        self.paths, self.diff = paths, diff
        self.later: dict[str, Callable[[], str]] = {}

    def defer(self, build: Callable[[], str]) -> str:
        """A placeholder to put in the message; `finish` replaces it with `build()`."""
        mark = f"\x00later{next(_LATER)}\x00"
        self.later[mark] = build
        return mark

    def finish(self) -> None:
        for mark, build in self.later.items():
            self.message = self.message.replace(mark, build())
        self.later = {}


class Conflict(VaultwatchError):
    """The note is not what the caller last read (its hash, or it changed mid-write)."""

    code = "conflict"

    def __init__(self, path: str, expected: str, actual: str, reason: str | None = None) -> None:
        what = (
            f"{reason}"
            if reason
            else f"changed since you read it (your hash {expected}, current hash {actual})"
        )
        super().__init__(
            f"conflict: {path} {what}. Nothing was written. Call read_doc to see the current "
            "text, then make your change again on top of it."
        )
        self.path, self.expected, self.actual, self.reason = path, expected, actual, reason


@dataclass
class _File:
    rel: str
    disk: str
    original: bytes | None  # on disk when the write began
    text: str | None  # current planned text (None: does not exist)
    stamp: Stamp | None = None  # of the file `original` was read from


@dataclass
class Outcome:
    path: str
    hash: str | None = None
    created: bool | None = None
    existing: bool = False  # create_doc found the note already there
    warnings: list[str] = field(default_factory=list)
    subject: str = ""
    similar: list[dict[str, Any]] = field(default_factory=list)  # create_doc: see dedupe


def slugify(text: str, limit: int = 80) -> str:
    text = unicodedata.normalize("NFKC", str(text)).strip().casefold()
    text = re.sub(r"[^\w]+", "-", text).strip("-_")
    return text[:limit].rstrip("-") or "note"


# what to do about a path the vault refuses, by its code (the message says what was wrong)
PATH_HINTS = {
    "config_broken": "wait until the owner has fixed the config",
    "path_private": "the owner keeps that folder private: write the note somewhere else",
    "path_hidden": "write notes outside dot-folders, where list_docs shows notes",
    "path_extension": "give the note a path that ends in a note extension, such as .md",
    "path_twin": "write to another note, or ask the owner to rename one of the two files",
}


class Plan:
    """In-memory files for one call (one op, or every op of a batch)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.config: Config = vault.config
        self.files: dict[str, _File] = {}
        self.vocab_add: dict[str, str] = {}
        self.op = 0  # which operation of a batch is being planned
        self.touched: dict[str, list[int]] = {}  # path -> operations (1-based) that changed it
        # (folder, casefolded title) -> path of each note this call creates: a batch's second
        # note of one title in one folder is the first, as it is once the first is on disk
        self.created: dict[tuple[str, str], str] = {}
        self.superseded: dict[str, str] = {}  # path -> the note replacing it, in this call

    def file(self, raw: str, *, must_exist: bool = True) -> _File:
        try:
            vp = self.vault.resolve(raw, must_exist=False)
        except VaultError as exc:
            hint = PATH_HINTS.get(exc.code, "use a path inside the vault, as list_docs shows")
            raise Rejected(exc.code, exc.message, hint, [str(raw)]) from exc
        self._refuse_owner_file(vp.rel)
        if vp.link is not None:
            # os.replace would put a plain file where the link was (the target never gets the
            # change) and the snapshot would credit the owner with the type change.
            raise Rejected(
                "symlink",
                f"{vp.rel} goes through a symlink (to {vp.link}); the assistant does not write "
                "through links",
                f"write to {vp.link} instead",
                [vp.rel],
            )
        ops = self.touched.setdefault(vp.rel, [])
        if self.op not in ops:
            ops.append(self.op)
        if vp.rel in self.files:
            f = self.files[vp.rel]
        else:
            disk = vp.disk.relative_to(self.vault.root).as_posix()
            if vp.disk.is_dir():  # os.replace onto it fails late, and read as a conflict
                raise Rejected(
                    "path_is_folder",
                    f"{vp.rel} is a folder, not a note",
                    f"give the note a path of its own, such as {vp.rel}/note.md",
                    [vp.rel],
                )
            data, stamp = read_stable(vp.disk, vp.rel) if vp.disk.is_file() else (None, None)
            text, bad = decode(data) if data is not None else (None, None)
            if data is not None and (bad or b"\x00" in data):
                raise Rejected(
                    "not_text",
                    f"{vp.rel} is not a UTF-8 text note ({bad or 'it contains NUL bytes'}); "
                    "writing it would damage it",
                    "leave this file to the owner",
                    [vp.rel],
                )
            if data is not None and vp.disk.stat().st_mode & 0o222 == 0:
                raise Rejected(
                    "read_only_file",
                    f"{vp.rel} is read-only on disk; the owner has locked it",
                    "leave it, or ask the owner to make it writable",
                    [vp.rel],
                )
            if data is None:
                self._check_twins(vp.rel)
            f = self.files[vp.rel] = _File(vp.rel, disk, data, text, stamp)
        if must_exist and f.text is None:
            raise Rejected(
                "not_found",
                self.vault.not_found_message(f.rel),
                "create it with create_doc",
                [f.rel],
            )
        return f

    def _check_twins(self, rel: str) -> None:
        """A new file whose name differs from an existing one only by case or Unicode form
        would be the same file on macOS and Windows (and to Obsidian): refuse it."""
        folded = unicodedata.normalize("NFC", rel).casefold()
        for other in self.vault.entries():
            if other != rel and other.casefold() == folded:
                raise Rejected(
                    "path_twin",
                    f"{rel!r} differs from the existing {other!r} only by letter case",
                    f"write to {other} instead",
                    [rel],
                )

    def _protected(self, rel: str) -> bool:
        return is_protected(rel, self.config.protected_paths(), self.config.protected)

    def _refuse_owner_file(self, rel: str) -> None:
        """The owner's files, before anything else is said of them (a symlinked rules file must
        not be answered with 'write to its target instead')."""
        if self._protected(rel):
            kind = "rules" if fold(rel) == fold(self.config.rules) else "config"
            raise Rejected(
                "protected",
                f"{rel} is the owner's ({kind} file); the assistant cannot change it",
                "ask the owner to make this change",
                [rel],
            )
        if (owner := self.vault.owner_file_linking_to(rel)) is not None:
            raise Rejected(
                "protected",
                f"{rel} is the owner's: {owner} is a link to it, so it is what the owner's "
                f"{owner} says; the assistant cannot change it",
                "ask the owner to make this change",
                [rel],
            )

    def check_hash(self, f: _File, hash: str | None) -> None:
        if hash is None:
            return
        actual = content_hash(f.original) if f.original is not None else "(no file)"
        if hash.strip().lower() != actual:
            raise Conflict(f.rel, hash, actual)

    def doc(self, f: _File) -> Doc:
        assert f.text is not None
        return parse_doc(f.rel, f.text.encode("utf-8"))
