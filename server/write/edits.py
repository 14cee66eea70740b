"""Pure text transforms for the write tools. Each changes only what it names; every other byte
of the note (line endings, frontmatter order, quoting, comments, date formats) stays as it was.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from server.notes.links import code_layout
from server.notes.note import UNCLOSED_FENCE, Doc, lf_lines
from server.notes.reading import AmbiguousSection, ReadError, find_section
from server.write.edit_base import EditError, _on_lf_lines, _with_newlines, newline_of

# ------------------------------------------------------------------------------------------------
# append_section

HEADING_SPEC = re.compile(r"^(#{1,6})\s+(.*)$")


def append_section(text: str, doc: Doc, heading: str, content: str) -> str:
    """Append `content` at the end of section `heading` (before the next heading of the same or
    a higher level); add the heading at the end of the note when it is missing. `doc` is the
    note parsed (parse_doc), whose offsets hold for `text` and its LF view alike."""
    return _on_lf_lines(text, lambda view, nl: _append_section(view, nl, doc, heading, content))


def _append_section(text: str, nl: str, doc: Doc, heading: str, content: str) -> str:
    spec = heading.strip()
    m = HEADING_SPEC.match(spec)
    level = len(m.group(1)) if m else None
    name = m.group(2).strip() if m else spec
    if not name:
        raise EditError("bad_heading", "heading is empty: give one such as 'Log' or '## Log'")
    body = _with_newlines(content.strip("\r\n"), nl)
    if not body.strip():
        raise EditError("empty_content", "content is empty: give the text to append")
    _refuse_open_fence(content, doc)
    try:
        h = find_section(doc, name)
    except AmbiguousSection as exc:
        raise EditError("ambiguous_heading", str(exc)) from exc
    except ReadError:
        h = None
    if h is None:
        parent = None
        if "/" in name:
            try:
                parent = find_section(doc, name.rsplit("/", 1)[0])
            except ReadError:
                parent = None
        # under a parent the note has, the last part is the new heading; with none, the `/`
        # is part of the heading's own text (TCP/UDP), as the owner would have typed it
        title = name.rsplit("/", 1)[-1].strip() if parent is not None else name
        lvl = level or (parent.level + 1 if parent else 2)
        block = f"{'#' * lvl} {title}{nl}{body}{nl}"
        if parent is not None:
            # a blank line first: right after an HTML block the heading would be part of it
            end = _section_content_end(text, parent.start, parent.end)
            return _insert(text, end, nl + block, nl)
        head = text.rstrip("\r\n")
        sep = nl * 2 if head else ""
        return head + sep + block
    end = _section_content_end(text, h.body_start, h.end)
    sep = nl if end > h.body_start and not _continues_list(text, h.body_start, end, body) else ""
    return _insert(text, end, sep + body + nl, nl)


# A list item's first line: `- x`, `* x`, `+ x`, `1. x`, `1) x` (a task `- [ ] x` too).
LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def _continues_list(text: str, start: int, end: int, body: str) -> bool:
    """Whether `body` is list items added to the list the section ends with, so no blank line
    goes between them (a log of `- ` lines stays one tight list). Any other appended text is
    set apart by a blank line: glued to the section's last line it would join that block (a
    table row, a callout's quote, an HTML block, a paragraph's lazy continuation)."""
    first = next((ln for ln in body.splitlines() if ln.strip()), "")
    if not LIST_ITEM.match(first):
        return False
    lines = text[start:end].splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    # the last item's own line, above its indented continuation lines
    while lines and lines[-1][:1] in (" ", "\t") and not LIST_ITEM.match(lines[-1]):
        lines.pop()
    return bool(lines) and LIST_ITEM.match(lines[-1]) is not None


def _refuse_open_fence(content: str, doc: Doc) -> None:
    """Appended text is a block of its own: a code fence it opens and never closes would turn
    everything after it into code, the owner's later sections included (their headings gone
    from every read), even where a fence further down happens to close it. A note whose own
    fence is already open is left to the check of the note's problems."""
    open_fence = code_layout(lf_lines(content.strip("\r\n")))[1]
    if open_fence is None or any(p.startswith(UNCLOSED_FENCE) for p in doc.problems):
        return
    raise EditError(
        "unclosed_fence",
        f"content opens a code fence ({open_fence.fence} on its line {open_fence.line}) and "
        "never closes it: appended, it would turn the rest of the note, the later sections' "
        "headings included, into code",
        hint=f"end the code with a line {open_fence.fence} (the same character, at least as "
        "many), then call append_section again",
    )


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
