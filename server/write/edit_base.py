"""What every text edit of the write tools shares: `EditError` (what cannot be made as asked, and
what to do), and the note's own line endings (CRLF, lone CR, LF) kept around the part an edit
writes."""

from __future__ import annotations

from collections.abc import Callable

from server.core.errors import VaultwatchError
from server.notes.note import lf_lines


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
