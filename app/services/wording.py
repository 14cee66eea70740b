"""How counts read, in the shell and on every screen alike."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 note`, `2 notes`, `1,234 notes`; `many` where adding an s is wrong (`1 entry`,
    `2 entries`)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"
