"""Text measured and wrapped by terminal cells (a Chinese character takes two), with the line
breaking Chinese and Japanese need (after UAX #14's rules that matter on a terminal): a row may
break at a space or between two CJK characters, never before closing punctuation (`，。」`)
and never after opening punctuation (`「《（`); a word longer than a row is cut at the width,
never inside a character. The one home for it: the dashboard's panes (`app.ui.widgets.lines`), the split
diff (`app.ui.widgets.diffview`) and the shell (`vaultwatch review`) use these. No Textual here.

(No PyPI package fitted: `uniseg` implements UAX #14 but measures characters, not cells, and
breaks before `，` after Latin text; the rules above are the few a terminal row needs.)"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from rich.cells import cell_len, get_character_cell_size

# punctuation that closes a phrase: it stays on the row of the character before it
CLOSING = frozenset("，。、；：？！）》」』】〉…—,.;:?!)]}%'\"”’")
# punctuation that opens one: it goes to the row of the character after it
OPENING = frozenset("（《「『【〈“‘([{")


def cells(text: str) -> int:
    """Terminal cells `text` takes: the one measure of the screens and the shell (a CJK
    character takes two, a combining mark of a decomposed (NFD) macOS name none)."""
    return cell_len(text)


def hanging(prefix: str, text: str, width: int | None) -> list[str]:
    """`prefix` + `text` in rows of at most `width` cells, the rows after the first indented
    under the text (a diff's `+`/`-` gutter is shown once per line, not once per row); as one
    row when `width` is None (piped output is not wrapped, as git's is not)."""
    if width is None:
        return [prefix + text]
    indent = cells(prefix)
    rows = wrap_text(text, max(10, width - indent)) if text else [""]
    return [prefix + rows[0], *(" " * indent + r for r in rows[1:])]


def units(text: str) -> Iterator[tuple[int, int, int]]:
    """The pieces a row may not break inside, as (start, end of the visible part, end with the
    spaces after it): a word of narrow characters, or one wide (CJK) character, each with the
    closing punctuation after it and the opening punctuation before it."""
    i, n = 0, len(text)
    while i < n:
        j = i
        while j < n and text[j] in OPENING:
            j += 1
        if j < n and get_character_cell_size(text[j]) > 1:
            j += 1
        else:
            while (
                j < n
                and not text[j].isspace()
                and get_character_cell_size(text[j]) < 2
                and (j == i or text[j] not in OPENING)
            ):
                j += 1
        while j < n and text[j] in CLOSING:
            j += 1
        j = max(j, i + 1)
        k = j
        while k < n and text[k].isspace():
            k += 1
        yield i, j, k
        i = k


def breaks(text: str, width: int) -> list[int]:
    """Where the rows after the first start, for `text` in rows of at most `width` cells: at
    spaces, between wide characters, and inside a word only when it is longer than a row (a
    URL), from a row of its own, at the width. Spaces at a row's end do not count."""
    out: list[int] = []
    used = gap = 0  # cells on this row, and the spaces after them
    for i, j, k in units(text):
        w, spaces = cell_len(text[i:j]), cell_len(text[j:k])
        if used + gap + w <= width:
            used, gap = used + gap + w, spaces
            continue
        if used and i:
            out.append(i)
        used, gap = 0, spaces
        for x in range(i, j):  # a word that fits no row: cut at the width, never in a character
            cells = get_character_cell_size(text[x])
            if used + cells > width and used:
                out.append(x)
                used = 0
            used += cells
    return out


def wrap_text(text: str, width: int) -> list[str]:
    """`text` as rows of at most `width` cells (see `breaks`), spaces at a row's end dropped."""
    width = max(2, width)
    cuts = [0, *breaks(text, width), len(text)]
    return [text[a:b].rstrip() for a, b in itertools.pairwise(cuts)] or [text]
