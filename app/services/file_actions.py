"""What only the owner may do to the vault's files: move or rename (a note or a folder) with
every link to it rewritten, create a note from a doc type, delete with `git rm`.

Each action is planned first (nothing written; the plan is the preview the owner confirms)
and then applied under the vault's write lock: pending owner edits to the files involved are
snapshotted, the working tree is changed with an undo log, and one commit is made as the owner
with the trailer `Vaultwatch-Action: move|create|remove`. Any failure on the way undoes what
was done, so the vault is exactly as it was. Before the first file is touched the action's
intent is recorded (the write path's own record: each path's bytes before and after), so a
crash half-way through a move of a thousand notes is rolled back by the next start or the next
writer, AI or owner; every action first puts right what a dead writer left. No Textual here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from app.services.actions import ActionError
from app.services.history import FileChange
from server.core.faults import crash_point, fault_after
from server.core.git_log import ACTION, commit_message
from server.core.git_run import GitError, human_identity
from server.core.gitrepo import ignored_paths
from server.core.state_files import state_dir
from server.notes.config import Config, DocType, load_config
from server.notes.dates import as_date
from server.notes.entry import classify
from server.notes.links import LinkIndex, link_settings, rewrite_links
from server.notes.note import decode, parse_doc
from server.notes.paths import NOTE_EXTENSIONS, PathRefused, is_note, normalize_rel
from server.notes.walk import walk_files
from server.write.commits import commit_blobs, disk_blobs
from server.write.journal import Journal
from server.write.leases import Replacing, WriteRace
from server.write.store import Store
from server.write.store_errors import StoreError
from server.write.temp_files import _temp_name, _write_temp
from server.write.validate import new_problems, problems

# ------------------------------------------------------------------------------------------------
# the vault's files


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
    named = set((_config(root) or Config()).protected_paths())

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


def spelled(root: Path, rel: str) -> str:
    """`rel` (NFC, as every path here is compared) as it is spelled on disk: a name made on
    macOS may be NFD, and Linux opens only the bytes it has (adversarial pass 3, N16: such a
    note could be neither moved nor deleted). A path that does not exist stays as given."""
    if rel.isascii() or os.path.lexists(root / rel):
        return rel
    here, out = root, []
    for part in rel.split("/"):
        if not os.path.lexists(here / part):
            try:
                match = [n for n in os.listdir(here) if unicodedata.normalize("NFC", n) == part]
            except OSError:
                return rel
            if len(match) != 1:
                return rel
            part = match[0]
        out.append(part)
        here = here / part
    return "/".join(out)


def _read(root: Path, rel: str) -> bytes | None:
    try:
        return (root / spelled(root, rel)).read_bytes()
    except FileNotFoundError:
        return None


def _texts(root: Path, files: list[str], extensions: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for f in files:
        if is_note(f, extensions):
            data = _read(root, f)
            if data is not None:
                out[f] = decode(data)[0]
    return out


def _clean_path(raw: str, what: str) -> str:
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


# ------------------------------------------------------------------------------------------------
# plans (the previews)


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
    config = _config(root)
    exts = config.extensions if config is not None else NOTE_EXTENSIONS
    src = _clean_path(source, "the file to move")
    dst = _clean_path(dest, "the new path")
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
    texts = _texts(root, files, exts)
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
        if (data := _read(root, p)) is not None
    }
    return MovePlan(moves, edits, found, originals, exts)


def _config(root: Path) -> Config | None:
    try:
        return load_config(root)
    except Exception:  # a broken config does not stop the owner from moving files
        return None


@dataclass
class RemovePlan:
    path: str
    backlinks: list[tuple[str, int, str]]  # (note, line number, the link as written)
    original: bytes


def plan_remove(root: Path, path: str) -> RemovePlan:
    """What deleting `path` would break: every link to it from another note."""
    rel = _clean_path(path, "the file to delete")
    refuse_links(root, [rel])
    data = _read(root, rel)
    if data is None or not (root / spelled(root, rel)).is_file():
        raise ActionError(f"{rel} is not a file in the vault")
    files = vault_files(root)
    config = _config(root)
    texts = _texts(root, files, config.extensions if config is not None else NOTE_EXTENSIONS)
    index = LinkIndex(files)
    links = []
    for src, link in index.backlinks(rel, texts):
        if src == rel:
            continue
        text = texts[src]
        links.append((src, text.count("\n", 0, link.start) + 1, text[link.start : link.end]))
    return RemovePlan(rel, links, data)


@dataclass
class NewNote:
    path: str
    text: str


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
    config = _config(root)
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
    given = (as_date(fields.get(f, "").strip()) for f in (*t.dates, "date"))
    d = next((x for x in given if x), None) or date.today()
    year, week, _ = d.isocalendar()
    parts = {"week": f"{year}-W{week:02d}", "year": f"{d.year:04d}"}
    parts |= {"month": f"{d.month:02d}", "day": f"{d.day:02d}"}
    return {f: parts[f] for f in wanted}


def plan_create(root: Path, type_name: str, fields: dict[str, str], title: str = "") -> NewNote:
    """A new note of `type_name`: its path from the type's folder and filename pattern,
    frontmatter then a heading, checked by the write path's own rules (`validate.problems`:
    required fields, dates, allowed values), said in the form's words."""
    # the server's write path (pydantic, the vault's indexes) loads when a note is first made,
    # not with the dashboard (its first paint)
    from server.services.op_plans import note_path
    from server.services.write_plan import Rejected
    from server.write.frontmatter_edits import render_new_note

    config = _config(root)
    if config is None or type_name not in config.types:
        raise ActionError(f"unknown type {type_name!r}")
    t = config.types[type_name]
    values = {k: v.strip() for k, v in fields.items() if v.strip()}
    values = {**from_date(t, values), **values}  # what the owner typed wins
    body = f"# {title.strip()}\n" if title.strip() else ""
    text = render_new_note(values, [], "\n" + body if body else "")
    try:
        path: str | None = note_path(config, type_name, {**values, "title": title.strip()}, body)
    except Rejected as exc:
        path, naming = None, f"{exc.message} ({exc.hint})"
    doc = parse_doc(path or f"{t.folder}/{type_name}.md", text.encode())
    # without a path (the name pattern lacks a field), the stand-in's name is not the owner's
    found = [p for p in problems(doc, config) if path is not None or p.code != "wrong_filename"]
    missing = [p.key for p in found if p.code == "missing_field"]
    if missing:
        raise ActionError(f"fill in {', '.join(missing)}")
    if found:
        raise ActionError("; ".join(str(p) for p in found))
    if path is None:
        raise ActionError(naming)
    if (root / path).exists():
        raise ActionError(f"{path} exists already; change the fields or the title")
    return NewNote(path, text)


# ------------------------------------------------------------------------------------------------
# applying: lock, snapshot, working tree with an undo log, one commit


class _Tree:
    """Working-tree changes, each with its undo; `rollback` runs the undos newest first. The
    changes are announced first (`intend`: the store's intent record), so that a crash, which
    runs no undo, is rolled back by recovery instead."""

    def __init__(self, root: Path, store: Store) -> None:
        self.root = root
        self.store = store
        self.names: dict[str, str] = {}  # path -> its spelling on disk (see _action)
        self.undo: list[Callable[[], None]] = []
        # the failure tests fail a step like a full disk would (as root, read-only files do not)
        self.fail_after = fault_after("action_after")
        self.steps = 0

    def intend(
        self,
        what: str,
        files: list[tuple[str, bytes | None, bytes | None]],
        between: dict[str, bytes] | None = None,
    ) -> None:
        """Record (path, bytes now, bytes after) for every file the action changes, and the
        bytes a file holds half-way (`between`), before any is touched."""
        self.store.record_intent(what, files, between)

    def done(self) -> None:
        self.store.drop_intent()

    def _step(self) -> None:
        if self.fail_after is not None and self.steps >= self.fail_after:
            raise OSError(errno.EIO, "injected failure (VAULTWATCH_FAULT)")
        self.steps += 1

    def move(self, old: str, new: str) -> None:
        self._step()
        src, dst = self.root / spelled(self.root, old), self.root / new
        made = _missing_parents(dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        self.undo.append(lambda: _rmdirs(made))
        os.link(src, dst)  # unlike rename, fails if `new` appeared since the preview
        self.undo.append(lambda: os.unlink(dst))
        crash_point("tree_link")  # both names hold the file
        os.unlink(src)
        self.undo.append(lambda: os.link(dst, src))
        crash_point("tree_step")

    def write(self, path: str, data: bytes, old: bytes | None) -> None:
        self._step()
        target = self.root / (path if old is None else spelled(self.root, path))
        if old is None:
            made = _missing_parents(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            self.undo.append(lambda: _rmdirs(made))
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            self.undo.append(lambda: os.unlink(target))
            crash_point("tree_link")  # the new file, still empty
        tmp = _temp_name(self.root, target)
        _write_temp(tmp, target, data)
        # a new note replaces the empty file made just above (an editor may have written
        # into it since); put back as that, which the undo above then removes
        self._replace(target, path, b"" if old is None else old, tmp, data)
        crash_point("tree_step")

    def remove(self, path: str, old: bytes) -> None:
        self._step()
        self._replace(self.root / spelled(self.root, path), path, old, None, None)
        crash_point("tree_step")

    def _replace(
        self, target: Path, rel: str, old: bytes, tmp: str | None, ours: bytes | None
    ) -> None:
        """Rename `tmp` over `target` (None: remove it) under the AI's write rule
        (`leases.Replacing`: a read lease from the check until after the rename, the bytes
        compared at the rename, the old copy looked at again after it), so that an editor
        saving into the note mid-move or mid-delete loses nothing: a save before the check
        refuses the action, one held by the lease or seen in the old copy after the rename is
        put back by the rollback (WriteRace.restore), never the previewed bytes over it. The
        undo puts `old` back only while the file is still ours (`ours`; None: removed), under
        a lease too (`Store._put_back`): an edit made into our copy since is newer, kept."""
        replacing = Replacing()
        back = old
        try:
            try:
                replacing.replace(target, rel, old, None, tmp)
            except BaseException:
                if tmp is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                raise

            def put_back() -> None:
                self.store._put_back(target, ours, back)  # `back` as it is at the rollback

            self.undo.append(put_back)
            replacing.confirm()
        except WriteRace as race:
            if race.restore is not None:
                back = race.restore  # what the editor saved into the old copy, not the preview
            raise
        finally:
            replacing.close()

    def rollback(self) -> None:
        for undo in reversed(self.undo):
            with contextlib.suppress(OSError):
                undo()
        self.undo.clear()
        self.store.drop_intent()


def _missing_parents(path: Path) -> list[Path]:
    out = []
    p = path.parent
    while not p.exists():
        out.append(p)
        p = p.parent
    return out


def _rmdirs(folders: list[Path]) -> None:
    for f in folders:  # deepest first
        with contextlib.suppress(OSError):
            f.rmdir()


def prune_empty_folders(root: Path, folders: set[str]) -> None:
    """Remove folders a move, delete or revert emptied (git keeps no empty folders; Obsidian
    would show them)."""
    for f in sorted(folders - {""}, key=len, reverse=True):
        while f:
            try:
                (root / f).rmdir()
            except OSError:
                break
            f = posixpath.dirname(f)


@contextlib.contextmanager
def _action(root: Path, involved: list[str]) -> Iterator[_Tree]:
    """The write lock, a git state that allows a commit, whatever a dead writer left half-done
    put right (Store.begin: before anything is read as the owner's), and the owner's pending
    edits to the files involved committed first. Yields the tree to change, with each path's
    spelling on disk (and so in git) as it was before the action (`names`): the intent and the
    commit name what git has, an NFD name included."""
    store = Store(root, Journal(state_dir(root) / "events.jsonl", client="dashboard"))
    with store.locked():
        refuse_links(root, involved)  # again under the lock: a link made since the preview
        try:
            store.begin()
            names = {p: spelled(root, p) for p in involved}
            store.snapshot(sorted(d for d in names.values() if (root / d).is_file()))
        except StoreError as exc:
            raise ActionError(exc.for_owner) from None
        except GitError as exc:
            raise ActionError(str(exc)) from None
        except WriteRace as exc:  # saved into while its pending edit was being committed
            raise ActionError(f"nothing was done: {_why(exc)}; try again") from None
        tree = _Tree(root, store)
        tree.names = names
        yield tree


def _commit(tree: _Tree, paths: list[str], subject: str, action: str) -> str:
    """One commit as the owner of exactly these paths as they are on disk now (the write
    path's private index: anything else the owner has staged stays out of it). A path git
    ignores and does not track is refused, as `git add` would."""
    root = tree.root
    ignored = ignored_paths(root, [p for p in paths if os.path.lexists(root / p)])
    if ignored:
        raise GitError(f"git ignores {', '.join(ignored)}; nothing was committed")
    message = commit_message(subject, {ACTION: action})
    entries = disk_blobs(root, paths)
    tree.store.intent_commits(entries)
    sha = commit_blobs(root, entries, message, human_identity(root))
    tree.done()
    return sha


def _move_files(
    root: Path, plan: MovePlan
) -> tuple[list[tuple[str, bytes | None, bytes | None]], dict[str, bytes]]:
    """A move as the intent records it: each old path going, each new path coming (with its
    rewritten links, if any), each other note whose links change; and the bytes a moved note
    holds at its new path before its links are rewritten (half-way)."""
    files: list[tuple[str, bytes | None, bytes | None]] = []
    between: dict[str, bytes] = {}
    for old, new in plan.moves.items():
        data = plan.originals.get(old, _read(root, old))
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


def _unchanged(root: Path, originals: dict[str, bytes]) -> None:
    for path, data in originals.items():
        if _read(root, path) != data:
            raise ActionError(f"{path} changed since the preview; nothing was done. Look again.")


def apply_move(root: Path, plan: MovePlan) -> str:
    """Do the move the plan previewed; returns the commit's sha."""
    involved = sorted({*plan.moves, *plan.moves.values(), *plan.originals})
    with _action(root, involved) as tree:
        _unchanged(root, plan.originals)
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
            sha = _commit(tree, [tree.names[p] for p in involved], plan.subject, "move")
        except (OSError, GitError, WriteRace) as exc:
            tree.rollback()
            raise ActionError(
                f"the move failed and was undone, nothing changed: {_why(exc)}"
            ) from None
        prune_empty_folders(root, {posixpath.dirname(o) for o in plan.moves})
    return sha


def _why(exc: BaseException) -> str:
    if isinstance(exc, WriteRace):
        return f"{exc.rel} {exc.reason or 'changed meanwhile'}"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def apply_remove(root: Path, plan: RemovePlan) -> str:
    """`git rm` the file as one commit by the owner (revertable like any commit)."""
    with _action(root, [plan.path]) as tree:
        if _read(root, plan.path) is None:
            raise ActionError(f"{plan.path} is gone already")
        _unchanged(root, {plan.path: plan.original})
        try:
            tree.intend("remove", [(tree.names[plan.path], plan.original, None)])
            tree.remove(plan.path, plan.original)
            sha = _commit(tree, [tree.names[plan.path]], f"remove: {plan.path}", "remove")
        except (OSError, GitError, WriteRace) as exc:
            tree.rollback()
            raise ActionError(f"the delete failed and was undone: {_why(exc)}") from None
        prune_empty_folders(root, {posixpath.dirname(plan.path)})
    return sha


def apply_create(root: Path, note: NewNote) -> str:
    with _action(root, []) as tree:
        refuse_links(root, [note.path])  # a folder that is a link would put the note outside
        data = note.text.encode()
        try:
            tree.intend("create", [(note.path, None, data)], {note.path: b""})
            tree.write(note.path, data, None)
            sha = _commit(tree, [note.path], f"create: {note.path}", "create")
        except FileExistsError:
            tree.rollback()
            raise ActionError(f"{note.path} exists already; nothing was written") from None
        except (OSError, GitError, WriteRace) as exc:
            tree.rollback()
            raise ActionError(f"creating {note.path} failed and was undone: {_why(exc)}") from None
    return sha


def suggest_folder(root: Path, path: str) -> str | None:
    """The folder a note's doc type lives in, when the note is elsewhere: its declared `type`,
    else the one type whose required fields it all has."""
    config = _config(root)
    data = _read(root, path)
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
