"""Starting the resident server for a client: one starter at a time (`resident.start.lock`),
the resident spawned detached from the client, and waited for until its socket answers; a folder
that is no repository yet is made one by the resident.

Standard library only: the relay imports it (see server/protocol/resident_socket.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.protocol.resident_socket import (
    SOCKET_NAME,
    Unusable,
    check_private,
    state_dir,
    try_connect,
)

START_LOCK = "resident.start.lock"  # relays (and the dashboard) take turns starting one
LIFE_LOCK = "resident.lock"  # held by the resident serving the socket, for its life
LOG_NAME = "resident.log"
EXIT_ANOTHER = 75  # a resident exits with this (EX_TEMPFAIL) when another serves the vault
START_WAIT_S = 90.0  # a resident's start: the SDK's import and the vault's index, on a busy box


@contextlib.contextmanager
def start_lock(sdir: Path, wait: float = START_WAIT_S) -> Any:
    """One starter at a time, so ten clients opened at once start one resident."""
    # never through a link (issue 27): the lock file would be made wherever it points
    check_private(sdir)
    fd = os.open(sdir / START_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Unusable(
                        "another client has been starting the server for too long"
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def spawn_resident(
    root: Path, sdir: Path | None, *, detached: bool = True
) -> subprocess.Popen[bytes]:
    """Start the resident, detached from this client (its own process group, so the signals a
    terminal or a client sends to the client's group miss it; SIGHUP ignored; stdio on
    /dev/null, its messages in resident.log): it outlives the client that started it. With no
    state folder yet (no repo: the resident makes it) its first words are lost, the rest
    logged.

    Not its own session: with the kernel's autogroups (sched_autogroup_enabled, the default on
    desktop Linux) a new session is a new scheduling group, and a process alone in its group
    that wakes for a few ms at a time waited longer for a core on a loaded machine: traced hop
    by hop (`python -m bench.resident_bench --hops`), a warm list_docs spent 10-16 ms in the
    resident in 3 of 4 runs vs 3 ms in-process; measured paired at a load of 20, the relay
    added +2.8 to +5.4 ms median with the resident in its own session, +0.3 to +0.4 ms in the
    client's."""
    log = (
        os.open(
            sdir / LOG_NAME,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
        if sdir is not None
        else os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    )
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "server.protocol.resident", "--vault", str(root), "--log"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            process_group=0 if detached else None,
            close_fds=True,
            cwd="/",
        )
    finally:
        os.close(log)


def log_tail(sdir: Path, lines: int = 3) -> str:
    try:
        text = (sdir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " | ".join(text.strip().splitlines()[-lines:])


Spawn = Callable[[Path, Path], "subprocess.Popen[Any]"]


def connect_or_start(
    root: Path, sdir: Path, spawn: Spawn = spawn_resident, wait: float = START_WAIT_S
) -> socket.socket:
    s = try_connect(sdir)
    if s is not None:
        return s
    with start_lock(sdir, wait):
        s = try_connect(sdir)  # started by the client that held the lock before us
        if s is not None:
            return s
        proc: subprocess.Popen[Any] | None = spawn(root, sdir)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            s = try_connect(sdir)
            if s is not None:
                return s
            rc = proc.poll() if proc is not None else None
            if rc == EXIT_ANOTHER:  # another resident got the vault first: wait for its socket
                proc = None
            elif rc is not None:
                raise Unusable(f"the resident server exited ({rc}) at start: {log_tail(sdir)}")
            time.sleep(0.01)
        raise Unusable(f"the resident server did not start in {wait:.0f} s")


def repo_made_by_resident(root: Path) -> Path:
    """A folder that is not a repo yet: the resident makes it one (git init and the owner's
    import commit, as the in-process server does); its state folder once it is there."""
    proc = spawn_resident(root, None)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(Unusable):
            sdir = state_dir(root)
            if (sdir / SOCKET_NAME).exists():
                return sdir
        if proc.poll() not in (None, EXIT_ANOTHER):
            raise Unusable(f"the resident server exited ({proc.returncode}) making the repo")
        time.sleep(0.02)
    raise Unusable(f"the resident server did not make the repo in {START_WAIT_S:.0f} s")
