"""The six write operations, planned against the current files, checked, then committed.

Every operation is planned first (in memory, under the write lock) into the new bytes of each
file it touches; the checks run on that plan; only a plan that passes every check is written.
A batch plans all its operations in order over the same in-memory files, reports every error
at once, and commits once. Nothing here knows MCP.
"""

from __future__ import annotations

import difflib
import itertools
import json
import logging
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any, assert_never

import pydantic
import yaml

from server.core.errors import VaultwatchError
from server.core.gitrepo import ANSWERS, filtered_paths, ignored_paths
from server.core.linediff import Opcode, opcodes
from server.core.redact import mask_secrets, secrets_in
from server.core.safetext import CONTROLS_HINT, added_controls, controls_message
from server.core.tool_names import ToolName
from server.notes.config import Config, ConfigError, normalize_tag, parse_vocabulary, tag_problem
from server.notes.dates import as_date
from server.notes.frontmatter import frontmatter_tags
from server.notes.note import CONFLICT_MARKER, Doc, content_hash, decode, parse_doc
from server.notes.paths import fold, is_note, is_protected, new_name_problem
from server.notes.superseded import BY_FIELD, DATE_FIELD, STATUS, STATUS_FIELD, by_link
from server.services.dedupe import SHOWN, near_notes
from server.services.feedback import AnswersRefused, check_answers
from server.services.supersede import chain, successor
from server.vault import Vault, VaultError
from server.write import store as store_mod
from server.write.edits import (
    EditError,
    append_section,
    edit_text,
    newline_of,
    render_new_note,
    update_frontmatter,
)
from server.write.journal import cap_diff
from server.write.store import (
    FileWrite,
    GitBusy,
    Stamp,
    Store,
    StoreError,
    WriteRace,
    git_moment,
    read_stable,
)
from server.write.validate import (
    attachment_targets,
    closest_tags,
    decoded_values,
    missing_attachments,
    new_problems,
    new_secret_hits,
    new_secrets,
    problems,
)
from server.write.write_ops import (
    WRITE_OPS,
    AppendSection,
    CreateDoc,
    EditText,
    ReplaceDoc,
    SupersedeDoc,
    UpdateFrontmatter,
    WriteOp,
)

log = logging.getLogger("vaultwatch.writes")

MAX_NOTE_BYTES = 2 * 1024 * 1024
DIFF_IN_RESULT = 1_500


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


# ------------------------------------------------------------------------------------------------
# the operations


def op_append(p: Plan, a: AppendSection) -> Outcome:
    f = p.file(a.path)
    p.check_hash(f, a.hash)
    assert f.text is not None
    try:
        f.text = append_section(f.text, p.doc(f), a.heading, a.content)
    except EditError as exc:
        hint = exc.hint or "read_doc shows the note's headings"
        raise Rejected(exc.code, exc.message, hint, [f.rel]) from exc
    return Outcome(f.rel, subject=f"{a.tool}: {f.rel} § {a.heading.strip().lstrip('#').strip()}")


def op_edit(p: Plan, a: EditText) -> Outcome:
    f = p.file(a.path)
    p.check_hash(f, a.hash)
    assert f.text is not None
    try:
        f.text = edit_text(f.text, a.old, a.new, a.count)
    except EditError as exc:
        rej = Rejected(exc.code, exc.message, "copy old exactly from read_doc", [f.rel])
        if exc.later is not None:
            rej.message += rej.defer(exc.later)
        raise rej from exc
    return Outcome(f.rel, subject=f"{a.tool}: {f.rel}")


def op_frontmatter(p: Plan, a: UpdateFrontmatter) -> Outcome:
    f = p.file(a.path)
    p.check_hash(f, a.hash)
    assert f.text is not None
    set, unset, add_tags, remove_tags = a.set, a.unset, a.add_tags, a.remove_tags
    if not (set or unset or add_tags or remove_tags):
        raise Rejected(
            "empty_change",
            "nothing to change: give set, unset, add_tags or remove_tags",
            "name at least one key or tag",
            [f.rel],
        )
    _prepare_tags(p, add_tags or [])
    try:
        f.text = update_frontmatter(f.text, set, unset, add_tags, remove_tags)
    except EditError as exc:
        hint = exc.hint or "fix the YAML with replace_doc"
        raise Rejected(exc.code, exc.message, hint, [f.rel]) from exc
    keys = [*(set or {}), *(unset or [])] + (["tags"] if add_tags or remove_tags else [])
    return Outcome(f.rel, subject=f"{a.tool}: {f.rel} ({', '.join(dict.fromkeys(keys))})")


def op_replace(p: Plan, a: ReplaceDoc) -> Outcome:
    f = p.file(a.path)
    content = a.content
    if not a.hash:
        raise Rejected(
            "hash_required",
            "replace_doc needs the hash from your last read_doc",
            "call read_doc first and pass its hash",
            [f.rel],
        )
    p.check_hash(f, a.hash)
    assert f.text is not None
    old_doc = p.doc(f)
    # the model writes LF; the note keeps its own line ending (CRLF, or old Mac's lone CR)
    nl = newline_of(f.text)
    new_text = content if nl == "\n" or "\r" in content else content.replace("\n", nl)
    new_doc = parse_doc(f.rel, new_text.encode("utf-8"))
    before, after = attachment_targets(old_doc.links), attachment_targets(new_doc.links)
    if before != after:
        parts = _embed_changes(Counter(before), Counter(after))
        raise Rejected(
            "attachments_changed",
            f"replace_doc may not change the note's images or attachments: it {'; '.join(parts)}",
            "keep every ![[...]] and ![](...) embed exactly as in the current note; "
            "use edit_text for small changes",
            [f.rel],
        )
    f.text = new_text
    return Outcome(f.rel, subject=f"{a.tool}: {f.rel}")


def _embed_changes(before: Counter[str], after: Counter[str]) -> list[str]:
    """What a replace did to the attachments, counted: dropping one of two identical embeds
    is a change too, and says so."""
    out = []
    for target in sorted(before | after):
        was, now = before[target], after[target]
        if now == 0:
            out.append(f"drops {target}")
        elif was == 0:
            out.append(f"adds {target}")
        elif now < was:
            out.append(
                f"drops {'one' if was - now == 1 else was - now} of {was} embeds of {target}"
            )
        elif now > was:
            out.append(f"embeds {target} {now} times instead of {was}")
    return out


def _prepare_tags(p: Plan, tags: list[str]) -> None:
    """Vocabulary mode refuses unknown tags; create mode adds them to the vocabulary file."""
    cfg = p.config
    for raw in tags:
        why = tag_problem(normalize_tag(raw)) if normalize_tag(raw) else None
        if why:
            hint = "use a short word such as 'system-design' or 'crdt/sync'"
            raise Rejected("bad_tag", f"tag {raw[:80]!r} {why}", hint, [])
    if not cfg.vocabulary and not cfg.tags.vocabulary:
        return
    for raw in tags:
        t = normalize_tag(raw)
        if not t or t.casefold() in cfg.vocabulary:
            continue
        if cfg.tags.unknown == "reject":
            raise Rejected(
                "unknown_tag", f"tag {t!r} is not in the vocabulary", closest_tags(t, cfg), []
            )
        p.vocab_add[t.casefold()] = t


def note_path(cfg: Config, type_name: str | None, fields: dict[str, Any], body: str) -> str:
    """Where a new note of this type goes: its folder and its filename pattern filled from the
    fields (a date, else today; a slug from the title). Raises Rejected naming what is missing."""
    if type_name is None:
        raise Rejected(
            "path_required",
            "give a type (so the path comes from the vault config) or a path",
            f"types here: {', '.join(sorted(cfg.types)) or 'none'}",
            [],
        )
    t = cfg.types.get(type_name)
    if t is None:
        raise Rejected(
            "unknown_type",
            f"unknown type {type_name!r}",
            f"types here: {', '.join(sorted(cfg.types)) or 'none'}",
            [],
        )
    title = _title_of(fields, body)
    d = next((as_date(fields.get(f)) for f in (*t.dates, "date") if as_date(fields.get(f))), None)
    d = d or date.today()
    pattern = t.filename or "{slug}.md"

    def fill(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "date":
            return d.isoformat()
        if key in ("year", "month", "day"):
            return {"year": f"{d.year:04d}", "month": f"{d.month:02d}", "day": f"{d.day:02d}"}[key]
        if key == "week":
            return f"{d.isocalendar()[1]:02d}"
        if key in ("slug", "title"):
            if not title:
                raise Rejected(
                    "title_required",
                    f"the file name pattern {pattern!r} needs a title",
                    "set fields.title or start body with '# Title'",
                    [],
                )
            return slugify(title)
        if fields.get(key) in (None, ""):
            raise Rejected(
                "missing_field",
                f"the file name pattern {pattern!r} needs field {key!r}",
                f"set fields.{key}",
                [],
            )
        return slugify(fields[key])

    name = re.sub(r"\{(\w+)\}", fill, pattern)
    if not is_note(name, cfg.extensions):
        name += cfg.extensions[0]
    return f"{t.folder}/{name}"


def _title_of(fields: dict[str, Any], body: str) -> str | None:
    if isinstance(fields.get("title"), str) and fields["title"].strip():
        return fields["title"].strip()
    m = re.search(r"^#\s+(.+?)\s*$", body, re.M)
    return m.group(1) if m else None


def op_create(p: Plan, a: CreateDoc) -> Outcome:
    type, body = a.type, a.body
    fields = dict(a.fields or {})
    # tags given as a field are tags too: checked and written as such (they were dropped)
    given = [*(a.tags or []), *frontmatter_tags({"tags": fields.pop("tags", None)})]
    tags = list({t.casefold(): t for t in (g.strip().lstrip("#") for g in given) if t}.values())
    target = a.path or note_path(p.config, type, fields, body)
    title = _title_of(fields, body) or target.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    f = p.file(target, must_exist=False)
    folder = f.rel.rsplit("/", 1)[0] if "/" in f.rel else ""
    # Same folder + same title: the note exists already; hand it back instead of a second copy.
    for e in p.vault.entries().values():
        if e.doc.folder == folder and e.doc.title.casefold() == title.casefold():
            return Outcome(e.doc.path, hash=e.doc.hash, created=False, existing=True, subject="")
    twin = p.created.get((folder, title.casefold()))
    if twin is not None:  # made by an earlier operation of this batch
        made = p.file(twin, must_exist=False)
        return Outcome(made.rel, hash=p.doc(made).hash, created=False, existing=True, subject="")
    if f.text is not None:
        doc = p.doc(f)
        return Outcome(f.rel, hash=doc.hash, created=False, existing=True)
    have = folder
    while have and not (p.vault.root / have).is_dir():
        have = have.rpartition("/")[0]
    if (why := new_name_problem(f.rel, have)) is not None:
        raise Rejected(
            "bad_name",
            f"{f.rel!r} {why}",
            "choose a name without it: letters of any script, digits, spaces, - and _ are fine",
            [f.rel],
        )
    if type and type in p.config.types and "type" not in fields:
        t = p.config.types[type]
        if not f.rel.startswith(t.folder + "/"):
            fields["type"] = type
    if (fields or tags) and re.match(r"\ufeff?---[ \t]*\r?\n", body):
        raise Rejected(
            "two_frontmatters",
            "body starts with its own frontmatter (---) and fields or tags are given too: the "
            "note would have two, and the second would read as text",
            "put those keys in fields (and tags), and start body after the frontmatter",
            [f.rel],
        )
    _prepare_tags(p, tags)
    text = render_new_note(fields, tags, body)
    missing = missing_attachments(parse_doc(f.rel, text.encode()).links, f.rel, p.vault.policy)
    if missing:
        raise Rejected(
            "missing_attachment",
            f"embeds point at files that do not exist: {', '.join(missing)}",
            "embed only files that are in the vault",
            [f.rel],
        )
    similar = _search_before_store(p, f.rel, text, a.distinct_from or [])
    f.text = text
    p.created[(folder, title.casefold())] = f.rel
    return Outcome(f.rel, created=True, subject=f"{a.tool}: {f.rel}", similar=similar)


def _search_before_store(
    p: Plan, rel: str, text: str, distinct_from: list[str]
) -> list[dict[str, Any]]:
    """Refuse a new note the vault already holds (dedupe.near_notes), unless the call named
    the notes it was found close to in `distinct_from`; else the closest, to list as similar."""
    near = near_notes(p.vault, rel, text)
    named = {r for raw in distinct_from if (r := _rel_or_none(p, raw)) is not None}
    same = [n for n in near if n.refuse and n.path not in named]
    if same:
        shown = same[:SHOWN]
        paths = ", ".join(repr(n.path) for n in shown)
        raise Rejected(
            "near_duplicate",
            f"the vault already has {'a note' if len(same) == 1 else f'{len(same)} notes'} "
            f"saying nearly what {rel} would: " + "; ".join(n.said() for n in shown),
            "read it and add what is new there (append_section, edit_text); if the new note "
            "replaces it, write the new note with distinct_from and then call supersede_doc("
            f"path=<old note>, by=<new note>); if you read it and yours says something else, "
            f"call create_doc again with distinct_from: [{paths}]",
            [rel],
        )
    return [n.to_json() for n in near[:SHOWN]]


def op_supersede(p: Plan, a: SupersedeDoc) -> Outcome:
    """Mark `path` replaced by `by`: three frontmatter keys, every other byte as it was. `by`
    must be a note the AI can read (or one this batch creates), not `path`, and must not lead
    back to `path` through the notes that replace it (a -> b -> a would hide both)."""
    f = p.file(a.path)
    p.check_hash(f, a.hash)
    assert f.text is not None
    planned = p.files.get(_rel_or_none(p, a.by) or "")
    if planned is not None and planned.text is not None:
        by = planned.rel
    else:
        try:
            by = p.vault.resolve(a.by).rel
        except VaultError as exc:
            hint = (
                "create the replacing note first (create_doc), then supersede this one with its path"
                if exc.code == "not_found"
                else PATH_HINTS.get(exc.code, "name a note list_docs shows")
            )
            raise Rejected(exc.code, f"by: {exc.message}", hint, [f.rel]) from exc
    if by == f.rel:
        raise Rejected(
            "supersede_self",
            f"{f.rel} cannot be superseded by itself",
            "name the note that replaces it in by",
            [f.rel],
        )
    entries = p.vault.entries()
    loop = chain(by, entries, {**p.superseded, f.rel: by})
    if f.rel in loop:
        path = " -> ".join([f.rel, *loop[: loop.index(f.rel) + 1]])
        raise Rejected(
            "supersede_loop",
            f"superseding {f.rel} by {by} makes a loop ({path}): every note in it would be "
            "hidden as replaced by another",
            f"{by} is itself marked superseded; read it (read_doc says by what), and supersede "
            f"{f.rel} by the note that holds now",
            [f.rel],
        )
    fm = p.doc(f).frontmatter
    if successor(fm, {**entries, by: None}) == by:  # already so: nothing to change, not the date
        return Outcome(f.rel, subject="")
    keys = {
        STATUS_FIELD: STATUS,
        BY_FIELD: by_link(by),
        DATE_FIELD: date.today().isoformat(),
    }
    try:
        f.text = update_frontmatter(f.text, keys)
    except EditError as exc:
        hint = exc.hint or "fix the YAML with replace_doc"
        raise Rejected(exc.code, exc.message, hint, [f.rel]) from exc
    p.superseded[f.rel] = by
    return Outcome(f.rel, subject=f"{a.tool}: {f.rel} by {by}: {a.reason.strip()}")


def _rel_or_none(p: Plan, raw: str) -> str | None:
    try:
        return p.vault.resolve(raw, must_exist=False).rel
    except VaultError:
        return None


def plan_op(p: Plan, a: WriteOp) -> Outcome:
    """Plan one operation: the one dispatch from an operation's arguments to its planning."""
    match a:
        case CreateDoc():
            return op_create(p, a)
        case AppendSection():
            return op_append(p, a)
        case EditText():
            return op_edit(p, a)
        case UpdateFrontmatter():
            return op_frontmatter(p, a)
        case ReplaceDoc():
            return op_replace(p, a)
        case SupersedeDoc():
            return op_supersede(p, a)
        case _:
            assert_never(a)


# ------------------------------------------------------------------------------------------------
# checks and commit


def attempted(tool: str, args: dict[str, Any]) -> str:
    """What a refused operation asked for, for the journal (masked there like every field): a
    refusal before any text was made (an unknown tag, type or path) has no diff to show. Text
    shows as written, YAML-like, never JSON-escaped (a secret spelled with escapes would slip past
    the masks); text with several lines shows as `+` lines."""
    return "\n".join([f"{tool}:", *_arg_lines(args, "")]) + "\n"


def _arg_lines(args: dict[str, Any], indent: str) -> list[str]:
    out = []
    for key, value in args.items():
        if value is None:  # an argument left out
            continue
        if isinstance(value, dict):
            out += [f"{indent}{key}:", *_arg_lines(value, indent + "  ")]
        elif isinstance(value, str) and "\n" in value:
            out += [f"{indent}{key}:", *(f"+{line}" for line in value.splitlines())]
        elif isinstance(value, str):
            out.append(f"{indent}{key}: {value}")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out.append(f"{indent}{key}: [{', '.join(value)}]")
        else:
            out.append(f"{indent}{key}: {json.dumps(value, ensure_ascii=False, default=str)}")
    return out


def _diff(f: _File) -> str:
    old = (decode(f.original)[0] if f.original is not None else "").splitlines(keepends=True)
    new = (f.text or "").splitlines(keepends=True)
    return unified_diff(old, new, f.rel)


# A write's diff is made under the write lock (for its result, or the journal when rejected).
# difflib aligns lines in time quadratic in the changed stretch (a note where every other line
# changed took minutes; tests/test_hangs.py holds the bound). Past this many changed lines,
# lines are paired by position instead (linear; exact when lines were edited in place, as
# in that case).
DIFF_ALIGN_LINES = 1_000


class _Opcodes(difflib.SequenceMatcher[str]):
    """difflib's grouping into hunks, over opcodes made elsewhere."""

    def __init__(self, codes: list[Opcode]) -> None:
        super().__init__(None, [], [])
        self.codes = codes

    def get_opcodes(self) -> list[Opcode]:
        return self.codes


def _opcodes(old: list[str], new: list[str]) -> list[Opcode]:
    # the one bounded engine (server/core/linediff.py), with this module's knob
    return opcodes(old, new, DIFF_ALIGN_LINES)


def _range(start: int, stop: int) -> str:
    """A hunk's line range as `diff -u` writes it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


def unified_diff(old: list[str], new: list[str], rel: str, n: int = 2) -> str:
    """A diff as difflib.unified_diff(old, new, a/rel, b/rel, n=n) writes one, in time that grows
    with the note: the unchanged head and tail are skipped in one pass (difflib may align a
    repeated line differently; both diffs turn old into new)."""
    out: list[str] = []
    for group in _Opcodes(_opcodes(old, new)).get_grouped_opcodes(n):
        if not out:
            out += [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in old[i1:i2]]
                continue
            out += ["-" + line for line in old[i1:i2]]
            out += ["+" + line for line in new[j1:j2]]
    return "".join(out)


def _secret_check(f: _File, old_text: str, old_doc: Doc | None, new_doc: Doc) -> Rejected | None:
    """A write may not add a secret to what git will hold: the text, the file's name (a new
    file), or the frontmatter as YAML decodes it (an escape such as "\\x41KIA…" hides a key
    from a look at the raw text, not from anyone who reads the note)."""
    assert f.text is not None
    raw = new_secret_hits(old_text, f.text)
    named = new_secret_hits("", f.rel) if f.original is None else []
    old_values = old_text + "\n" + (decoded_values(old_doc) if old_doc is not None else "")
    decoded = new_secret_hits(old_values, decoded_values(new_doc))
    found = sorted({name for name, _ in [*raw, *named, *decoded]})
    if not found:
        return None
    where = f"the name {f.rel!r}" if named and not (raw or decoded) else f"the change to {f.rel}"
    return Rejected(
        "secret",
        f"{where} contains what looks like a {' and a '.join(found)}; secrets never go into notes",
        "leave the secret out (say where it is kept instead)",
        [f.rel],
        _masked_diff(f, [v for _, v in [*raw, *named, *decoded]]),
    )


def _control_check(f: _File, old_text: str, old_doc: Doc | None, new_doc: Doc) -> Rejected | None:
    """A write may not add control characters (ESC and the rest; tab, LF and CR are text) to a
    note: the text, a heading, or the frontmatter as YAML decodes it ("\\e" in a title is an
    ESC for whoever prints the title). The owner's own stay theirs."""
    assert f.text is not None
    old_values = decoded_values(old_doc) if old_doc is not None else ""
    codes = sorted(
        {*added_controls(old_text, f.text), *added_controls(old_values, decoded_values(new_doc))}
    )
    if not codes:
        return None
    return Rejected(
        "control_chars", controls_message(f"the change to {f.rel}", codes), CONTROLS_HINT, [f.rel]
    )


def _masked_diff(f: _File, values: list[str]) -> str:
    """The attempted diff for the journal, without the secrets that refused it. A value the
    diff does not spell literally (a YAML escape) cannot be masked in it: then it is withheld."""
    assert f.text is not None
    if any(v not in f.text and v not in f.rel for v in values):
        return "(diff withheld: it spells a secret in an escaped form)\n"
    diff = mask_secrets(_diff(f))  # every pattern (a private key's whole block)
    # a value split over lines (`password:` then the value on the next) is split by the
    # diff's line prefixes too: mask each of its words
    words = {w for v in values for w in v.split() if len(w) >= 4}
    for word in sorted(words, key=len, reverse=True):
        diff = diff.replace(word, "[secret masked]")
    return cap_diff(diff)


def _message_secret(plan: Plan, subject: str) -> Rejected | None:
    """The commit message goes into git too: refuse a secret in it (a batch's message, a
    heading), unless it is the owner's already (an existing note's name or text)."""
    if not secrets_in(subject):
        return None
    known = [f.rel for f in plan.files.values() if f.original is not None]
    known += [decode(f.original)[0] for f in plan.files.values() if f.original is not None]
    found = new_secrets("\n".join(known), subject)
    if not found:
        return None
    return Rejected(
        "secret",
        f"the commit message contains what looks like a {' and a '.join(found)}; "
        "secrets never go into git",
        "leave the secret out of message",
        sorted(plan.touched),
    )


def check(p: Plan) -> tuple[list[FileWrite], dict[str, list[str]], list[Rejected]]:
    """(writes, warnings per path, rejections) for every file the plan changed."""
    writes: list[FileWrite] = []
    warnings: dict[str, list[str]] = {}
    errors: list[Rejected] = []
    for f in p.files.values():
        if f.text is None:
            continue
        new = f.text.encode("utf-8")
        if f.original is not None and new == f.original:
            continue
        if len(new) > MAX_NOTE_BYTES:
            errors.append(
                Rejected(
                    "too_large",
                    f"{f.rel} would be {len(new) // 1024} KB; the limit "
                    f"is {MAX_NOTE_BYTES // 1024 // 1024} MB",
                    "split it into several notes",
                    [f.rel],
                )
            )
            continue
        old_text = decode(f.original)[0] if f.original is not None else ""
        if CONFLICT_MARKER.search(f.text) and not CONFLICT_MARKER.search(old_text):
            errors.append(
                Rejected(
                    "conflict_markers",
                    f"the change to {f.rel} adds git conflict markers (<<<<<<< / >>>>>>>)",
                    "write the resolved text only",
                    [f.rel],
                )
            )
            continue
        old_doc = parse_doc(f.rel, f.original) if f.original is not None else None
        new_doc = parse_doc(f.rel, new)
        rejected = _secret_check(f, old_text, old_doc, new_doc) or _control_check(
            f, old_text, old_doc, new_doc
        )
        if rejected is not None:
            errors.append(rejected)
            continue
        before = problems(old_doc, p.config) if old_doc is not None else []
        after = problems(new_doc, p.config)
        added, kept = new_problems(before, after)
        if added:
            first = added[0]
            errors.append(
                Rejected(
                    first.code,
                    f"{f.rel}: " + "; ".join(a.message for a in added),
                    "; ".join(a.hint for a in added),
                    [f.rel],
                    cap_diff(_diff(f)),
                )
            )
            continue
        if kept:
            warnings[f.rel] = [f"already there: {k}" for k in kept]
        writes.append(FileWrite(f.rel, f.disk, f.original, new, f.stamp))
    return writes, warnings, errors


def vocab_write(p: Plan) -> FileWrite | None:
    """The new tags appended to the owner's vocabulary file, each written by the YAML emitter
    in the file's own form (list items, mapping keys, or items of an indented `tags:` list).
    The result is parsed again: a vocabulary that would not load, or would not name exactly
    the old tags plus the new ones, is a rejection (the next server would start without it)."""
    if not p.vocab_add or not p.config.tags.vocabulary:
        return None
    rel = p.config.tags.vocabulary
    path = p.vault.root / rel
    old = path.read_bytes() if path.exists() else None
    text = decode(old)[0] if old is not None else ""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None  # already broken: the re-parse below refuses
    as_mapping = isinstance(data, dict) and set(data) != {"tags"}
    # `tags:` over an indented block list takes items at the indentation of its last one
    last = text.rstrip().rsplit("\n", 1)[-1]
    item = re.match(r"( +)- ", last) if isinstance(data, dict) and not as_mapping else None
    indent = item.group(1) if item else ""
    if text and not text.endswith("\n"):
        text += "\n"
    for t in p.vocab_add.values():
        if as_mapping:  # `tag:` (a key with no description), quoted by the emitter if need be
            text += _dump_yaml({t: None}).removesuffix(" null\n") + "\n"
        else:
            text += indent + _dump_yaml([t])
    want = {**p.config.vocabulary, **{t.casefold(): t for t in p.vocab_add.values()}}
    try:
        got = parse_vocabulary(text, rel)
        why = "" if set(got) == set(want) else "the file's form does not take a plain addition"
    except ConfigError as exc:
        why = str(exc)
    if why:
        tags = ", ".join(repr(t) for t in p.vocab_add.values())
        raise Rejected(
            "vocabulary_unwritable",
            f"adding {tags} to {rel} would break it ({why})",
            f"use tags the vocabulary has (list_tags), or ask the owner to add them to {rel}",
            [rel],
        )
    return FileWrite(rel, rel, old, text.encode("utf-8"))


def _dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True, default_flow_style=False, width=10_000)


@dataclass
class WriteResult:
    commit: str | None
    outcomes: list[Outcome]
    paths: list[str]
    warnings: dict[str, list[str]]
    hashes: dict[str, str]
    diff: str
    # problems after the commit landed (an index that could not be updated): the write stands
    after_commit: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)  # feedback ids the commit names


REPLANS = 5


def _checked_args(name: str, args: dict[str, Any], n: int) -> WriteOp:
    """Operation `n`'s arguments, checked against its model: a batch's operations get the same
    checking as the tools themselves (the tools' parameters are the same models' fields)."""
    model = WRITE_OPS.get(name)
    if model is None:
        raise Rejected(
            "unknown_tool",
            f"operation {n}: unknown tool {name!r}",
            f"use one of {', '.join(WRITE_OPS)}",
            [],
        )
    try:
        return model.model_validate(args)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise Rejected(
            "bad_arguments",
            f"operation {n} ({name}) has bad arguments: {problems}",
            "check the argument names and types against the tool",
            [],
        ) from exc


def apply(
    vault: Vault,
    store: Store,
    tool: str,
    client: str,
    ops: list[tuple[str, dict[str, Any]]],
    message: str | None = None,
    answers: list[str] | None = None,
) -> WriteResult:
    """Plan, check and commit `ops` as one commit. Raises Rejected (all errors), Conflict,
    StoreError; returns with commit None when nothing would change (a no-op). `answers`: ids
    of the owner's open feedback the commit names (`Vaultwatch-Answers`), checked first.

    If the owner changes a file between the plan and the write, a plan that did not pin the
    file's content (no hash, no replace_doc) is simply made again on the new text: appending
    to the end of a section means the section as it is now. A pinned one is a conflict.
    """
    pinned = any(name == ToolName.REPLACE_DOC or args.get("hash") for name, args in ops)
    # Another git tool on the vault (the Obsidian Git plugin's sync: add, commit, rebase or
    # merge) is waited for, up to this, never written through: a commit made mid-rebase lands
    # on a branch the rebase resets (`git rebase --abort` drops it).
    deadline = time.monotonic() + store_mod.GIT_WAIT_S
    try:
        with store.locked():
            # git allows a commit (waited for); a writer that died mid-write is undone first
            store.begin(deadline)
            answered = _checked_answers(vault, answers or [])
            attempt = 0
            while True:
                moment = git_moment(vault.root)
                try:
                    return _apply_once(vault, store, tool, client, ops, message, answered)
                except GitBusy:
                    # git took its index or began an operation after the check: nothing was
                    # written; wait for it as above, then plan again on what it left
                    if time.monotonic() >= deadline:
                        raise
                    store.check_repo(deadline)
                except Rejected:
                    # planned while a rebase or merge begun after the check rewrote the notes
                    # (a note missing for a moment of its checkout): what the plan read is not
                    # the vault; waited for, then planned again on what it left
                    if git_moment(vault.root) == moment or time.monotonic() >= deadline:
                        raise
                    store.check_repo(deadline)
                except WriteRace as race:
                    attempt += 1
                    if pinned or attempt == REPLANS:
                        raise Conflict(
                            race.rel,
                            content_hash(race.expected)
                            if race.expected is not None
                            else "(no file)",
                            content_hash(race.actual) if race.actual is not None else "(deleted)",
                            race.reason,
                        ) from race
    except Rejected as exc:
        exc.finish()  # the lock is released: other writers no longer wait for the hints
        raise
    raise AssertionError("unreachable")


def _apply_once(
    vault: Vault,
    store: Store,
    tool: str,
    client: str,
    ops: list[tuple[str, dict[str, Any]]],
    message: str | None,
    answers: list[str],
) -> WriteResult:
    plan = Plan(vault)
    outcomes: list[Outcome] = []
    errors: list[Rejected] = []
    for i, (name, args) in enumerate(ops):
        plan.op = i + 1
        try:
            outcomes.append(plan_op(plan, _checked_args(name, args, i + 1)))
        except Rejected as exc:
            if not exc.paths:  # a rule about the arguments (a tag, a type): name the note anyway
                exc.paths = [p for p, nums in plan.touched.items() if plan.op in nums]
            exc.diff = exc.diff or cap_diff(attempted(name, args))
            if len(ops) > 1:
                exc.message = f"operation {i + 1} ({name}): {exc.message}"
            errors.append(exc)
    # Check the files even when an operation failed, so a batch reports every problem.
    writes, warnings, rejected = check(plan)
    if len(ops) > 1:
        for r in rejected:
            nums = sorted({n for path in r.paths for n in plan.touched.get(path, [])})
            label = "operation" + ("s " if len(nums) > 1 else " ") + ", ".join(map(str, nums))
            r.message = f"{label}: {r.message}"
    for r in rejected:  # the owner sees what the AI tried for every refusal, not only some
        r.diff = r.diff or cap_diff(
            "".join(_diff(plan.files[p]) for p in r.paths if p in plan.files)
        )
    if errors or rejected:
        raise _merge(errors + rejected)
    vw = vocab_write(plan)
    if vw is not None:
        writes.append(vw)
    _refuse_ignored(vault, writes)
    _refuse_filtered(vault, writes)
    if not writes:
        res = WriteResult(None, outcomes, [o.path for o in outcomes], warnings, _hashes(plan), "")
        res.answered = answers  # named, but no commit carries them: the result says so
        return res
    if len(ops) == 1:
        subject = outcomes[0].subject
    else:
        notes = len({w.rel for w in writes})
        subject = (
            message.strip().splitlines()[0]
            if message and message.strip()
            else (f"batch: {len(ops)} operations on {notes} note{'s' if notes != 1 else ''}")
        )
    leaked = _message_secret(plan, subject)
    if leaked is not None:
        raise leaked
    if codes := added_controls("", message or ""):
        raise Rejected(
            "control_chars",
            controls_message("message", codes),
            CONTROLS_HINT,
            sorted(plan.touched),
        )
    sha = store.commit(
        writes,
        subject=subject,
        tool=tool,
        client=client,
        config=plan.config,
        trailers=[(ANSWERS, a) for a in answers],
    )
    # The commit exists: from here on nothing may turn this into a failure (a retry would
    # write twice). The indexes are caches that catch up by themselves.
    res = WriteResult(sha, outcomes, [w.rel for w in writes], warnings, _hashes(plan), "")
    res.answered = answers

    def diff() -> None:
        res.diff = "".join(_diff(f) for f in plan.files.values() if f.text is not None)

    after_commit(res, "diff", diff)
    after_commit(res, "the search index", lambda: _reindex(vault, writes))
    return res


# a write that changed nothing made no commit, so it answered nothing
NOT_ANSWERED = "; so the feedback in answers stays open: make the change it asks for"


def _checked_answers(vault: Vault, answers: list[str]) -> list[str]:
    """The feedback ids a write answers, or Rejected (nothing written) naming the bad ones."""
    if not answers:
        return []
    try:
        return check_answers(vault, answers)
    except AnswersRefused as exc:
        raise Rejected(exc.code, exc.message, exc.hint, []) from exc


def after_commit(res: WriteResult, what: str, step: Callable[[], object]) -> None:
    """Run one piece of upkeep after a commit landed, best effort: a failure is logged and
    reported in the result (`after_commit`), never raised, since the write itself stands."""
    try:
        step()
    except Exception as exc:
        log.warning("after commit %s: updating %s failed", res.commit, what, exc_info=True)
        # The cause only, never the inner error's own words: those are written for a failed
        # call ("nothing was changed. Try again shortly"), and here the write stands
        # (adversarial pass 3, N17).
        cause = exc.__cause__ or exc
        detail = (
            cause.strerror
            if isinstance(cause, OSError) and cause.strerror
            else str(cause)[:120]
            if cause is not exc
            else type(exc).__name__
        )
        res.after_commit.append(
            f"the write is committed ({res.commit}), but updating {what} failed ({detail}); "
            "it catches up by itself. Do not repeat the write."
        )


def _refuse_ignored(vault: Vault, writes: list[FileWrite]) -> None:
    """A note git ignores is one the owner keeps out of history: committing it (as the AI's
    change, or as an owner snapshot before it) would put it there."""
    ignored = ignored_paths(vault.root, [w.disk for w in writes])
    if ignored:
        rels = [w.rel for w in writes if w.disk in ignored]
        raise Rejected(
            "git_ignored",
            f"{', '.join(rels)} is listed in .gitignore: the owner keeps it out of git, and the "
            "assistant does not write such notes",
            "leave it to the owner, or write to a note that is in git",
            rels,
        )


def _refuse_filtered(vault: Vault, writes: list[FileWrite]) -> None:
    """A note under a git filter (git-crypt, LFS) is stored as the filter makes it; our commits
    hold the bytes on disk, so committing it would put git-crypt's plaintext into history."""
    filtered = filtered_paths(vault.root, [w.disk for w in writes])
    if filtered:
        rels = [w.rel for w in writes if w.disk in filtered]
        names = ", ".join(sorted(set(filtered.values())))
        raise Rejected(
            "git_filtered",
            f"{', '.join(rels)} goes through the owner's git filter ({names}, e.g. git-crypt "
            "encryption): the assistant does not write such notes",
            "leave it to the owner, or write to another note",
            rels,
        )


def _hashes(plan: Plan) -> dict[str, str]:
    return {
        f.rel: content_hash(f.text.encode("utf-8"))
        for f in plan.files.values()
        if f.text is not None
    }


def _merge(errors: list[Rejected]) -> Rejected:
    if len(errors) == 1:
        return errors[0]
    merged = Rejected(
        errors[0].code,
        f"{len(errors)} problems, nothing was written: " + " | ".join(e.message for e in errors),
        " | ".join(dict.fromkeys(e.hint for e in errors)),
        [p for e in errors for p in e.paths],
        cap_diff("".join(e.diff for e in errors)),
    )
    for e in errors:
        merged.later.update(e.later)
    return merged


def _reindex(vault: Vault, writes: list[FileWrite]) -> None:
    """Written means searchable: the doc index and the search index, before the tool returns."""
    for w in writes:
        if w.new is None:  # the server never deletes; only owner actions do
            continue
        path = vault.root / w.disk
        st = path.stat()
        doc = parse_doc(w.rel, w.new, disk=w.disk, mtime_ns=st.st_mtime_ns, full=False)
        if vault.policy.is_note_name(w.rel):
            vault.index.put(doc, st)
            vault.search.update(doc, decode(w.new)[0])


def result_for(res: WriteResult, limit: int = DIFF_IN_RESULT) -> dict[str, Any]:
    """The shape the model sees for one write."""
    o = res.outcomes[0]
    out: dict[str, Any] = {"path": o.path, "hash": o.hash or res.hashes.get(o.path)}
    if o.existing:
        out["created"] = False
        out["note"] = "a note with this title already exists in that folder; update it instead"
        return out
    if o.created is not None:
        out["created"] = True
    out["commit"] = res.commit
    if res.answered and res.commit:
        out["answered"] = res.answered
    if res.commit is None:
        out["noop"] = True
        out["note"] = "the note already had exactly this content; nothing was committed" + (
            NOT_ANSWERED if res.answered else ""
        )
    if res.warnings.get(o.path):
        out["warnings"] = res.warnings[o.path]
    if o.similar and res.commit is not None:
        out["similar"] = o.similar
    if res.after_commit:
        out["after_commit"] = res.after_commit
    if res.diff:
        out["diff"] = _diff_in_result(res.diff, limit)
    return out


def batch_result_for(res: WriteResult, limit: int = DIFF_IN_RESULT) -> dict[str, Any]:
    """The shape the model sees for a batch: the commit, each operation's note and hash."""
    results = []
    for o in res.outcomes:
        item = {"path": o.path, "hash": o.hash or res.hashes.get(o.path), "created": o.created}
        results.append({k: v for k, v in item.items() if v is not None})
    similar = sorted(
        {s["path"]: s for o in res.outcomes for s in o.similar}.values(), key=lambda s: -s["score"]
    )
    return {
        "commit": res.commit,
        "results": results,
        "answered": res.answered if res.commit and res.answered else None,
        "note": NOT_ANSWERED.lstrip("; ") if res.commit is None and res.answered else None,
        "similar": similar[:SHOWN] if similar and res.commit is not None else None,
        "noop": True if res.commit is None else None,
        "warnings": res.warnings or None,
        "diff": _diff_in_result(res.diff, limit) if res.diff else None,
    }


def _diff_in_result(diff: str, limit: int) -> str:
    return diff if len(diff) <= limit else diff[:limit] + "\n… (diff cut)"


__all__ = [
    "Conflict",
    "Rejected",
    "StoreError",
    "apply",
    "batch_result_for",
    "plan_op",
    "result_for",
]
