"""Python's cyclic garbage collector paused while a bulk of long-lived objects is made at once.

Loading the note index of a big vault (10,000 notes: a Doc, its frontmatter dict and an Entry
each, from the parse cache) makes objects faster than any die, and each of the collector's
full passes walks every one made so far: on the bench's 10,000-note vault a third of the CPU of
`Vault.entries()` plus health's check went to passes that freed nothing (0.12-0.16 s of
0.42 s). Nothing made there is garbage yet, so pausing loses nothing; what was garbage is
collected at the next pass after the pause. Process-wide (the collector is): nested and
concurrent pauses keep it off until the last ends, and a collector someone else switched off
stays off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_restore = False  # whether the outermost pause found the collector on


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                gc.enable()
