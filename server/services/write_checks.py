"""What a planned write must pass before anything is written: not worse, no secret, no control character, the tag vocabulary; and the diffs a result shows."""

from __future__ import annotations

import difflib
import re
from typing import Any

import yaml

from server.core.linediff import Opcode, opcodes
from server.core.redact import mask_secrets, secrets_in
from server.core.safetext import CONTROLS_HINT, added_controls, controls_message
from server.notes.config import ConfigError, parse_vocabulary
from server.notes.note import CONFLICT_MARKER, Doc, decode, parse_doc
from server.services.write_plan import MAX_NOTE_BYTES, Plan, Rejected, _File
from server.write.file_write import FileWrite
from server.write.journal import cap_diff
from server.write.validate import (
    decoded_values,
    new_problems,
    new_secret_hits,
    new_secrets,
    problems,
)


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
