"""The dashboard as the owner starts it: a real process on a pseudo-terminal of a given size,
read until it shows something or exits. A helper module, not a test module: test modules import
from here, never from each other."""

from __future__ import annotations

import os
import pty
import select
import struct
import subprocess
import termios
import time
from fcntl import ioctl
from pathlib import Path


def in_terminal(
    cmd: list[str], env: dict[str, str], cols: int, rows: int, cwd: Path | None = None
) -> tuple[int, subprocess.Popen[bytes]]:
    """`cmd` started in its own session on a new pseudo-terminal of `cols` x `rows`; returns
    the terminal's side to read and type on, and the process."""
    primary, secondary = pty.openpty()
    ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    return primary, proc


def read_until(fd: int, want: bytes, seconds: float, proc: subprocess.Popen[bytes]) -> bytes:
    """What the terminal shows until `want` is in it, the process exits or `seconds` pass."""
    seen = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and want not in seen:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
        elif proc.poll() is not None:
            break
    return seen


def read_to_exit(fd: int, proc: subprocess.Popen[bytes], seconds: float) -> bytes:
    """What the terminal shows until the process exits (at most `seconds`), and what it wrote
    in the second after."""
    seen = b""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        seen += read_until(fd, b"\x00never", 0.5, proc)
    return seen + read_until(fd, b"\x00never", 1, proc)
