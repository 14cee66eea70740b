"""Moving or renaming a note or a folder, every link to it rewritten: the plan (what the owner
confirms; nothing written) and the move, one commit as the owner (action_tree). A move that
takes a note out of its doc type's folder says so. No Textual here."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from app.services.action_tree import (
    check_unchanged,
    commit_action,
    open_action,
    why_failed,
)
from app.services.actions import ActionError
from app.services.history import FileChange
from app.services.vault_files import (
    clean_path,
    file_bytes,
    note_texts,
    refuse_links,
    vault_config,
    vault_files,
)
from server.core.git_run import GitError
from server.notes.entry import classify
from server.notes.links import LinkIndex, link_settings, rewrite_links
from server.notes.note import decode, parse_doc
from server.notes.paths import NOTE_EXTENSIONS, is_note
from server.notes.walk import spelled
from server.write.leases import WriteRace
from server.write.recovery import prune_empty_folders
from server.write.validate import new_problems, problems


@dataclass
class MovePlan:
    moves: dict[str, str]  # old path -> new path, every file moved
    edits: dict[str, tuple[str, str]]  # note (its path after the move) -> (text before, after)
    problems: list[str]  # type rules the move breaks at the new place
    originals: dict[str, bytes] = field(default_factory=dict)  # what was read, to detect races
    extensions: tuple[str, ...] = NOTE_EXTENSIONS  # what is a note here (the config's)

    @property
    def subject(self) -> str:
        if len(self.moves) == 1:
            ((old, new),) = self.moves.items()
            return f"move: {old} → {new}"
        return f"move: {_common_folder(list(self.moves))}/ → {_common_folder(list(self.moves.values()))}/"

    def changes(self) -> list[FileChange]:
        """The preview as diffs: each rename, then each note whose links change."""
        out = []
        for old, new in self.moves.items():
            if new not in self.edits:
                note = is_note(old, self.extensions)
                text = decode(self.originals.get(old, b""))[0] if note else ""
                out.append(FileChange(new, "R", old, text, text))
        for path, (before, after) in self.edits.items():
            was = next((o for o, n in self.moves.items() if n == path), None)
            out.append(FileChange(path, "R" if was else "M", was, before, after))
        return out


def _common_folder(paths: list[str]) -> str:
    return posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])


def plan_move(root: Path, source: str, dest: str) -> MovePlan:
    """What moving `source` (a file or a folder) to `dest` would do. Nothing is written.

    A note moved onto a folder goes inside it under its own name; a note's destination without
    an extension gets the note's own (`.md`)."""
    files = vault_files(root)
    config = vault_config(root)
    exts = config.extensions if config is not None else NOTE_EXTENSIONS
    src = clean_path(source, "the file to move")
    dst = clean_path(dest, "the new path")
    refuse_links(root, [src, dst])
    is_folder = (root / spelled(root, src)).is_dir()
    if not is_folder and src not in files:
        raise ActionError(f"{src} is not a file in the vault")
    if is_folder:
        moves = {f: dst + f[len(src) :] for f in files if f.startswith(src + "/")}
        if not moves:
            raise ActionError(f"{src}/ holds no files to move")
        if dst == src or dst.startswith(src + "/"):
            raise ActionError(f"cannot move {src}/ into itself")
    else:
        if (root / dst).is_dir() or dest.strip().endswith("/"):  # into a folder, new or not
            dst = f"{dst}/{posixpath.basename(src)}"
        elif is_note(src, exts) and not posixpath.splitext(dst)[1]:
            dst += posixpath.splitext(src)[1]
        moves = {src: dst}
    moves = {o: n for o, n in moves.items() if o != n}
    if not moves:
        raise ActionError("the new path is the same as the old one")
    refuse_links(root, [*moves, *moves.values()])  # a link inside a folder moved
    taken = set(files) - set(moves)
    for new in moves.values():
        if new in taken or ((root / new).exists() and new not in moves):
            raise ActionError(f"{new} exists already; choose another name")
        parent = posixpath.dirname(new)
        while parent:
            if parent in taken:
                raise ActionError(f"{parent} is a file, so {new} cannot be made under it")
            parent = posixpath.dirname(parent)
    texts = note_texts(root, files, exts)
    before = LinkIndex(files)
    after = LinkIndex([moves.get(f, f) for f in files])
    settings = link_settings(root)
    edits: dict[str, tuple[str, str]] = {}
    for path, text in texts.items():
        new_path = moves.get(path, path)
        new_text = rewrite_links(text, path, new_path, moves, before, after, settings)
        if new_text != text:
            edits[new_path] = (text, new_text)
    found: list[str] = []
    if config is not None:
        for old, new in moves.items():
            if not is_note(old, exts) or old not in texts:
                continue
            text = edits.get(new, (texts[old], texts[old]))[1]
            old_doc, new_doc = parse_doc(old, texts[old].encode()), parse_doc(new, text.encode())
            was, now = problems(old_doc, config), problems(new_doc, config)
            found += [f"{new}: {p.message} ({p.hint})" for p in new_problems(was, now)[0]]
            old_type, new_type = classify(old_doc, config).type, classify(new_doc, config).type
            if old_type and old_type != new_type:
                folder = config.types[old_type].folder
                found.append(
                    f"{new}: no longer a {old_type!r} note ({old_type} notes live in {folder}/): "
                    "lists, context and checks of that type will not see it"
                )
    originals = {
        p: data
        for p in {*moves, *(o for o in texts if moves.get(o, o) in edits)}
        if (data := file_bytes(root, p)) is not None
    }
    return MovePlan(moves, edits, found, originals, exts)


def _move_files(
    root: Path, plan: MovePlan
) -> tuple[list[tuple[str, bytes | None, bytes | None]], dict[str, bytes]]:
    """A move as the intent records it: each old path going, each new path coming (with its
    rewritten links, if any), each other note whose links change; and the bytes a moved note
    holds at its new path before its links are rewritten (half-way)."""
    files: list[tuple[str, bytes | None, bytes | None]] = []
    between: dict[str, bytes] = {}
    for old, new in plan.moves.items():
        data = plan.originals.get(old, file_bytes(root, old))
        if data is None:
            raise ActionError(f"{old} is gone since the preview; nothing was done. Look again.")
        after = plan.edits[new][1].encode() if new in plan.edits else data
        files += [(old, data, None), (new, None, after)]
        if new in plan.edits:
            between[new] = data
    moved_to = set(plan.moves.values())
    for path, (_, after_text) in plan.edits.items():
        if path not in moved_to:
            files.append((path, plan.originals[path], after_text.encode()))
    return files, between


def apply_move(root: Path, plan: MovePlan) -> str:
    """Do the move the plan previewed; returns the commit's sha."""
    involved = sorted({*plan.moves, *plan.moves.values(), *plan.originals})
    with open_action(root, involved) as tree:
        check_unchanged(root, plan.originals)
        try:
            files, between = _move_files(root, plan)
            spell = tree.names.get  # the intent names the files as they are on disk
            tree.intend(
                "move",
                [(spell(p, p), old, new) for p, old, new in files],
                {spell(p, p): data for p, data in between.items()},
            )
            for old, new in plan.moves.items():
                tree.move(old, new)
            for path, (before, after) in plan.edits.items():
                tree.write(path, after.encode(), before.encode())
            sha = commit_action(tree, [tree.names[p] for p in involved], plan.subject, "move")
        except (OSError, GitError, WriteRace) as exc:
            tree.rollback()
            raise ActionError(
                f"the move failed and was undone, nothing changed: {why_failed(exc)}"
            ) from None
        prune_empty_folders(root, {posixpath.dirname(o) for o in plan.moves})
    return sha
