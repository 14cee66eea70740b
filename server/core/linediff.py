"""The one line-diff engine: opcodes that turn one list of lines into another, in bounded time.

difflib aligns lines in time quadratic in the changed stretch: a note where every other line
changed took minutes for a write's diff (turn 2), and two such rewrites of a 1.9 MB note kept
`vaultwatch review` busy past 500 s (adversarial pass 3, N9). Here the unchanged head and tail
are skipped in one pass, difflib aligns the changed stretch while it is at most `align` lines,
and past that lines are paired by position (linear; exact when lines were edited in place, the
usual case of a long rewrite). The server's write diffs, review's line tracking and the
dashboard's diff view all use it.
"""

from __future__ import annotations

import difflib
from typing import Literal

DIFF_ALIGN_LINES = 1_000

Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]


def opcodes(old: list[str], new: list[str], align: int = DIFF_ALIGN_LINES) -> list[Opcode]:
    """difflib-style opcodes (equal / replace / delete / insert, covering both lists in order)."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    a_end, b_end = len(old) - tail, len(new) - tail
    mid: list[Opcode] = []
    if max(a_end, b_end) - head <= align:
        sm = difflib.SequenceMatcher(None, old[head:a_end], new[head:b_end])
        for t, i1, i2, j1, j2 in sm.get_opcodes():
            mid.append((t, i1 + head, i2 + head, j1 + head, j2 + head))
    else:
        for k in range(min(a_end, b_end) - head):
            tag: Literal["equal", "replace"] = (
                "equal" if old[head + k] == new[head + k] else "replace"
            )
            if mid and mid[-1][0] == tag:
                mid[-1] = (tag, mid[-1][1], head + k + 1, mid[-1][3], head + k + 1)
            else:
                mid.append((tag, head + k, head + k + 1, head + k, head + k + 1))
        paired = min(a_end, b_end)
        if a_end > paired:
            mid.append(("delete", paired, a_end, b_end, b_end))
        elif b_end > paired:
            mid.append(("insert", a_end, a_end, paired, b_end))
    start: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    end: list[Opcode] = [("equal", a_end, len(old), b_end, len(new))] if tail else []
    return start + mid + end


def matching_blocks(
    old: list[str], new: list[str], align: int = DIFF_ALIGN_LINES
) -> list[difflib.Match]:
    """The `equal` runs of `opcodes`, as difflib's matching blocks (without the final sentinel)."""
    return [
        difflib.Match(i1, j1, i2 - i1)
        for t, i1, i2, j1, _ in opcodes(old, new, align)
        if t == "equal"
    ]
