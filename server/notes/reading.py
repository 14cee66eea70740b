"""read_doc's slicing: a whole note, one section, the last N entries, or a char offset, always
under the result budget, with an outline and a footer saying how to get what was left out."""

from __future__ import annotations

import difflib
import re
import unicodedata
from typing import Any

from server.core.budget import CUT, fit_text, json_len, prefix_fitting, shrink
from server.core.errors import VaultwatchError
from server.notes.note import Doc, Heading
from server.notes.textfold import fold

LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d+[.)])[ \t]+", re.M)
OUTLINE_MAX = 120
# chars of one heading path in the outline and in errors, cut (…) to what the write tools take
# as a heading (write_ops.MAX_HEADING is this): a cut path still names its heading (find_section)
HEADING_MAX = 200
FOOTER_ROOM = 450  # `next`, `range`, `complete` and the keys around them
MIN_CONTENT_ROOM = 120


class ReadError(VaultwatchError, ValueError):
    """A read the model can correct (unknown section, bad offset); the message says how."""

    code = "bad_arguments"


class AmbiguousSection(ReadError):
    """A section name that names several headings (append_section must not create another)."""


def _norm(s: str) -> str:
    """A heading as a section name compares: NFKC and case folded like search (? is ？), spaces
    collapsed, backticks dropped (a heading made of code, ### `daily:path`, is found by
    'daily:path' too)."""
    return " ".join(fold(s).replace("`", " ").split())


def _strict(s: str) -> str:
    """A heading as written, spacing aside: NFKC, no case folding, backticks kept."""
    return " ".join(unicodedata.normalize("NFKC", s).split())


def _by_whole_name(doc: Doc, section: str) -> list[Heading]:
    """The headings `section` names as a whole before it is read as a path: their full path,
    their own text, or the end of their path, as written (then folded as _norm does). A `/` in
    a heading (TCP/UDP) is then just a character, and ### `vault` is not its parent ## Vault."""
    for norm in (_strict, _norm):
        want = norm(section.strip())
        paths = [norm(h.path) for h in doc.headings]
        for found in (
            [h for h, p in zip(doc.headings, paths, strict=True) if p == want],
            [h for h in doc.headings if norm(h.text) == want],
            [h for h, p in zip(doc.headings, paths, strict=True) if p.endswith("/" + want)],
        ):
            if found:
                return found
    return []


def _by_path(doc: Doc, want: list[str]) -> list[Heading]:
    """`section` read as a path of headings, each part folded: the full path, else its end."""
    exact, suffix = [], []
    for h in doc.headings:
        parts = [_norm(p) for p in h.path.split("/")]
        if parts == want:
            exact.append(h)
        elif parts[-len(want) :] == want:
            suffix.append(h)
    return exact or suffix


def find_section(doc: Doc, section: str) -> Heading:
    """The heading `section` names: its full path as read_doc's outline prints it (cut paths,
    ending in …, included), its text, or the end of its path; an exact match wins over a
    reading of `/` as the path separator. Errors name the closest headings by full path."""
    want = [_norm(p) for p in section.strip().strip("/").split("/") if p.strip()]
    if not want and not section.strip():
        raise ReadError("section is empty: give a heading such as 'Log' or 'Week 42/Log'")
    found = _by_whole_name(doc, section) or (_by_path(doc, want) if want else [])
    cut = section.strip()
    if not found and cut.endswith(CUT) and len(cut) > len(CUT):
        head = _strict(cut[: -len(CUT)])  # a path (or heading) cut to fit, see address()
        found = [h for h in doc.headings if _strict(h.path).startswith(head)]
        found = found or [h for h in doc.headings if _strict(h.text).startswith(head)]
        found = found[:1]  # the first: a section's subsections start with its path too
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        choices = "; ".join(repr(fit_text(h.path, HEADING_MAX)) for h in found[:10])
        if len({h.path for h in found}) < len(found):
            # two sections with one path: no path names either, so say what does
            raise AmbiguousSection(
                f"section {section!r} matches {len(found)} headings with the same path: "
                f"{choices}. No heading path tells them apart: read_doc the note (without "
                "section) to see both, then write with edit_text, whose `old` names the exact "
                "place (include the heading line in it)"
            )
        raise AmbiguousSection(
            f"section {section!r} matches {len(found)} headings: {choices}. "
            "Give the full heading path, e.g. 'Week 42/Log'"
        )
    if not doc.headings:
        raise ReadError(
            f"no heading {fit_text(section, HEADING_MAX)!r} in {doc.path}: this note has no "
            "headings"
        )
    closest = _closest(doc, section)
    names = "; ".join(repr(address(doc, h)) for h in closest)
    more = len(doc.headings) - len(closest)
    raise ReadError(
        f"no heading {fit_text(section, HEADING_MAX)!r} in {doc.path}. The closest, as to "
        f"pass them: {names}"
        + (f" ({more} more: read_doc without section lists them)" if more else "")
    )


CLOSEST = 8


def address(doc: Doc, h: Heading) -> str:
    """What to pass to name `h`: its full path; when that is longer than a heading argument
    takes, its own text if that names it alone, else the path cut to fit (… : a cut path names
    the heading whose path starts so)."""
    if json_len(h.path) <= HEADING_MAX:
        return h.path
    if json_len(h.text) <= HEADING_MAX and _by_whole_name(doc, h.text) == [h]:
        return h.text
    return fit_text(h.path, HEADING_MAX)


def _closest(doc: Doc, section: str) -> list[Heading]:
    """The headings most like `section` (by text or by path), best first, in note order when
    the note has few."""
    if len(doc.headings) <= CLOSEST:
        return list(doc.headings)
    want = _norm(section[: HEADING_MAX * 2])  # a 300,000-character name: difflib is quadratic

    def likeness(h: Heading) -> float:
        return max(
            difflib.SequenceMatcher(None, want, _norm(h.text)[:HEADING_MAX]).ratio(),
            difflib.SequenceMatcher(None, want, _norm(h.path)[-HEADING_MAX:]).ratio(),
        )

    return sorted(doc.headings, key=lambda h: -likeness(h))[:CLOSEST]


def outline(doc: Doc, room: int | None = None) -> list[dict[str, Any]]:
    """The note's headings, as many as fit in `room` chars of JSON (all up to OUTLINE_MAX
    when no room is given), the last row saying how many more there are."""
    n = min(len(doc.headings), OUTLINE_MAX)
    while True:
        rows = [
            {"heading": fit_text(h.path, HEADING_MAX), "level": h.level, "chars": h.end - h.start}
            for h in doc.headings[:n]
        ]
        if len(doc.headings) > n:
            more = f"… {len(doc.headings) - n} more headings"
            rows.append({"heading": more, "level": 0, "chars": 0})
        if room is None or n == 0 or json_len(rows) <= room:
            return rows
        n = n * 2 // 3


def entries(doc: Doc, text: str, start: int, end: int, section: Heading | None) -> list[int]:
    """Start offsets of the entries in text[start:end]: child sections at the first level that
    has several (a note whose only H1 is its title has its entries below it), else list items,
    else paragraphs."""
    inner = [h for h in doc.headings if start <= h.start < end and h is not section]
    for level in sorted({h.level for h in inner}):
        at = [h.start for h in inner if h.level == level]
        if len(at) > 1:
            return at
    body_from = section.body_start if section else max(start, doc.body_start)
    chunk = text[body_from:end]
    items = list(LIST_ITEM.finditer(chunk))
    if items:
        indent = min(len(m.group(1).expandtabs(4)) for m in items)
        return [body_from + m.start() for m in items if len(m.group(1).expandtabs(4)) == indent]
    paras = [body_from + m.start() for m in re.finditer(r"(?:^|\n\s*\n)(?=\S)", chunk)]
    return [p if text[p : p + 1].strip() else _skip_blank(text, p) for p in paras]


def _skip_blank(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def about_note(doc: Doc, type_name: str | None, chars: int, limit: int) -> dict[str, Any]:
    """What read_doc says about a note besides its content; thousands of tags or a huge title
    take at most a quarter of the budget (they are in the text too)."""
    about = {
        "path": doc.path,
        "title": doc.title,
        "type": type_name,
        "hash": doc.hash,
        "chars": chars,
        "tags": list(doc.tags),
        "problems": list(doc.problems) or None,
    }
    out: dict[str, Any] = shrink(about, limit // 4)
    return out


def content_budget(about: dict[str, Any], limit: int) -> int:
    """The room read_doc leaves for a slice of the note (read_slice's `budget`)."""
    return limit - json_len(about) - 20


def fits_one_read(doc: Doc, text: str, type_name: str | None, limit: int) -> bool:
    """Whether read_doc(path) returns the whole note in one call under `limit`: the one rule
    for "too big to read at once" (the library health check asks it)."""
    budget = content_budget(about_note(doc, type_name, len(text), limit), limit)
    if len(text) * 6 + 8 + budget // 3 + FOOTER_ROOM < budget:
        return True  # even escaped at six chars a char, with the largest outline, it fits
    return bool(
        read_slice(doc, text, section=None, tail=None, offset=None, budget=budget)["complete"]
    )


def _cut(text: str, start: int, end: int, room: int) -> int:
    """End offset for a chunk starting at `start` that takes at most `room` chars as a JSON
    string (what the client receives: a newline is two chars, a control character six),
    ending on a line when one ends in its second half."""
    stop = max(prefix_fitting(text, start, end, room), start + 1)
    if stop >= end:
        return end
    nl = text.rfind("\n", start, stop)
    return nl + 1 if nl > start + (stop - start) // 2 else stop


def _end_start(text: str, start: int, end: int, room: int) -> int:
    """The first line start at or after `start` from which text[...:end] fits in `room` (the
    end of a part too big for one read), or the latest such character when no line does."""
    lo, hi = start, end
    while lo < hi:  # the fitting starts are a suffix of [start, end): search its beginning
        mid = (lo + hi) // 2
        if prefix_fitting(text, mid, end, room) >= end:
            hi = mid
        else:
            lo = mid + 1
    if lo == 0 or text[lo - 1] == "\n":
        return lo
    nl = text.find("\n", lo, end - 1)  # a whole line after it, if there is one
    return nl + 1 if nl >= 0 else lo


def read_slice(
    doc: Doc,
    text: str,
    *,
    section: str | None,
    tail: int | None,
    offset: int | None,
    budget: int,
) -> dict[str, Any]:
    """Everything read_doc returns except path/type/hash, sized to stay under `budget` chars."""
    if tail is not None and offset is not None:
        raise ReadError("give tail or offset, not both")
    head = find_section(doc, section) if section else None
    sel_start, sel_end = (head.start, head.end) if head else (0, len(text))
    what = f"section {head.path!r}" if head else "the note"

    # `budget` is for everything below: the outline gets at most a third, the footer (the
    # section's name comes up to four times: its field, the note, the next call, the whole
    # section) its share, the content the rest, all measured as JSON
    out_rows = outline(doc, budget // 3)
    footer = FOOTER_ROOM + (4 * json_len(head.path) if head else 0)
    room = max(budget - json_len(out_rows) - footer, MIN_CONTENT_ROOM)

    start, note = sel_start, None
    if tail is not None:
        starts = entries(doc, text, sel_start, sel_end, head)
        if starts:
            n = min(tail, len(starts))
            start = starts[-n]
            note = f"the last {n} of {len(starts)} entries of {what}"
            if _cut(text, start, sel_end, room) < sel_end:
                # they do not fit in one read: the newest text is their end, not their start
                from_entries = start - sel_start
                start = _end_start(text, start, sel_end, room)
                note += (
                    ", more than one read holds: this is their end; "
                    f"from their start: read_doc(path, offset={from_entries}"
                    + (f", section={head.path!r})" if head else ")")
                )
        else:
            note = f"{what} has no entries; showing it from the start"
    elif offset is not None:
        if offset > sel_end - sel_start:
            raise ReadError(
                f"offset {offset} is past the end of {what} ({sel_end - sel_start} chars)"
            )
        start = sel_start + offset

    end = _cut(text, start, sel_end, room)
    content = text[start:end]
    # Complete: nothing is left to read. This page reaches the end of what was asked (the note,
    # or the section), and either starts at its beginning or is a page of an offset read, whose
    # earlier pages the reader has: the last page of a paged read says complete, so a client
    # reading "until complete" stops there. A tail that leaves earlier text out is not complete.
    complete = end == sel_end and (start == sel_start or offset is not None)
    result: dict[str, Any] = {
        "section": head.path if head else None,
        "range": [start, end],
        "content": content,
        "complete": complete,
    }
    if start == 0 and end == len(text):
        return result  # the whole note: no outline needed
    result["outline"] = out_rows
    if complete:
        return result  # no `next`: there is nothing more to get
    parts = [f"Showing chars {start}-{end} of {len(text)}"]
    if note:
        parts.append(f" ({note})")
    if end < sel_end:
        rel_next = end - sel_start
        call = f"offset={rel_next}" + (f", section={head.path!r}" if head else "")
        parts.append(f". Next part: read_doc(path, {call}).")
    else:
        parts.append(".")
    if not head and doc.headings:
        parts.append(" One section: read_doc(path, section='<heading>'); newest entries: tail=N.")
    elif head and (start > sel_start or end < sel_end):
        parts.append(f" Whole section from its start: read_doc(path, section={head.path!r}).")
    result["next"] = "".join(parts)
    return result
