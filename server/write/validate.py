"""What makes a note worse: its problems under the vault's rules, secrets, attachment changes.

A write is judged by comparing the note's problems before and after: a new problem rejects the
write (with a hint that says how to fix it); a problem that was already there is a warning.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from server.core.redact import secrets_in
from server.notes.config import Config, DocType, obsidian_tag_problem
from server.notes.dates import as_date
from server.notes.entry import classify
from server.notes.frontmatter import frontmatter_tags, to_json
from server.notes.links import Link, LinkIndex
from server.notes.note import UNCLOSED_FENCE, Doc
from server.notes.paths import PathPolicy, PathRefused
from server.notes.superseded import is_superseded_value
from server.notes.walk import walk_files


@dataclass(frozen=True)
class Problem:
    code: str
    key: str  # what it is about (field, tag, ...): problems compare by (code, key)
    message: str
    hint: str

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})"


FILENAME_PARTS = {
    "date": r"\d{4}-\d{2}-\d{2}",
    "year": r"\d{4}",
    "month": r"\d{2}",
    "week": r"\d{2}",
    "day": r"\d{2}",
}


def filename_regex(pattern: str) -> re.Pattern[str]:
    out, pos = [], 0
    for m in re.finditer(r"\{(\w+)\}", pattern):
        out.append(re.escape(pattern[pos : m.start()]))
        out.append(FILENAME_PARTS.get(m.group(1), r".+"))
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("".join(out) + r"\Z")


def problems(doc: Doc, config: Config) -> list[Problem]:
    """Everything wrong with a note under the vault's rules (not counting secrets)."""
    out: list[Problem] = []
    for p in doc.problems:
        if p.startswith("broken YAML") or p.startswith("frontmatter"):
            out.append(
                Problem(
                    "broken_yaml",
                    "frontmatter",
                    f"the frontmatter is broken: {p}",
                    "write valid YAML between the --- lines",
                )
            )
        elif p.startswith(UNCLOSED_FENCE):
            # one per note (the first fence left open swallows the rest): a note that had one
            # stays writable, a note that had none may not get one
            out.append(
                Problem(
                    "unclosed_fence",
                    "fence",
                    p,
                    "close the code block: end it with a line of the same fence (``` or ~~~, "
                    "at least as long as the one that opens it)",
                )
            )
    entry = classify(doc, config)
    fm = doc.frontmatter
    t: DocType | None = config.types.get(entry.type) if entry.type else None
    declared = fm.get("type")
    if isinstance(declared, str) and declared in config.types:
        folder = config.types[declared].folder
        if not doc.path.startswith(folder + "/"):
            out.append(
                Problem(
                    "wrong_folder",
                    "type",
                    f"type {declared!r} notes live in {folder}/",
                    f"put it under {folder}/ or change type",
                )
            )
    if t is not None:
        for f in t.required:
            if fm.get(f) in (None, "", []):
                out.append(
                    Problem(
                        "missing_field",
                        f,
                        f"required field {f!r} is missing",
                        f"set {f} in the frontmatter",
                    )
                )
        for f in t.dates:
            v = fm.get(f)
            if v not in (None, "") and as_date(v) is None:
                out.append(
                    Problem(
                        "bad_date", f, f"{f}: {shown(v)} is not a date", f"write {f} as YYYY-MM-DD"
                    )
                )
        for f, allowed in t.values.items():
            v = fm.get(f)
            vals = v if isinstance(v, list) else [v]
            for x in vals:
                if is_superseded_value(f, x):  # marking a note replaced is never a problem
                    continue
                if x not in (None, "") and str(x) not in {str(a) for a in allowed}:
                    out.append(
                        Problem(
                            "bad_value",
                            f"{f}={x}",
                            f"{f}: {shown(x)} is not allowed",
                            f"use one of: {', '.join(shown(a, quote=False) for a in allowed)}",
                        )
                    )
        if t.filename:
            name = doc.path.rsplit("/", 1)[-1]
            if not filename_regex(t.filename).match(name):
                out.append(
                    Problem(
                        "wrong_filename",
                        "filename",
                        f"file name {name!r} does not fit {t.filename!r}",
                        f"name it like {t.filename}",
                    )
                )
    for tag in frontmatter_tags(fm):
        why = obsidian_tag_problem(tag)
        if why:  # (an inline tag cannot be one: the reader stops at a space, skips digits)
            out.append(
                Problem(
                    "bad_tag",
                    tag.casefold(),
                    f"tag {tag!r} {why}",
                    "write tags as one word: letters, digits, _, - and / for nesting",
                )
            )
    if config.tags.unknown == "reject" and config.vocabulary:
        for tag in doc.tags:
            if tag.casefold() not in config.vocabulary:
                out.append(
                    Problem(
                        "unknown_tag",
                        tag.casefold(),
                        f"tag {tag!r} is not in the vocabulary",
                        closest_tags(tag, config),
                    )
                )
    return out


def shown(value: Any, quote: bool = True) -> str:
    """A frontmatter value as the owner writes it in YAML (false, null, 2026-10-02), never as
    Python prints it (False, None, datetime.date(...)); text quoted unless `quote` is off."""
    if isinstance(value, str):
        return repr(value) if quote else value
    return json.dumps(to_json(value), ensure_ascii=False, default=str)


def closest_tags(tag: str, config: Config) -> str:
    known = list(config.vocabulary.values())
    close = difflib.get_close_matches(tag, known, n=3, cutoff=0.4)
    if close:
        return f"closest known tags: {', '.join(close)} (list_tags shows them all)"
    return "use a tag from the vocabulary (list_tags shows them)"


def new_problems(
    before: list[Problem], after: list[Problem]
) -> tuple[list[Problem], list[Problem]]:
    """(problems the write adds, problems that were already there)."""
    old = {(p.code, p.key) for p in before}
    added = [p for p in after if (p.code, p.key) not in old]
    kept = [p for p in after if (p.code, p.key) in old]
    return added, kept


# ------------------------------------------------------------------------------------------------
# Secrets (the patterns live in redact.py, shared with the journal's masking)


def new_secret_hits(old: str, new: str) -> list[tuple[str, str]]:
    """(pattern name, value) of each secret the new text adds (one already there is the owner's)."""
    before = set(secrets_in(old))
    return [hit for hit in secrets_in(new) if hit not in before]


def new_secrets(old: str, new: str) -> list[str]:
    """Names of secret patterns the new text adds."""
    return sorted({name for name, _ in new_secret_hits(old, new)})


def decoded_values(doc: Doc) -> str:
    """Every key and string value of the note's frontmatter as YAML decodes it, one per line.

    The raw text can spell a secret so that no pattern sees it (`"\\x41KIA…"`, a folded or
    escaped line break) while git, Obsidian and every reader get the decoded value: the secret
    check runs on these too.
    """
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple, set)):
            for v in value:
                walk(v)

    walk(doc.frontmatter)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------
# Attachments


def attachment_targets(links: tuple[Link, ...]) -> list[str]:
    """Targets of embeds and links to non-note files, as written (order not significant)."""
    return sorted(
        link.target for link in links if link.is_attachment or (link.embed and link.target)
    )


def missing_attachments(links: tuple[Link, ...], note_path: str, policy: PathPolicy) -> list[str]:
    """Attachment targets that point at no file the assistant may see, resolved as Obsidian
    resolves them (the one resolver, `links.LinkIndex`): `![[x.png]]` and `![](x.png)` by name
    anywhere in the vault, `![](rel/x.png)` relative to the note or from the vault's root. A
    private file, a dot-folder's or one outside the vault counts as missing, so the answer
    never tells the assistant that such a file exists."""
    missing = []
    index: LinkIndex | None = None
    folder = note_path.rsplit("/", 1)[0] if "/" in note_path else ""
    for link in links:
        if not (link.is_attachment or link.embed) or not link.target:
            continue
        target = link.target
        # the common case, a path from the note's folder or the root, needs no walk
        near = posixpath.join(folder, target) if link.kind == "md" else target
        if not target.startswith("/") and _visible_file(policy, near):
            continue
        if index is None:
            index = LinkIndex(visible_files(policy))
        if index.resolve(link, note_path) is None:
            missing.append(target)
    return missing


def _visible_file(policy: PathPolicy, rel: str) -> bool:
    """Whether `rel` is a file a read could reach: `..` that leaves the vault, an absolute
    path, a dot-folder, a private folder or a symlink out are all 'no file'."""
    try:
        return policy.resolve(posixpath.normpath(rel), note=False).disk.is_file()
    except PathRefused:
        return False


def visible_files(policy: PathPolicy) -> set[str]:
    """The path of every file outside dot-folders and private folders (symlinks by their
    target's rule), as the one walk (notes/walk.py) names them."""
    return {
        f.rel
        for f in walk_files(
            policy.root,
            want=lambda rel, is_dir: not policy.is_private(rel),
            target_ok=policy.target_allowed,
        )
    }
