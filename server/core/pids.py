"""Whether a process still runs, by its pid: one rule for the resident server's lock, the
dashboard's header and supervisor, and the merge inputs a killed writer left."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while `pid` runs. A process of another user counts as running (we may not signal
    it); so does one we cannot ask about at all, since the callers remove what a dead process
    left and must never take a live one's. A zombie (our own child, not yet reaped) has
    stopped: the header took one for a running server."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    return True
