"""Pure text transforms for the write tools. Each changes only what it names; every other byte
of the note (line endings, frontmatter order, quoting, comments, date formats) stays as it was.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from server.core.errors import VaultwatchError
from server.notes.frontmatter import FrontmatterLoader, frontmatter_tags, split_frontmatter
from server.notes.note import Doc
from server.notes.reading import ReadError, find_section


class EditError(VaultwatchError, ValueError):
    """An edit that cannot be made as asked; `code` names why, the message says what to do.

    `later`, when set, builds more of the message (edit_text's closest line): the caller runs
    it after releasing the vault's write lock, since on a long note it takes a while."""

    def __init__(self, code: str, message: str, later: Callable[[], str] | None = None) -> None:
        super().__init__(code, message)
        self.later = later


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _with_newlines(content: str, nl: str) -> str:
    content = content.replace("\r\n", "\n")
    return content.replace("\n", nl) if nl != "\n" else content


# ------------------------------------------------------------------------------------------------
# append_section

HEADING_SPEC = re.compile(r"^(#{1,6})\s+(.*)$")


def append_section(text: str, doc: Doc, heading: str, content: str) -> str:
    """Append `content` at the end of section `heading` (before the next heading of the same or
    a higher level); add the heading at the end of the note when it is missing."""
    nl = newline_of(text)
    spec = heading.strip()
    m = HEADING_SPEC.match(spec)
    level = len(m.group(1)) if m else None
    name = m.group(2).strip() if m else spec
    if not name:
        raise EditError("bad_heading", "heading is empty: give one such as 'Log' or '## Log'")
    body = _with_newlines(content.strip("\r\n"), nl)
    if not body.strip():
        raise EditError("empty_content", "content is empty: give the text to append")
    try:
        h = find_section(doc, name)
    except ReadError as exc:
        if "matches" in str(exc):
            raise EditError("ambiguous_heading", str(exc)) from exc
        h = None
    if h is None:
        parent = None
        if "/" in name:
            try:
                parent = find_section(doc, name.rsplit("/", 1)[0])
            except ReadError:
                parent = None
        title = name.rsplit("/", 1)[-1]
        lvl = level or (parent.level + 1 if parent else 2)
        block = f"{'#' * lvl} {title}{nl}{body}{nl}"
        if parent is not None:
            return _insert(text, _section_content_end(text, parent.start, parent.end), block, nl)
        head = text.rstrip("\r\n")
        sep = nl * 2 if head else ""
        return head + sep + block
    return _insert(text, _section_content_end(text, h.body_start, h.end), body + nl, nl)


def _section_content_end(text: str, start: int, end: int) -> int:
    """End of the last non-blank line in text[start:end]: blank lines before the next heading
    stay where they are, after the appended text."""
    pos = end
    while pos > start:
        line_start = max(start, text.rfind("\n", start, pos - 1) + 1)
        if text[line_start:pos].strip():
            return pos
        pos = line_start
    return start


def _insert(text: str, pos: int, block: str, nl: str) -> str:
    before = text[:pos]
    if before and not before.endswith("\n"):
        before += nl  # the section ended the file without a newline
    return before + block + text[pos:]


# ------------------------------------------------------------------------------------------------
# edit_text


def edit_text(text: str, old: str, new: str, count: int = 1) -> str:
    if not old:
        raise EditError("empty_old", "old is empty: give the exact text to replace")
    nl = newline_of(text)
    old_n, new_n = _with_newlines(old, nl), _with_newlines(new, nl)
    found = _count_overlapping(text, old_n)
    if found == count and text.count(old_n) == count:  # overlapping matches are ambiguous
        return text.replace(old_n, new_n, count)
    if found == 0:
        # the hint is built by the caller once the write lock is released: see EditError
        hint = functools.partial(_closest_hint, text, old)
        raise EditError("no_match", "old text was not found (0 matches).", later=hint)
    raise EditError(
        "match_count",
        f"old text matches {found} times, not {count}. Give more surrounding text so it matches "
        f"once, or pass count={found} to replace every match.",
    )


def _count_overlapping(text: str, needle: str) -> int:
    n, pos = 0, text.find(needle)
    while pos >= 0:
        n += 1
        pos = text.find(needle, pos + 1)
    return n


def _closest_hint(text: str, old: str) -> str:
    best = closest_line(text, old)
    return f" The closest line is line {best[0]}: {best[1]!r}." if best else ""


# The closest-line hint compares the first line of `old` with the note by character trigrams:
# one pass over the note, in C (set lookups of zip tuples), so its cost grows with the note's
# length and nothing else. difflib's SequenceMatcher, used before, grew faster than the square
# of a long line (minutes for one misquoted table line); tests/test_hangs.py holds the bound.
HINT_WANT_CHARS = 200  # of old's first non-blank line: plenty to recognise a line by
HINT_PIECE_CHARS = 2_000  # long lines are compared in overlapping pieces of this size...
HINT_OVERLAP = HINT_WANT_CHARS  # ...overlapping by a whole `want`, so no match is cut in two
HINT_SCAN_CHARS = 2 * 1024 * 1024  # of the note: as much as the largest note a write accepts
HINT_SHOW_CHARS = 200  # of the closest line, in the message


def _grams(s: str, n: int) -> Iterator[tuple[str, ...]]:
    return zip(*(s[i:] for i in range(n)), strict=False)


def _pieces(line: str) -> Iterator[tuple[int, str]]:
    step = HINT_PIECE_CHARS - HINT_OVERLAP
    for start in range(0, max(1, len(line) - HINT_OVERLAP), step):
        yield start, line[start : start + HINT_PIECE_CHARS]


def closest_line(text: str, old: str) -> tuple[int, str] | None:
    """(line number, the part of that line to show) holding the most of `old`'s first line, for
    a helpful no_match error; None when no line holds half of it."""
    want = next((ln for ln in old.splitlines() if ln.strip()), "").strip()[:HINT_WANT_CHARS]
    if not want:
        return None
    n = min(3, len(want))
    wanted = set(_grams(want, n))
    best: tuple[int, int, int] | None = None  # (grams found, line number, piece start)
    lines = text[:HINT_SCAN_CHARS].splitlines()
    for num, line in enumerate(lines, 1):
        for start, piece in _pieces(line):
            found = len(wanted.intersection(_grams(piece, n)))
            if found and (best is None or found > best[0]):
                best = (found, num, start)
    if best is None or best[0] < len(wanted) / 2:
        return None
    found, num, start = best
    return num, _shown(lines[num - 1], want, start)


def _shown(line: str, want: str, start: int) -> str:
    """The closest line, or for a long one the stretch where `want` best begins."""
    line_text = line.strip()
    if len(line_text) <= HINT_SHOW_CHARS:
        return line_text
    piece = line[start : start + HINT_PIECE_CHARS]
    at = 0
    for k in (48, 24, 12, 6, 3):  # the longest start of `want` the piece holds
        pos = piece.find(want[:k])
        if pos >= 0:
            at = pos
            break
    begin = max(0, start + at - 20)
    shown = line[begin : begin + HINT_SHOW_CHARS].strip()
    return ("…" if begin > 0 else "") + shown + ("…" if begin + HINT_SHOW_CHARS < len(line) else "")


# ------------------------------------------------------------------------------------------------
# update_frontmatter: line surgery, so untouched keys stay byte-identical


class _Dumper(yaml.SafeDumper):
    """Writes dates unquoted (2026-10-02), as people write them in Obsidian."""


_Dumper.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in rs if tag != "tag:yaml.org,2002:timestamp"]
    for ch, rs in yaml.SafeDumper.yaml_implicit_resolvers.items()
}
KEY_LINE = re.compile(r"^([^\s#][^:\n]*?)\s*:(?:\s|$)")


def render_value(key: str, value: Any, flow: bool = True) -> str:
    """One top-level `key: value` entry as YAML; lists in flow style ([a, b]) unless asked."""

    def dump(v: Any, flow_style: bool) -> str:
        return yaml.dump(
            v,
            Dumper=_Dumper,
            allow_unicode=True,
            sort_keys=False,
            default_flow_style=flow_style,
            width=10_000,
        )

    if isinstance(value, list) and flow:
        key_text = dump({key: 0}, False).rsplit(":", 1)[0]
        return f"{key_text}: {dump(value, True).strip()}"
    return dump({key: value}, False).rstrip("\n")


def render_new_note(fields: dict[str, Any], tags: list[str], body: str) -> str:
    """A new note's text: its fields (then `tags`) as frontmatter, then `body`, ending in a
    newline. The one layout of a created note, whether the AI (create_doc) or the owner (the
    dashboard's new-note form) makes it."""
    lines = [render_value(k, v) for k, v in fields.items() if k != "tags"]
    if tags:
        lines.append(render_value("tags", tags))
    head = "---\n" + "\n".join(lines) + "\n---\n" if lines else ""
    return head + (body if body.endswith("\n") or not body else body + "\n")


def _blocks(fm_lines: list[str]) -> list[tuple[str | None, int, int]]:
    """(key, first line, end line) of each top-level entry; None for comments and blanks."""
    blocks: list[tuple[str | None, int, int]] = []
    for i, line in enumerate(fm_lines):
        m = KEY_LINE.match(line)
        if m and not line.startswith((" ", "\t", "-")):
            blocks.append((m.group(1).strip().strip("'\""), i, i + 1))
        elif (
            blocks
            and blocks[-1][0] is not None
            and (line.startswith((" ", "\t", "-")) or not line.strip())
        ):
            key, start, _ = blocks[-1]
            blocks[-1] = (key, start, i + 1)
        else:
            blocks.append((None, i, i + 1))
    # trailing blank lines belong to nobody
    fixed = []
    for key, start, end in blocks:
        while key is not None and end - 1 > start and not fm_lines[end - 1].strip():
            end -= 1
        fixed.append((key, start, end))
    return fixed


def update_frontmatter(
    text: str,
    set_: dict[str, Any] | None = None,
    unset: list[str] | None = None,
    add_tags: list[str] | None = None,
    remove_tags: list[str] | None = None,
) -> str:
    set_ = dict(set_ or {})
    unset = list(unset or [])
    nl = newline_of(text)
    fm_text, fm_start, body_start = split_frontmatter(text)
    if fm_text is not None:
        try:
            current = yaml.load(fm_text, Loader=FrontmatterLoader) or {}
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            raise EditError(
                "broken_yaml",
                f"this note's frontmatter is not valid YAML ({getattr(exc, 'problem', exc)}); it "
                "was not changed. Read the note and fix the YAML with replace_doc.",
            ) from exc
        if not isinstance(current, dict):
            raise EditError("broken_yaml", "this note's frontmatter is not a mapping of keys")
    else:
        current = {}
    both = set(set_) & set(unset)
    if both:
        raise EditError("conflicting_keys", f"{sorted(both)} are in both set and unset")
    if add_tags or remove_tags:
        tags = frontmatter_tags(current)
        folded = {t.casefold() for t in (remove_tags or [])}
        tags = [t for t in tags if t.casefold().lstrip("#") not in {f.lstrip("#") for f in folded}]
        for t in add_tags or []:
            t = t.strip().lstrip("#")
            if t and t.casefold() not in {x.casefold() for x in tags}:
                tags.append(t)
        set_["tags"] = tags
        if "tags" not in current and "tag" in current:
            unset.append("tag")
    if fm_text is None:
        lines = [render_value(k, v) for k, v in set_.items()]
        return "---" + nl + nl.join(lines) + nl + "---" + nl + text
    fm_lines = fm_text.replace("\r\n", "\n").split("\n")
    if fm_lines and fm_lines[-1] == "":
        fm_lines.pop()
    blocks = _blocks(fm_lines)
    out: list[str] = []
    done: set[str] = set()
    for key, start, end in blocks:
        chunk = fm_lines[start:end]
        if key is not None and key in unset:
            continue
        if key is not None and key in set_ and key not in done:
            block_style = len(chunk) > 1 and chunk[1].lstrip().startswith("-")
            rendered = render_value(key, set_[key], flow=not block_style)
            if block_style and isinstance(set_[key], list):
                indent = chunk[1][: len(chunk[1]) - len(chunk[1].lstrip())]
                rendered = (
                    render_value(key, [], flow=True).rsplit(":", 1)[0]
                    + ":\n"
                    + "\n".join(f"{indent}- {render_value('x', v)[3:]}" for v in set_[key])
                )
            out.extend(rendered.split("\n"))
            done.add(key)
            continue
        out.extend(chunk)
    for key, value in set_.items():
        if key not in done:
            out.extend(render_value(key, value).split("\n"))
    new_fm = nl.join(out)
    head = text[:fm_start]
    closing = text[fm_start + len(fm_text) : body_start]
    return head + new_fm + (nl if new_fm else "") + closing + text[body_start:]
