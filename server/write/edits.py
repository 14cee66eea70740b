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
from server.notes.links import code_layout
from server.notes.note import UNCLOSED_FENCE, Doc, lf_lines
from server.notes.reading import AmbiguousSection, ReadError, find_section


class EditError(VaultwatchError, ValueError):
    """An edit that cannot be made as asked; `code` names why, the message says what to do.

    `later`, when set, builds more of the message (edit_text's closest line): the caller runs
    it after releasing the vault's write lock, since on a long note it takes a while."""

    def __init__(
        self, code: str, message: str, later: Callable[[], str] | None = None, hint: str = ""
    ) -> None:
        super().__init__(code, message, hint)
        self.later = later


def newline_of(text: str) -> str:
    """The line ending new lines get: CRLF when the note has any; else a lone CR (old Mac OS)
    when most of its line endings are one, not for a stray CR in a LF note; else LF."""
    if "\r\n" in text:
        return "\r\n"
    return "\r" if text.count("\r") > text.count("\n") else "\n"


def _with_newlines(content: str, nl: str) -> str:
    content = content.replace("\r\n", "\n")
    return content.replace("\n", nl) if nl != "\n" else content


def _on_lf_lines(text: str, edit: Callable[[str, str], str]) -> str:
    """`edit(text, nl)` made where lines end in LF, for edits that find lines (headings, the
    frontmatter's fences), on a note whose lines may end in lone CRs; `nl` is the note's own.

    The edit runs on lf_lines(text), the same length with each lone CR made a LF, so the Doc
    the caller parsed (from the same view) points into it. Back in the note, what the edit
    left alone (its common start and end with the view) is the note's own text again, CRs
    included; the part it wrote was built with `nl`. A note without lone CRs is edited as is."""
    nl = newline_of(text)
    view = lf_lines(text)
    if view is text:
        return edit(text, nl)
    new = edit(view, nl)
    head = _common_prefix(view, new)
    tail = _common_suffix(view, new, min(len(view), len(new)) - head)
    return text[:head] + new[head : len(new) - tail] + text[len(text) - tail :]


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common start, by halving (slice compares run in C: a 2 MB note
    costs a few milliseconds, a char-by-char loop a second)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common end, at most `limit` (what the common start left)."""
    la, lb = len(a), len(b)
    if limit <= 0:
        return 0
    if a[la - limit :] == b[lb - limit :]:
        return limit
    lo, hi = 0, limit  # the last lo chars agree; the last hi do not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid
    return lo


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


# Where the owner's comments are. YAML drops comments when it parses, so they are found from the
# scanner's tokens: a `#` (at a line's start or after a blank) that no token covers begins a
# comment. A block scalar's token (`|`, `>`) covers its header line too, where a comment may
# follow the indicator; its content lines are text, even those that start with `#`.
_BLOCK_HEADER = re.compile(r"[|>][-+0-9]*")
_ALL = 1 << 30  # "to the end of the line"
_HASH = re.compile(r"(?:^|(?<=[ \t]))#")


def _comment_columns(fm: str) -> dict[int, int]:
    """{frontmatter line index: column where its comment begins} for every line with one."""
    lines = fm.split("\n")
    covered: dict[int, list[tuple[int, int]]] = {}
    for tok in yaml.scan(fm, Loader=yaml.SafeLoader):
        s, e = tok.start_mark, tok.end_mark
        if (s.line, s.column) == (e.line, e.column):
            continue
        if isinstance(tok, yaml.ScalarToken) and tok.style in ("|", ">"):
            header = _BLOCK_HEADER.match(lines[s.line], s.column)
            covered.setdefault(s.line, []).append((s.column, header.end() if header else _ALL))
            for ln in range(s.line + 1, e.line + (1 if e.column else 0)):
                covered.setdefault(ln, []).append((0, _ALL))
            continue
        for ln in range(s.line, e.line + 1):
            start = s.column if ln == s.line else 0
            end = e.column if ln == e.line else _ALL
            covered.setdefault(ln, []).append((start, end))
    out: dict[int, int] = {}
    for ln, line in enumerate(lines):
        spans = covered.get(ln, [])
        for m in _HASH.finditer(line):
            if not any(a <= m.start() < b for a, b in spans):
                out[ln] = m.start()
                break
    return out


def _full_line_comment(line: str, col: int | None) -> bool:
    return col is not None and col == len(line) - len(line.lstrip())


def _blocks(fm_lines: list[str], comments: dict[int, int]) -> list[tuple[str | None, int, int]]:
    """(key, first line, end line) of each top-level entry; None for comments and blanks that
    belong to no entry. A comment or blank line between a value's lines is the entry's; those
    after its last line are nobody's, so an edit of the entry keeps them where they are."""
    blocks: list[tuple[str | None, int, int]] = []
    for i, line in enumerate(fm_lines):
        m = KEY_LINE.match(line)
        if m and not line.startswith((" ", "\t", "-")):
            blocks.append((m.group(1).strip().strip("'\""), i, i + 1))
        elif (
            blocks
            and blocks[-1][0] is not None
            and (
                line.startswith((" ", "\t", "-"))
                or not line.strip()
                or _full_line_comment(line, comments.get(i))
            )
        ):
            key, start, _ = blocks[-1]
            blocks[-1] = (key, start, i + 1)
        else:
            blocks.append((None, i, i + 1))
    fixed: list[tuple[str | None, int, int]] = []
    for key, start, end in blocks:
        tail = end
        while (
            key is not None
            and tail - 1 > start
            and (
                not fm_lines[tail - 1].strip()
                or _full_line_comment(fm_lines[tail - 1], comments.get(tail - 1))
            )
        ):
            tail -= 1
        fixed.append((key, start, tail))
        fixed.extend((None, i, i + 1) for i in range(tail, end))
    return fixed


_EDIT_LINES_HINT = (
    "change those frontmatter lines with edit_text, copying them exactly from read_doc, or ask "
    "the owner"
)


def _note_line(i: int) -> int:
    """A frontmatter line's number in the note: the opening `---` is line 1."""
    return i + 2


def _refuse_duplicates(blocks: list[tuple[str | None, int, int]], touched: set[str]) -> None:
    """A key written twice: YAML reads the last, so editing either one could report a change
    the note does not show. The owner decides which one stays."""
    where: dict[str, list[int]] = {}
    for key, start, _ in blocks:
        if key is not None:
            where.setdefault(key, []).append(_note_line(start))
    for key in sorted(touched):
        lines = where.get(key, [])
        if len(lines) > 1:
            listed = ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"
            raise EditError(
                "duplicate_key",
                f"key {key!r} appears {len(lines)} times in this note's frontmatter (lines "
                f"{listed}); YAML reads only the last, so this change could not be made as "
                "asked",
                hint=f"remove the extra {key!r} lines with edit_text first (read_doc shows them), "
                "then call update_frontmatter again",
            )


def _key_comment(line: str, col: int | None) -> str:
    """A key line's own comment with the blanks before it, as the owner spaced it."""
    if col is None:
        return ""
    return line[len(line[:col].rstrip()) :]


def _replace_value(
    key: str, value: Any, chunk: list[str], first: int, comments: dict[int, int]
) -> list[str]:
    """The entry `chunk` (its key line first) rewritten with `value`; the key line's comment
    kept. A comment inside the old value cannot be kept with a new value: refused."""
    inner = [first + j for j in range(1, len(chunk)) if first + j in comments]
    if inner:
        raise EditError(
            "comment_in_value",
            f"the value of {key!r} holds the owner's comment on line "
            f"{', '.join(str(_note_line(i)) for i in inner)}; replacing the value would drop it",
            hint=_EDIT_LINES_HINT,
        )
    # a block list stays one, unless it is now empty: `key: []`
    block_style = len(chunk) > 1 and chunk[1].lstrip().startswith("-") and value != []
    rendered = render_value(key, value, flow=not block_style)
    if block_style and isinstance(value, list):
        indent = chunk[1][: len(chunk[1]) - len(chunk[1].lstrip())]
        rendered = (
            render_value(key, [], flow=True).rsplit(":", 1)[0]
            + ":\n"
            + "\n".join(f"{indent}- {render_value('x', v)[3:]}" for v in value)
        )
    out = rendered.split("\n")
    tail = _key_comment(chunk[0], comments.get(first))
    if tail:
        if len(out) > 1 and not out[0].endswith(":"):
            raise EditError(
                "comment_in_value",
                f"the new value of {key!r} spans several lines and the owner's comment on line "
                f"{_note_line(first)} could not be kept beside it",
                hint=_EDIT_LINES_HINT,
            )
        out[0] += tail
    return out


_ITEM = re.compile(r"^([ \t]*)-(?:[ \t]+|$)")


def _list_items(
    chunk: list[str], first: int, comments: dict[int, int]
) -> list[tuple[int, Any]] | None:
    """(index in chunk, value) of each item when the entry is a block list of one-line
    scalars with only blank and comment lines between them; None for anything else."""
    key_line = chunk[0]
    end = comments.get(first, len(key_line))
    if key_line[:end].split(":", 1)[1].strip():
        return None  # the value is on the key line
    items: list[tuple[int, Any]] = []
    for j, line in enumerate(chunk[1:], 1):
        col = comments.get(first + j)
        if not line.strip() or _full_line_comment(line, col):
            continue
        m = _ITEM.match(line)
        if m is None:
            return None
        try:
            value = yaml.load(line[m.end() : col].strip() or "null", Loader=FrontmatterLoader)
        except (yaml.YAMLError, ValueError, RecursionError):
            return None
        if isinstance(value, dict | list):
            return None
        items.append((j, value))
    return items


def _edit_tag_lines(
    chunk: list[str],
    items: list[tuple[int, Any]],
    removed: Callable[[str], bool],
    added: list[str],
) -> list[str]:
    """A block list of tags edited item by item: removed items' lines go, added ones follow
    the last item; every other line (comments, blanks, quoting) stays as it was."""
    drop = {j for j, v in items if any(removed(t) for t in frontmatter_tags({"tags": [v]}))}
    out = [line for j, line in enumerate(chunk) if j not in drop]
    last = items[-1][0] if items else 0
    prefix = "  - "
    if items:
        m = _ITEM.match(chunk[last])
        prefix = (m.group(1) if m else "  ") + "- "
    at = last + 1 - sum(1 for j in drop if j <= last)
    new = [prefix + render_value("x", t)[3:] for t in added]
    return out[:at] + new + out[at:]


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (True is not 1, '1' is not 1). Each pair of
    objects is compared once, without recursion: a value built from YAML aliases (a "billion
    laughs" note) shares its parts, and walking them as a tree would never end."""
    seen: set[tuple[int, int]] = set()
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def _load_mapping(fm: str) -> dict[Any, Any]:
    loaded = yaml.load(fm, Loader=FrontmatterLoader)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise EditError("broken_yaml", "this note's frontmatter is not a mapping of keys")
    return loaded


def _check_result(
    before: dict[Any, Any],
    new_fm: str,
    set_: dict[str, Any],
    unset: list[str],
    tags: list[str] | None,
) -> None:
    """Read the edited frontmatter back as YAML: every key asked for has the value asked for,
    every key unset is gone, every other key is as it was. Anything else (a case the line
    surgery above got wrong) is refused: a write that reports success must have done it."""
    try:
        after = _load_mapping(new_fm)
    except (yaml.YAMLError, ValueError, RecursionError, EditError):
        wrong = "the frontmatter would no longer be valid YAML"
    else:
        wrong = ""
        for key, value in set_.items():
            if key == "tags" and tags is not None:
                ok = key in after and _same(frontmatter_tags(after), tags)
            else:
                ok = key in after and _same(after[key], value)
            if not ok:
                wrong = f"{key!r} would read {after.get(key)!r}, not {value!r}"
                break
        for key in unset:
            if not wrong and key in after:
                wrong = f"{key!r} would still be there"
        for key in {*before, *after} - {*set_, *unset}:
            if not wrong and (key not in after or not _same(before.get(key), after[key])):
                wrong = f"{key!r}, which was not asked to change, would change"
    if wrong:
        raise EditError(
            "edit_unchecked",
            f"this change could not be made safely to this note's frontmatter: after the edit "
            f"{wrong}",
            hint=_EDIT_LINES_HINT,
        )


def update_frontmatter(
    text: str,
    set_: dict[str, Any] | None = None,
    unset: list[str] | None = None,
    add_tags: list[str] | None = None,
    remove_tags: list[str] | None = None,
) -> str:
    # on LF lines: the frontmatter's fences of a CR-only note are found, not a second one added
    return _on_lf_lines(
        text, lambda view, nl: _update_frontmatter(view, nl, set_, unset, add_tags, remove_tags)
    )


def _update_frontmatter(
    text: str,
    nl: str,
    set_: dict[str, Any] | None,
    unset: list[str] | None,
    add_tags: list[str] | None,
    remove_tags: list[str] | None,
) -> str:
    set_ = dict(set_ or {})
    unset = list(unset or [])
    fm_text, fm_start, body_start = split_frontmatter(text)
    fm_plain = "" if fm_text is None else fm_text.replace("\r\n", "\n")
    try:
        current = _load_mapping(fm_plain)
        comments = _comment_columns(fm_plain)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise EditError(
            "broken_yaml",
            f"this note's frontmatter is not valid YAML ({getattr(exc, 'problem', exc)}); it "
            "was not changed. Read the note and fix the YAML with replace_doc.",
        ) from exc
    both = set(set_) & set(unset)
    if both:
        raise EditError("conflicting_keys", f"{sorted(both)} are in both set and unset")
    tags: list[str] | None = None
    added: list[str] = []
    folded = {t.casefold().lstrip("#") for t in (remove_tags or [])}

    def removed(tag: str) -> bool:
        return tag.casefold().lstrip("#") in folded

    if add_tags or remove_tags:
        tags = [t for t in frontmatter_tags(current) if not removed(t)]
        for t in add_tags or []:
            t = t.strip().lstrip("#")
            if t and t.casefold() not in {x.casefold() for x in tags}:
                tags.append(t)
                added.append(t)
        set_["tags"] = tags
        if "tags" not in current and "tag" in current:
            unset.append("tag")
    if fm_text is None:
        # one item a line: a value over several lines is joined with the note's line ending too
        lines = [ln for k, v in set_.items() for ln in render_value(k, v).split("\n")]
        new_fm = "\n".join(lines)
        _check_result(current, new_fm, set_, unset, tags)
        return "---" + nl + nl.join(lines) + nl + "---" + nl + text
    fm_lines = fm_plain.split("\n")
    if fm_lines and fm_lines[-1] == "":
        fm_lines.pop()
    blocks = _blocks(fm_lines, comments)
    touched = {*set_, *unset} | ({"tags", "tag"} if tags is not None else set())
    _refuse_duplicates(blocks, touched)
    out: list[str] = []
    done: set[str] = set()
    for key, start, end in blocks:
        chunk = fm_lines[start:end]
        if key is not None and key in unset:
            # the key's lines go; the owner's comment lines between them stay
            out.extend(
                ln
                for j, ln in enumerate(chunk[1:], start + 1)
                if _full_line_comment(ln, comments.get(j))
            )
            continue
        if key is not None and key in set_ and key not in done:
            items = (
                _list_items(chunk, start, comments) if key == "tags" and tags is not None else None
            )
            edited = _edit_tag_lines(chunk, items, removed, added) if items is not None else []
            if len(edited) > 1:
                out.extend(edited)
            else:  # not a plain block list, or none of it left: `tags: []` says so plainly
                out.extend(_replace_value(key, set_[key], chunk, start, comments))
            done.add(key)
            continue
        out.extend(chunk)
    for key, value in set_.items():
        if key not in done:
            out.extend(render_value(key, value).split("\n"))
    _check_result(current, "\n".join(out), set_, unset, tags)
    new_fm = nl.join(out)
    head = text[:fm_start]
    closing = text[fm_start + len(fm_text) : body_start]
    return head + new_fm + (nl if new_fm else "") + closing + text[body_start:]
