"""The one place that turns a string from the model into a path inside the vault.

Rules, each with its own error code so the model (and the journal) can tell which one it broke:
relative, NFC-normalised, no `..`, inside the root after resolving symlinks, no dot-folders
(.git, .obsidian, .trash), no private globs, and, for notes, a configured note extension.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from server.core.errors import VaultwatchError

NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 1024


class PathRefused(VaultwatchError):
    """A path the model may not use. `code` names the rule, `message` says how to fix it."""


@dataclass(frozen=True)
class VaultPath:
    rel: str  # NFC, posix, relative to the root: what the model sees
    disk: Path  # the file on disk (its name may be NFD, as macOS writes it)
    link: str | None = None  # the real path (NFC) when `rel` goes through a symlink

    def exists(self) -> bool:
        return self.disk.exists()


def fold(text: str) -> str:
    """A name as every path rule compares it: NFC and case-folded, so `claude.md`, `CLAUDE.md`
    and an NFD `Café` on a case-insensitive disk (macOS, Windows) are the names they open."""
    return (text if text.isascii() else unicodedata.normalize("NFC", text)).casefold()


def normalize_glob(raw: str) -> str:
    """A `private:` or `protected:` glob from the config, spelt the one way the matcher reads it,
    or PathRefused (the config then does not load, and fails closed).

    A path from the model reaches a note through `normalize_rel` (NFC, `./` and `//` dropped), so
    a glob must name that note the same way, whatever its spelling: `./Secret`, `Secret\\`,
    ` Secret/ `, `Secret//sub`, `.\\Secret\\**` are `Secret`, `Secret/sub`, `Secret/**`. A name's
    trailing dots and spaces are dropped (`Secret.` is `Secret`, as Windows reads it; the
    matcher lets any name end in them, so a folder really named `Secret.` stays covered). A
    leading `/` still anchors the glob at the root (`/Secret`, `//Secret`). What cannot name a
    folder of the vault is refused: `..`, an absolute path (drive, `~`), the root itself, and
    control or invisible characters (a zero-width space would leave the folder meant visible).
    """
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("glob_empty", "is empty; name a folder such as 'private/'")
    text = unicodedata.normalize("NFC", raw.strip())
    if any(unicodedata.category(c) in ("Cc", "Cf") and c != "\u200d" for c in text):
        raise PathRefused(
            "glob_invisible",
            "contains a control or invisible character (such as a zero-width space), so it "
            "would not match the folder it looks like; retype it",
        )
    if "[:" in text or "[=" in text or "[." in text:
        raise PathRefused(
            "glob_class",
            "uses a named character class such as [[:digit:]], which is not read here; list "
            "the characters instead, e.g. [0-9]",
        )
    text = text.replace("\\", "/")
    if re.match(r"^[A-Za-z]:", text) or text.startswith("~"):
        raise PathRefused(
            "glob_absolute",
            "is an absolute path; write it relative to the vault root, e.g. 'private/'",
        )
    parts: list[str] = []
    for part in text.split("/"):
        if part == "..":
            raise PathRefused(
                "glob_escape",
                "uses '..'; a glob names folders inside the vault, e.g. 'private/'",
            )
        part = part.rstrip(". ") if part != "." else ""
        if part:
            parts.append(part)
    if not parts:
        raise PathRefused(
            "glob_root",
            "names the whole vault root, not a folder in it; to keep everything from the "
            "assistant use '**'",
        )
    anchored = text.startswith("/") and len(parts) == 1  # more names anchor it anyway
    folder = text.endswith("/") and parts[-1] != "**"  # kept as the owner wrote it: `diary/`
    return ("/" if anchored else "") + "/".join(parts) + ("/" if folder else "")


def _name_rx(name: str, classes: bool = True) -> str:
    """One name of a glob (between slashes) as a regex; it may end in dots and spaces. Without
    `classes`, `[...]` is read as the characters themselves."""
    out = []
    i = 0
    while i < len(name):
        if name.startswith("**", i):
            out.append(".*")
            i += 2
        elif name[i] == "*":
            out.append("[^/]*")
            i += 1
        elif name[i] == "?":
            out.append("[^/]")
            i += 1
        elif classes and name[i] == "[" and (end := _class_end(name, i)) > 0:
            out.append(_class_rx(name[i + 1 : end]))
            i = end + 1
        else:
            out.append(re.escape(name[i]))
            i += 1
    return "".join(out) + ("" if name.endswith("*") else "[. ]*")


def _class_end(name: str, start: int) -> int:
    """Where the bracket expression opened at `start` closes, or -1 (then `[` is a plain
    character, as in git). A `]` first in the set (after any `!` or `^`) is one of its
    members."""
    i = start + 1
    if i < len(name) and name[i] in "!^":
        i += 1
    if i < len(name) and name[i] == "]":
        i += 1
    end = name.find("]", i)
    return end


def _class_rx(body: str) -> str:
    """A gitignore bracket expression (`[0-9]`, `[Pp]`, `[!p]`) as a regex class; like a `*` it
    never matches the `/` between names. Its members are already case-folded with the glob."""
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    members = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            lo, hi = body[i], body[i + 2]
            members.append(f"{re.escape(lo)}-{re.escape(hi)}" if lo <= hi else "")
            i += 3
        else:
            members.append(re.escape(body[i]))
            i += 1
    inner = "".join(members)
    if negate:
        return f"[^/{inner}]"
    return f"[{inner}]" if inner else "(?!)"


_MATCH_ALL = re.compile(r".*", re.DOTALL)


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Gitignore-flavoured glob, matched against `fold(path)`: `**` spans folders, `*` and `?`
    stay inside one name.

    The glob is first spelt as `normalize_glob` spells it (a glob it refuses matches every path:
    the config that holds it does not load, so this is only a second fence). As in .gitignore:
    a pattern with no `/` except a trailing one names a file or folder at any depth (`private/`,
    `diary.md`); a leading or inner `/` anchors it at the root (`/private`, `work/hr/`). A path
    matches when it or any of its parent folders does, so `private/*` covers `private/sub/x.md`
    for the walker and for a path from the model alike.
    """
    try:
        glob = normalize_glob(pattern)
    except PathRefused:
        return _MATCH_ALL
    anchored = "/" in glob.rstrip("/")
    names = fold(glob).strip("/").split("/")
    if len(names) > 1 and names[-1] == "**":
        names.pop()  # `dir/**` is the folder itself and everything in it: the parent rule below
    # `[0-9]` is a set of characters, as in .gitignore; a glob that has one also matches the
    # name spelt with the brackets themselves (a folder `[2024] Journal`): hiding both is closed
    bodies = [_glob_body(names, classes=True)]
    if "[" in glob:
        bodies.append(_glob_body(names, classes=False))
    body = bodies[0] if len(bodies) == 1 else "(?:" + "|".join(bodies) + ")"
    if not anchored:  # a bare name matches at any depth, like .gitignore
        body = "(?:.*/)?" + body
    return re.compile(body + r"(?:/.*)?\Z", re.DOTALL)


def _glob_body(names: list[str], *, classes: bool) -> str:
    pieces = []
    for i, name in enumerate(names):
        last = i == len(names) - 1
        if name == "**":
            pieces.append(".*" if last else "(?:.*/)?")
        else:
            pieces.append(_name_rx(name, classes) + ("" if last else "/"))
    return "".join(pieces)


def matches_any(rel: str, globs: tuple[str, ...]) -> bool:
    folded = fold(rel)
    return any(_glob_regex(g).match(folded) for g in globs)


def is_protected(rel: str, names: tuple[str, ...], globs: tuple[str, ...]) -> bool:
    """The owner's files: exact names (rules, config, vocabulary) or `protected:` globs, both
    compared case-folded and in NFC."""
    folded = fold(rel)
    return any(fold(n) == folded for n in names) or matches_any(rel, globs)


def normalize_rel(raw: str) -> str:
    """Model-supplied text -> a clean relative posix path, or PathRefused."""
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("path_empty", "path is empty: give a note path such as 'notes/idea.md'")
    if "\x00" in raw:
        raise PathRefused("path_nul", "path contains a NUL byte; remove it")
    text = unicodedata.normalize("NFC", raw.strip())
    if re.search(r"%(?:2e|2f|5c|00)", text, re.IGNORECASE):
        raise PathRefused(
            "path_encoded",
            f"path {raw!r} contains URL-encoded '.', '/', '\\' or NUL; write the path plainly",
        )
    if any(ord(c) < 32 for c in text):
        raise PathRefused("path_control", f"path {raw!r} contains control characters; remove them")
    if "\\" in text:
        raise PathRefused(
            "path_separator",
            f"path {raw!r} uses '\\'; vault paths use '/', e.g. 'notes/idea.md'",
        )
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text) or text.startswith("~"):
        raise PathRefused(
            "path_absolute",
            f"path {raw!r} is absolute; give it relative to the vault root, e.g. 'notes/idea.md'",
        )
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused(
            "path_escape", f"path {raw!r} uses '..'; paths must stay inside the vault"
        )
    for p in parts:
        if p.startswith("."):
            raise PathRefused(
                "path_hidden",
                f"path {raw!r} enters {p!r}: dot-folders and dot-files (.git, .obsidian, .trash) "
                "are not part of the notes",
            )
    if not parts:
        raise PathRefused("path_empty", "path names the vault root; give a note path")
    # What file systems take (a name of 255 bytes; a path of 1024 on macOS): longer is a
    # refusal that says so, not an OSError from deep inside a tool.
    for p in parts:
        if len(p.encode("utf-8")) > NAME_MAX_BYTES:
            raise PathRefused(
                "path_too_long",
                f"the name {p[:40]!r}… is over {NAME_MAX_BYTES} "
                "bytes; file systems cannot store it. Use a shorter name.",
            )
    rel = "/".join(parts)
    if len(rel.encode("utf-8")) > PATH_MAX_BYTES:
        raise PathRefused(
            "path_too_long",
            f"the path {rel[:40]!r}… is over {PATH_MAX_BYTES} bytes; use fewer or shorter folders.",
        )
    return rel


NOTE_EXTENSIONS = (".md",)  # a vault whose config names no `extensions:`


@lru_cache(maxsize=64)
def _lowered(extensions: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(e.lower() for e in extensions)


def is_note(rel: str, extensions: tuple[str, ...] = NOTE_EXTENSIONS) -> bool:
    """The one rule for "is this file a note": its name ends in one of the config's note
    extensions, in any case. The walker, the write path and the owner's file actions ask it."""
    return rel.lower().endswith(_lowered(extensions))


class PathPolicy:
    """Resolves paths for one vault under the current private globs and note extensions.

    `closed` (a sentence saying why) makes every path private: the config does not load and no
    last good rules are known, so nothing may be seen or written until it does.
    """

    def __init__(
        self,
        root: Path,
        private: tuple[str, ...],
        extensions: tuple[str, ...],
        closed: str | None = None,
    ) -> None:
        self.root = root
        self.real_root = Path(os.path.realpath(root))
        self._real_prefix = str(self.real_root).rstrip(os.sep) + os.sep
        self.private = private
        self.extensions = tuple(e.lower() for e in extensions)
        self.closed = closed
        # One alternation for all globs: the walk asks this for every file on every call.
        self._private_rx = (
            re.compile("|".join(f"(?:{_glob_regex(g).pattern})" for g in private), re.DOTALL)
            if private
            else None
        )

    def is_private(self, rel: str) -> bool:
        if self.closed is not None:
            return True
        return self._private_rx is not None and self._private_rx.match(fold(rel)) is not None

    def is_note_name(self, rel: str) -> bool:
        return is_note(rel, self.extensions)

    def target_allowed(self, real: str) -> bool:
        """The one rule for where a symlink may point (`real` is its fully resolved absolute
        path): inside the vault, in no dot-folder (.git holds the token and remote
        credentials) and in no private folder. The walker and `resolve` both ask this."""
        if not real.startswith(self._real_prefix):
            return False
        target = real[len(self._real_prefix) :].replace(os.sep, "/")
        target = target if target.isascii() else unicodedata.normalize("NFC", target)
        return not any(p.startswith(".") for p in target.split("/")) and not self.is_private(target)

    def resolve(
        self, raw: str, *, note: bool = True, disk_names: dict[str, str] | None = None
    ) -> VaultPath:
        """Check `raw` against every rule. `disk_names` maps NFC paths to on-disk spellings."""
        rel = normalize_rel(raw)
        if self.closed is not None:
            raise PathRefused("config_broken", self.closed)
        if self.is_private(rel):
            raise PathRefused(
                "path_private",
                f"{rel!r} is in a private folder of this vault; it cannot be read or written",
            )
        if note and not self.is_note_name(rel):
            raise PathRefused(
                "path_extension",
                f"{rel!r} is not a note: notes end in {', '.join(self.extensions)}",
            )
        disk_rel = (disk_names or {}).get(rel, rel)
        disk = self.root / disk_rel
        _refuse_unicode_twins(self.root, rel)
        if not disk.exists() and disk_rel == rel:
            # The file may be spelled in NFD on disk (macOS); find its real name.
            disk = _find_unicode_twin(self.root, rel) or disk
        real = Path(os.path.realpath(disk))
        if real != self.real_root and self.real_root not in real.parents:
            raise PathRefused(
                "path_symlink_escape",
                f"{rel!r} resolves outside the vault through a symlink; it cannot be used",
            )
        real_rel = real.relative_to(self.real_root).as_posix() if real != self.real_root else ""
        real_rel, link = unicodedata.normalize("NFC", real_rel), None
        if real_rel != unicodedata.normalize("NFC", disk.relative_to(self.root).as_posix()):
            # A symlink inside the vault: its target must obey the same rules.
            if not self.target_allowed(str(real)):
                raise PathRefused(
                    "path_symlink_escape",
                    f"{rel!r} is a symlink to a hidden or private location; it cannot be used",
                )
            link = real_rel
        return VaultPath(rel=rel, disk=disk, link=link)


def _refuse_unicode_twins(root: Path, rel: str) -> None:
    """Two names on disk that are one name in NFC (café in NFC and in NFD, as macOS and Linux
    tools can leave behind) would make the path mean two files: refuse rather than guess."""
    parent, _, name = rel.rpartition("/")
    try:
        names = os.listdir(root / parent) if parent else os.listdir(root)
    except OSError:
        return
    same = [n for n in names if n != name and unicodedata.normalize("NFC", n) == name]
    if same and (name in names or len(same) > 1):
        raise PathRefused(
            "path_twin",
            f"{rel!r} names two files whose names differ only in Unicode form; the owner must "
            "rename one of them first",
        )


def _find_unicode_twin(root: Path, rel: str) -> Path | None:
    """Walk `rel` one name at a time, matching names by their NFC form."""
    cur = root
    for part in rel.split("/"):
        nxt = cur / part
        if not nxt.exists():
            try:
                names = os.listdir(cur)
            except OSError:
                return None
            match = [n for n in names if unicodedata.normalize("NFC", n) == part]
            if not match:
                return None
            nxt = cur / match[0]
        cur = nxt
    return cur


# Characters a new note's name may not have: invisible ones and those that change the text's
# direction (`zw\u200b.md` looks like `zw.md`; U+202E shows a name backwards), slashes that only
# look like one (`private／x.md` is a file at the root that reads as inside `private/`), and what
# Windows and Obsidian refuse in a file name (a vault is often synced to both).
LOOKALIKE_SLASHES = "\uff0f\uff3c\u2215\u2044\u29f8\u29f9"
NAME_RESERVED = '<>:"|?*'
DEVICES = re.compile(r"(?i)(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?")


def new_name_problem(rel: str, have: str) -> str | None:
    """Why a new note's path would mislead or not sync, or None. Only the parts it creates
    are checked (`have` is the deepest folder of it that exists): the owner's are theirs."""
    new = rel[len(have) + 1 :] if have else rel
    for ch in new:
        if unicodedata.category(ch) in ("Cf", "Cc"):
            return f"has an invisible character (U+{ord(ch):04X}) a reader cannot see"
        if unicodedata.category(ch) in ("Zl", "Zp"):
            # a line break to str.splitlines and to a terminal: `plan.md\u2028 (summary).md`
            # shows as two lines and split a review mark in two (adversarial pass 3, N2)
            return f"has a line separator (U+{ord(ch):04X}) that breaks the name in two lines"
        if ch in LOOKALIKE_SLASHES:
            return f"has {ch!r}, which looks like a folder's slash but is not one"
        if ch in NAME_RESERVED:
            return f"has {ch!r}, which Windows and Obsidian do not allow in a file name"
    for part in new.split("/"):
        if part != part.rstrip(" ."):
            return f"has a name ending in a space or a dot ({part!r}), which Windows drops"
        if DEVICES.fullmatch(part):
            return f"has {part!r}, a device name on Windows"
    return None
