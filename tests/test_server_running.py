"""Whether a server the journal names still runs: one rule for `vaultwatch-server stop`, the
dashboard's supervisor and the header's recall progress (server/core/pids.pid_alive). A server
that has exited and is not yet reaped (the dashboard's own resident, between its death and the
supervisor's next look) is a zombie: its pid answers a signal, but it serves nothing."""

from __future__ import annotations

import os
import subprocess
import sys

from app.ui.widgets.header import recall_progress, running


def test_a_server_that_exited_and_is_not_reaped_is_not_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # until it has exited, without reaping it: a zombie from here on
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert not running(child.pid)
        ready = {"kind": "semantic_progress", "pid": child.pid, "state": "ready"}
        assert recall_progress([ready]) is None  # a dead server's "ready" says nothing now
    finally:
        child.wait()


def test_a_live_server_and_an_event_without_a_pid_count_as_running() -> None:
    assert running(os.getpid())
    assert running(None)  # an older journal: it cannot be told dead
    ready = {"kind": "semantic_progress", "pid": os.getpid(), "state": "ready"}
    assert recall_progress([ready]) == ready
