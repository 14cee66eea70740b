"""The demo's copy and its server go when its terminal does (issue 33: each `--demo` run left
its vault copy in the temp folder). `q` removed it; a closed terminal window (SIGHUP) or a
polite kill (SIGTERM) ended the process on the spot, leaving the copy and the demo's server
running on it. The real `vaultwatch --demo` on a pseudo-terminal, then the signal."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from .conftest import REPO, wait_for
from .terminal import in_terminal


def _serving_on(vault: Path) -> list[int]:
    """The pids of processes whose command line names `vault` (the demo's server)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if str(vault).encode() in cmd and int(entry.name) != os.getpid():
                pids.append(int(entry.name))
    return pids


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["hangup", "term"])
def test_a_closed_terminal_removes_the_demo_and_stops_its_server(
    tmp_path: Path, sig: signal.Signals
) -> None:
    env = dict(
        os.environ,
        TMPDIR=str(tmp_path),  # where the demo makes its copy
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TERM="xterm-256color",
        VAULTWATCH_SEMANTIC="off",
    )
    cmd = [sys.executable, "-c", "from app.main import main; main()", "--demo"]
    master, proc = in_terminal(cmd, env, 80, 24, cwd=REPO)
    shown = bytearray()

    def drain() -> None:  # a terminal reads what the app draws, or the app blocks on it
        while True:
            try:
                got = os.read(master, 65536)
            except OSError:
                return
            if not got:
                return
            shown.extend(got)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        vault = wait_for(
            lambda: next(iter(tmp_path.glob("vaultwatch-demo-*/vault")), None), 60, "the demo"
        )
        wait_for(lambda: _serving_on(vault), 60, "the demo's server")
        wait_for(lambda: b"demo-assistant" in shown, 60, "the demo on screen")
        proc.send_signal(sig)
        assert proc.wait(60) is not None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        reader.join(5)
    assert not list(tmp_path.glob("vaultwatch-demo-*")), "the demo's copy was left"
    wait_for(lambda: not _serving_on(vault), 30, "the demo's server to stop")
