"""A commit's diff as Textual Content: per file, unified or side by side, changed words marked
inside changed lines, markdown syntax colours from pygments. stdlib difflib only (no AGPL diff
widget), and bounded so a 5,000-line change renders at once."""

from __future__ import annotations

import difflib
from functools import cache
from typing import TYPE_CHECKING, Any

from textual.content import Content

if TYPE_CHECKING:
    from pygments.lexer import Lexer

from app.services.cell_wrap import breaks
from app.services.history import FileChange
from server.core.linediff import matching_blocks, opcodes

# $diff-*: the dashboard's theme variables (app.ui.settings.diff_colours): an ANSI theme's green
# cannot be blended to a tint, and drew added lines green on green
ADD, DEL = "$diff-added on $diff-added-back 12%", "$diff-removed on $diff-removed-back 12%"
HUNK = "bold $text-accent"
WORD_ADD = "bold $diff-added on $diff-added-back 35%"
WORD_DEL = "bold $diff-removed on $diff-removed-back 35%"
MAX_LINES = 20_000
STATUS = {"A": "ADDED", "D": "DELETED", "R": "RENAMED", "M": "MODIFIED"}
RICH_LINES = 600  # past this many changed lines: no syntax colours or word marks (speed first)


@cache
def _markdown() -> tuple[Lexer, dict[Any, str]]:
    """The lexer and the style of its token types, made when a diff is first drawn: pygments'
    lexers cost ~200 ms to import, which the dashboard's first paint does not wait for."""
    from pygments.lexers import MarkdownLexer
    from pygments.token import Token

    return MarkdownLexer(), {
        Token.Generic.Heading: "bold",
        Token.Generic.Subheading: "bold",
        Token.Generic.Strong: "bold",
        Token.Generic.Emph: "italic",
        Token.Name.Tag: "$text-accent",
        Token.Keyword: "$text-primary",
        Token.Literal.String.Backtick: "$text-warning",
    }


class LineMatcher(difflib.SequenceMatcher[str]):
    """difflib's opcodes, but matched the way `git diff --patience` does: lines unique on both
    sides anchor the alignment (a longest increasing run of them), and plain difflib only aligns
    the short gaps between anchors. SequenceMatcher alone is quadratic on a long note where
    every other line changed; this stays near linear (`uv run python -m bench --only dashboard`:
    5,000-line diff shown)."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b, autojunk=False)
        self._old, self._new = a, b
        self._blocks: list[difflib.Match] | None = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self._blocks is not None:
            return self._blocks
        pairs: list[tuple[int, int]] = []
        todo = [(0, len(self._old), 0, len(self._new))]
        while todo:
            pairs.extend(self._anchor(*todo.pop(), todo))
        pairs.sort()
        blocks: list[tuple[int, int, int]] = []
        for i, j in pairs:
            if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
                blocks[-1] = (blocks[-1][0], blocks[-1][1], blocks[-1][2] + 1)
            else:
                blocks.append((i, j, 1))
        self._blocks = [difflib.Match(*m) for m in blocks]
        self._blocks.append(difflib.Match(len(self._old), len(self._new), 0))
        return self._blocks

    def _anchor(
        self, alo: int, ahi: int, blo: int, bhi: int, todo: list[tuple[int, int, int, int]]
    ) -> list[tuple[int, int]]:
        """Matched line pairs of a[alo:ahi] / b[blo:bhi]; gaps between anchors go to `todo`."""
        a, b = self._old, self._new
        out = []
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            out.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            out.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            return out
        count: dict[str, list[int]] = {}
        for i in range(alo, ahi):
            count.setdefault(a[i], [0, -1, 0, -1])
            c = count[a[i]]
            c[0] += 1
            c[1] = i
        for j in range(blo, bhi):
            seen = count.get(b[j])
            if seen is not None:
                seen[2] += 1
                seen[3] = j
        uniq = sorted((c[1], c[3]) for c in count.values() if c[0] == 1 and c[2] == 1)
        if not uniq:  # nothing to anchor on: the bounded engine on this (usually short) gap
            for i, j, n in matching_blocks(a[alo:ahi], b[blo:bhi]):
                out.extend((alo + i + k, blo + j + k) for k in range(n))
            return out
        chain = _increasing(uniq)
        prev_a, prev_b = alo, blo
        for i, j in chain:
            if i > prev_a and j > prev_b:
                todo.append((prev_a, i, prev_b, j))
            out.append((i, j))
            prev_a, prev_b = i + 1, j + 1
        if ahi > prev_a and bhi > prev_b:
            todo.append((prev_a, ahi, prev_b, bhi))
        return out


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of `pairs` (sorted by first) whose second values also increase."""
    import bisect

    tails: list[int] = []  # tails[k]: second value ending the best run of length k+1
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k], tail_at[k] = j, n
        back[n] = tail_at[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


def _syntax(line: str) -> Content:
    """Markdown colours for one line (headings, emphasis, tags, code)."""
    if not line or len(line) > 2_000:
        return Content(line)
    content = Content(line)
    pos = 0
    lexer, token_style = _markdown()
    for ttype, value in lexer.get_tokens(line):
        style = next((s for t, s in token_style.items() if ttype in t), None)
        end = min(pos + len(value), len(line))
        if style and end > pos:
            content = content.stylize(style, pos, end)
        pos = end
    return content


def _words(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character spans that differ between two lines, on word boundaries."""
    import re

    ta, tb = re.findall(r"\w+|\W", a), re.findall(r"\w+|\W", b)
    pa, pb = [0], [0]
    for t in ta:
        pa.append(pa[-1] + len(t))
    for t in tb:
        pb.append(pb[-1] + len(t))
    da, db = [], []
    for op, i1, i2, j1, j2 in opcodes(ta, tb):  # bounded: a line can be 1 MB of words
        if op in ("replace", "delete") and i2 > i1:
            da.append((pa[i1], pa[i2]))
        if op in ("replace", "insert") and j2 > j1:
            db.append((pb[j1], pb[j2]))
    return da, db


def _line(
    prefix: str,
    text: str,
    style: str | None,
    marks: list[tuple[int, int]],
    mark_style: str,
    rich: bool = True,
) -> Content:
    body = _syntax(text) if rich else Content(text)
    for a, b in marks:
        body = body.stylize(mark_style, a, b)
    line = Content(prefix) + body
    return line.stylize(style, 0, len(line)) if style else line


def _changed(groups: list[list[tuple[str, int, int, int, int]]]) -> int:
    return sum(max(a2 - a1, b2 - b1) for g in groups for op, a1, a2, b1, b2 in g if op != "equal")


def _title(change: FileChange) -> Content:
    """The file label above each file's hunks, the same in both views."""
    title = change.path if not change.old_path else f"{change.old_path} → {change.path}"
    return Content.styled(f"{STATUS.get(change.status, 'MODIFIED')}  {title}", "bold reverse")


def _hunk(i1: int, i2: int, j1: int, j2: int) -> Content:
    return Content.styled(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@", HUNK)


def render_unified(change: FileChange, context: int = 3) -> list[Content]:
    old, new = change.old.splitlines(), change.new.splitlines()
    out = [_title(change)]
    groups = list(LineMatcher(old, new).get_grouped_opcodes(context))
    rich = _changed(groups) <= RICH_LINES
    for group in groups:
        out.append(_hunk(group[0][1], group[-1][2], group[0][3], group[-1][4]))
        for op, a1, a2, b1, b2 in group:
            if op == "equal":
                out += [_line("  ", old[k], None, [], "", rich) for k in range(a1, a2)]
                continue
            pairs = min(a2 - a1, b2 - b1) if op == "replace" else 0
            for k in range(a1, a2):
                marks = _words(old[k], new[b1 + k - a1])[0] if rich and k - a1 < pairs else []
                out.append(_line("- ", old[k], DEL, marks, WORD_DEL, rich))
            for k in range(b1, b2):
                marks = _words(old[a1 + k - b1], new[k])[1] if rich and k - b1 < pairs else []
                out.append(_line("+ ", new[k], ADD, marks, WORD_ADD, rich))
            if len(out) > MAX_LINES:
                out.append(Content.styled("… diff cut: open the file for the rest", "italic"))
                return out
    if len(out) == 1:
        out.append(Content.styled("(no text change)", "italic"))
    return out


DIVIDER = Content(" │ ")


def _side(
    text: str | None,
    style: str | None,
    marks: list[tuple[int, int]],
    mark_style: str,
    half: int,
    rich: bool,
) -> list[Content]:
    """One side of a split row, wrapped to `half` cells and padded to exactly `half` cells (a
    Chinese character is two cells: padding by characters pushed the divider)."""
    if text is None:
        return []
    body = _syntax(text) if rich else Content(text)
    for a, b in marks:
        body = body.stylize(mark_style, a, b)
    # by cells, between CJK characters too (Content.wrap broke Chinese only at spaces, `- `
    # alone on a row, and the two sides stopped pairing)
    rows = (
        [row.rstrip() for row in body.divide(breaks(body.plain, half))]
        if body.cell_length > half
        else [body]
    )
    out = []
    for row in rows or [Content("")]:
        row = row.pad_right(max(0, half - row.cell_length))
        out.append(row.stylize(style, 0, len(row)) if style else row)
    return out


def render_split(change: FileChange, width: int, context: int = 3) -> list[Content]:
    """Old on the left, new on the right. A line wider than its half wraps, and the other side
    waits for it, so rows stay in step and nothing is cut off."""
    half = max(12, (width - DIVIDER.cell_length) // 2)
    blank = Content(" " * half)
    old, new = change.old.splitlines(), change.new.splitlines()
    out = [_title(change)]
    groups = list(LineMatcher(old, new).get_grouped_opcodes(context))
    rich = _changed(groups) <= RICH_LINES
    for group in groups:
        out.append(_hunk(group[0][1], group[-1][2], group[0][3], group[-1][4]))
        for op, a1, a2, b1, b2 in group:
            pairs = min(a2 - a1, b2 - b1) if op == "replace" else 0
            for k in range(max(a2 - a1, b2 - b1)):
                left = old[a1 + k] if a1 + k < a2 else None
                right = new[b1 + k] if b1 + k < b2 else None
                lm, rm = _words(left, right) if rich and k < pairs and left and right else ([], [])
                changed = op != "equal"
                lrows = _side(left, DEL if changed else None, lm, WORD_DEL, half, rich)
                rrows = _side(right, ADD if changed else None, rm, WORD_ADD, half, rich)
                for n in range(max(len(lrows), len(rrows))):
                    lrow = lrows[n] if n < len(lrows) else blank
                    rrow = rrows[n] if n < len(rrows) else blank
                    out.append(lrow + DIVIDER + rrow)
            if len(out) > MAX_LINES:
                out.append(Content.styled("… diff cut: open the file for the rest", "italic"))
                return out
    if len(out) == 1:
        out.append(Content.styled("(no text change)", "italic"))
    return out


def render_lines(
    changes: list[FileChange], *, split: bool = False, width: int = 120, context: int = 3
) -> list[Content]:
    """Every line of the diff, for a view that draws only the lines on screen."""
    out: list[Content] = []
    for ch in changes:
        out += render_split(ch, width, context) if split else render_unified(ch, context)
        out.append(Content(""))
    return out


def render_commit(
    changes: list[FileChange],
    total: int,
    *,
    split: bool = False,
    width: int = 120,
    context: int = 3,
    most_lines: int = MAX_LINES,
) -> tuple[list[Content], dict[str, list[int]]]:
    """A commit's diff for the diff pane, file after file until `most_lines`, with where each
    file and hunk starts (for the jump keys). `total` is how many files the commit changed
    (`changes` may hold only the first of them): the files left out are said, not dropped
    silently. Bounded because pygments over an import commit of 10,000 notes takes minutes."""
    lines: list[Content] = []
    marks: dict[str, list[int]] = {"hunk": [], "file": []}
    shown = 0
    for change in changes:
        if shown and len(lines) >= most_lines:
            break
        marks["file"].append(len(lines))
        for line in render_lines([change], split=split, width=width, context=context):
            if line.plain.startswith("@@"):
                marks["hunk"].append(len(lines))
            lines.append(line)
        shown += 1
    if shown < total:
        left = total - shown
        lines.append(
            Content.styled(
                f"… {left:,} more file{'s' if left != 1 else ''} not shown: this commit changed "
                f"{total:,} files (git show --stat lists them all)",
                "italic",
            )
        )
    return lines, marks


def render(
    changes: list[FileChange], *, split: bool = False, width: int = 120, context: int = 3
) -> Content:
    return Content("\n").join(render_lines(changes, split=split, width=width, context=context))
