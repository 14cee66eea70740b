"""Each write operation planned over a `Plan`: append, edit, frontmatter, replace, create (its path, tags and embeds, and the search before it stores), supersede; `plan_op` picks one."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date
from typing import Any, assert_never

from server.notes.config import Config, normalize_tag, tag_problem
from server.notes.dates import note_date
from server.notes.frontmatter import frontmatter_tags
from server.notes.note import parse_doc
from server.notes.paths import is_note, new_name_problem
from server.notes.superseded import BY_FIELD, DATE_FIELD, STATUS, STATUS_FIELD, by_link
from server.services.dedupe import SHOWN, near_notes
from server.services.supersede import chain, successor
from server.services.write_plan import PATH_HINTS, Outcome, Plan, Rejected, slugify
from server.vault import VaultError
from server.write.edit_base import EditError, newline_of
from server.write.edits import append_section, edit_text
from server.write.frontmatter_edits import render_new_note, update_frontmatter
from server.write.validate import (
    attachment_targets,
    closest_tags,
    missing_attachments,
)
from server.write.write_ops import (
    AppendSection,
    CreateDoc,
    EditText,
    ReplaceDoc,
    SupersedeDoc,
    UpdateFrontmatter,
    WriteOp,
)


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
    d = note_date(t.dates, fields)
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
