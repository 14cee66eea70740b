"""Fault injection for the crash and failure tests, one reader of VAULTWATCH_FAULT for both
halves: `after_write:N` (the server's write path kills its own process after N files of a
write) and `action_after:N` (the owner's file actions fail their N+1th file step like a full
disk). Unset in normal use: then nothing here does anything."""

from __future__ import annotations

import contextlib
import os

FAULT_ENV = "VAULTWATCH_FAULT"


def fault_after(kind: str) -> int | None:
    """N when VAULTWATCH_FAULT is `<kind>:N`, else None."""
    spec = os.environ.get(FAULT_ENV, "")
    if spec.startswith(kind + ":"):
        with contextlib.suppress(ValueError):
            return int(spec.split(":", 1)[1])
    return None
