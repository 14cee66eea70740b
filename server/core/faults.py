"""Fault injection for the crash and failure tests, one reader of VAULTWATCH_FAULT for every
writer (the server's write path and the owner's actions in app/):

- `kill:<step>:<N>`: the process kills itself (SIGKILL, as a crash or the OOM killer would) the
  Nth time it reaches `crash_point(<step>)` (N from 1);
- `trace:<file>`: each `crash_point` reached is appended to <file>, one step name a line, so a
  test can list every step of a write and then kill at each in turn (SQLite's crash tests: a
  fault at every I/O, then an integrity check);
- `after_write:N`: the older spelling of `kill:renamed:N` (killed after N files of a write are
  in place);
- `action_after:N`: the owner's file actions fail their N+1th file step like a full disk.

Unset in normal use: then nothing here does anything but read one environment variable."""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter

FAULT_ENV = "VAULTWATCH_FAULT"

# how often each step was reached in this process, counted only while a kill is asked for
_REACHED: Counter[str] = Counter()


def fault_after(kind: str) -> int | None:
    """N when VAULTWATCH_FAULT is `<kind>:N`, else None."""
    spec = os.environ.get(FAULT_ENV, "")
    if spec.startswith(kind + ":"):
        with contextlib.suppress(ValueError):
            return int(spec.split(":", 1)[1])
    return None


def crash_point(step: str) -> None:
    """A step of a write after which a crash leaves something for recovery to find. Does
    nothing unless VAULTWATCH_FAULT names it (see the module's doc)."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    if spec.startswith("trace:"):
        with open(spec[len("trace:") :], "a", encoding="utf-8") as fh:
            fh.write(step + "\n")
        return
    after = fault_after("after_write")
    if after is not None:
        spec = f"kill:renamed:{after}"
    kind, _, rest = spec.partition(":")
    name, _, n = rest.rpartition(":")
    if kind != "kill" or name != step:
        return
    _REACHED[step] += 1
    with contextlib.suppress(ValueError):
        if _REACHED[step] >= int(n):
            os.kill(os.getpid(), signal.SIGKILL)
