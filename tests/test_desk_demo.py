"""`vaultwatch --demo` on a real pseudo-terminal leaves nothing in the temp folder when it quits,
unless `--keep` (audit 3 N26: each run left its ~1 MB vault copy)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from .terminal import in_terminal, read_to_exit, read_until


@pytest.mark.parametrize("keep", [False, True])
def test_the_demo_removes_its_vault_on_quit_unless_kept(tmp_path: Path, keep: bool) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        TMPDIR=str(tmp),
        HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        GIT_CONFIG_GLOBAL=os.devnull,
        VAULTWATCH_SEMANTIC="off",
        TERM="xterm-256color",
        COLUMNS="80",
        LINES="24",
    )
    args = ["--demo", "--keep"] if keep else ["--demo"]
    primary, proc = in_terminal(
        [sys.executable, "-c", "from app.main import main; main()", *args], env, 80, 24
    )
    try:
        screen = read_until(primary, b"demo-assistant", 120, proc)
        assert b"demo-assistant" in screen, screen.decode(errors="replace")[-2000:]
        made = list(tmp.glob("vaultwatch-demo-*"))
        assert len(made) == 1, made  # the copy it runs on
        os.write(primary, b"q")
        text = (screen + read_to_exit(primary, proc, 60)).decode(errors="replace")
        assert proc.poll() == 0, text[-2000:]
        if keep:
            assert (made[0] / "vault").is_dir()
            assert f"the demo vault is kept at {made[0] / 'vault'}" in text
        else:
            assert not made[0].exists(), "the demo vault was left in the temp folder"
            assert list(tmp.glob("vaultwatch-demo-*")) == []
            assert "the demo vault was removed" in text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(15)
        os.close(primary)
