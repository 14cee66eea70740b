"""A commit's diff as Textual Content: per file, unified or side by side, changed words marked
inside changed lines, markdown syntax colours from pygments. stdlib difflib only (no AGPL diff
widget), and bounded so a 5,000-line change renders at once."""

from __future__ import annotations

import difflib

from pygments.lexers import MarkdownLexer
from pygments.token import Token
from textual.content import Content

from .history import FileChange

ADD, DEL, HUNK = "$text-success on $success 12%", "$text-error on $error 12%", "bold $text-accent"
WORD_ADD, WORD_DEL = "bold $text-success on $success 35%", "bold $text-error on $error 35%"
MAX_LINES = 20_000
RICH_LINES = 600  # past this many changed lines: no syntax colours or word marks (speed first)
_LEXER = MarkdownLexer()
TOKEN_STYLE = {Token.Generic.Heading: "bold", Token.Generic.Subheading: "bold",
               Token.Generic.Strong: "bold", Token.Generic.Emph: "italic",
               Token.Name.Tag: "$text-accent", Token.Keyword: "$text-primary",
               Token.Literal.String.Backtick: "$text-warning"}  # fmt: skip


def _syntax(line: str) -> Content:
    """Markdown colours for one line (headings, emphasis, tags, code)."""
    if not line or len(line) > 2_000:
        return Content(line)
    content = Content(line)
    pos = 0
    for ttype, value in _LEXER.get_tokens(line):
        style = next((s for t, s in TOKEN_STYLE.items() if ttype in t), None)
        end = min(pos + len(value), len(line))
        if style and end > pos:
            content = content.stylize(style, pos, end)
        pos = end
    return content


def _words(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character spans that differ between two lines, on word boundaries."""
    import re

    ta, tb = re.findall(r"\w+|\W", a), re.findall(r"\w+|\W", b)
    sm = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    pa, pb = [0], [0]
    for t in ta:
        pa.append(pa[-1] + len(t))
    for t in tb:
        pb.append(pb[-1] + len(t))
    da, db = [], []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
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


def render_unified(change: FileChange, context: int = 3) -> list[Content]:
    old, new = change.old.splitlines(), change.new.splitlines()
    title = change.path if not change.old_path else f"{change.old_path} → {change.path}"
    out = [
        Content.styled(
            f"{'ADDED' if change.status == 'A' else 'DELETED' if change.status == 'D' else 'MODIFIED'}  {title}",
            "bold reverse",
        )
    ]
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    groups = list(sm.get_grouped_opcodes(context))
    changed = sum(
        max(a2 - a1, b2 - b1) for g in groups for op, a1, a2, b1, b2 in g if op != "equal"
    )
    rich = changed <= RICH_LINES
    for group in groups:
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(Content.styled(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@", HUNK))
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


def render_split(change: FileChange, width: int, context: int = 3) -> list[Content]:
    """Old on the left, new on the right, each half `width // 2` cells."""
    half = max(20, width // 2 - 2)
    old, new = change.old.splitlines(), change.new.splitlines()
    out = [Content.styled(f"{change.path}", "bold reverse")]

    def cell(text: str, style: str | None) -> Content:
        t = text if len(text) <= half else text[: half - 1] + "…"
        c = _syntax(t) + Content(" " * (half - len(t)))
        return c.stylize(style, 0, len(c)) if style else c

    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in sm.get_grouped_opcodes(context):
        out.append(Content.styled("@@", HUNK))
        for op, a1, a2, b1, b2 in group:
            n = max(a2 - a1, b2 - b1)
            for k in range(n):
                left = old[a1 + k] if a1 + k < a2 else ""
                right = new[b1 + k] if b1 + k < b2 else ""
                ls = None if op == "equal" else (DEL if a1 + k < a2 else None)
                rs = None if op == "equal" else (ADD if b1 + k < b2 else None)
                out.append(cell(left, ls) + Content(" │ ") + cell(right, rs))
            if len(out) > MAX_LINES:
                return out
    return out


def _fast_unified(change: FileChange, context: int) -> Content:
    """The same diff as one string with style spans: for big changes, where building a
    Content per line costs seconds."""
    from textual.content import Span

    old, new = change.old.splitlines(), change.new.splitlines()
    parts: list[str] = []
    spans: list[Span] = []
    pos = 0

    def add(line: str, style: str | None) -> None:
        nonlocal pos
        parts.append(line)
        if style:
            spans.append(Span(pos, pos + len(line), style))
        pos += len(line) + 1

    add(f"MODIFIED  {change.path}  (large change: plain colours)", "bold reverse")
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in sm.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        add(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@", HUNK)
        for op, a1, a2, b1, b2 in group:
            if op == "equal":
                for k in range(a1, a2):
                    add("  " + old[k], None)
                continue
            for k in range(a1, a2):
                add("- " + old[k], DEL)
            for k in range(b1, b2):
                add("+ " + new[k], ADD)
        if len(parts) > MAX_LINES:
            add("… diff cut: open the file for the rest", "italic")
            break
    return Content("\n".join(parts), spans)


def render(
    changes: list[FileChange], *, split: bool = False, width: int = 120, context: int = 3
) -> Content:
    blocks: list[Content] = []
    for ch in changes:
        if not split and ch.status == "M" and max(ch.old.count("\n"), ch.new.count("\n")) > 2_000:
            blocks.append(_fast_unified(ch, context))
        else:
            blocks.append(Content("\n").join(render_split(ch, width, context) if split
                                              else render_unified(ch, context)))  # fmt: skip
        blocks.append(Content(""))
    return Content("\n").join(blocks)
