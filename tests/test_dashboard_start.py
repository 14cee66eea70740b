"""The dashboard paints before its server child is up, says so, and says when it failed."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from app.services.supervisor import ServerSupervisor
from app.ui.dashboard import Dashboard

from .conftest import until

pytestmark = pytest.mark.anyio


def gated_python(tmp_path: Path, gate: Path) -> str:
    """A real python that starts only once `gate` exists: a server slow to start, on demand."""
    script = tmp_path / "gated-python"
    script.write_text(
        f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\nexec "{sys.executable}" "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


def header(app: Dashboard) -> str:
    return str(app.query_one("#header", Static).render())


@pytest.mark.slow
async def test_first_paint_comes_before_the_server(
    make_vault: Any, tmp_path: Path, settings_dir: Path
) -> None:
    vault = make_vault({"a.md": "# A\n"})
    gate = tmp_path / "gate"
    sup = ServerSupervisor(vault, python=gated_python(tmp_path, gate))
    app = Dashboard(vault, supervisor=sup, poll_seconds=0.1)
    try:
        async with app.run_test(size=(140, 30)) as pilot:
            # the timeline and the header are drawn while the server cannot have started
            await until(pilot, lambda: bool(app.feed.rows))
            assert sup.phase == "starting"
            assert "starting server" in header(app)
            gate.touch()
            await until(pilot, lambda: sup.phase == "up", timeout=60)
            await until(pilot, lambda: "serving http://127.0.0.1:" in header(app))
            assert sup.alive
    finally:
        sup.stop()


async def test_a_server_that_cannot_start_is_shown_not_a_blank_exit(
    make_vault: Any, tmp_path: Path, settings_dir: Path
) -> None:
    vault = make_vault({"a.md": "# A\n"})
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\necho 'no such module: server' >&2\nexit 3\n")
    broken.chmod(0o755)
    sup = ServerSupervisor(vault, python=str(broken))
    app = Dashboard(vault, supervisor=sup, poll_seconds=0.1)
    try:
        async with app.run_test(size=(140, 30)) as pilot:
            await until(pilot, lambda: sup.phase == "failed")
            await until(pilot, lambda: "server failed" in header(app))
            assert "no such module" in sup.why
            assert app.is_running  # the history is still there to review
    finally:
        sup.stop()


def test_stop_during_start_leaves_no_child(make_vault: Any, tmp_path: Path) -> None:
    """The owner quits while the server is still starting: no server is left behind."""
    import threading

    vault = make_vault({"a.md": "# A\n"})
    sup = ServerSupervisor(vault, python=gated_python(tmp_path, tmp_path / "never"))
    errors: list[Exception] = []

    def start() -> None:
        try:
            sup.start(timeout=30)
        except RuntimeError as exc:
            errors.append(exc)

    t = threading.Thread(target=start)
    t.start()
    deadline = time.monotonic() + 10
    while sup.proc is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child = sup.proc
    assert child is not None
    sup.stop()
    t.join(10)
    assert not t.is_alive() and errors and sup.phase == "failed"
    assert child.poll() is not None


# What the first paint must not wait for: pygments (the diff's colours), the server's write path
# (pydantic, the vault's indexes) and every screen but the main one. Each loads when first needed.
LAZY = (
    "pygments",
    "pydantic",
    "server.services.writes",
    "server.services.op_plans",
    "server.services.write_plan",
    "server.services.write_checks",
    "server.write.write_ops",
    "server.vault",
    "app.ui.dialogs.file_dialogs",
    "app.ui.screens.health_screen",
    "app.ui.screens.insights",
    "app.ui.screens.reads",
    "app.ui.screens.review_screen",
    "app.ui.screens.stats_screen",
)
PAINT = """
import json, sys
from pathlib import Path
import anyio
from textual.worker import WorkerCancelled
from app.ui.dashboard import Dashboard
from app.ui.screens.main_screen import DiffPane
from app.ui.widgets.timeline import Timeline

LAZY = tuple(sys.argv[2].split(","))

def say(stage: str) -> None:
    lazy = sorted({m.split(".")[0] if m.startswith("p") else m for m in sys.modules
                   if any(m == n or m.startswith(n + ".") for n in LAZY)})
    print(json.dumps([stage, lazy]), flush=True)

async def main() -> None:
    say("imported")
    app = Dashboard(Path(sys.argv[1]), poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        for _ in range(3000):
            if len(t.rows) == 2 and t.current is not None:
                break
            await pilot.pause(0.01)
        # the first paint and whatever it set going: every worker it started has finished
        # (conftest's workers_done is not imported here: conftest loads the write path)
        await pilot.pause()
        for _ in range(50):
            try:
                await app.workers.wait_for_complete()
                break
            except WorkerCancelled:  # an exclusive worker a newer one replaced: the rest
                continue
        await pilot.pause()
        say(f"painted on {t.current.kind}")
        await pilot.press("down")  # the import commit: its diff
        pane = app.query_one("#detail", DiffPane)
        for _ in range(3000):
            if "a.md" in pane.plain:
                break
            await pilot.pause(0.01)
        say("diff drawn" if "a.md" in pane.plain else "no diff")

anyio.run(main)
"""


def test_the_first_paint_loads_no_diff_colours_write_path_or_other_screens(
    make_vault: Any, tmp_path: Path
) -> None:
    """A fresh dashboard process: importing it and painting the main screen (the cursor on a
    server row: no diff yet) loads none of LAZY; the first diff drawn loads pygments, and still
    not the write path. A behaviour test of the imports, not a timing."""
    import json
    import os
    import subprocess

    from server.core.state_files import state_dir
    from server.write.journal import Journal, ServerStarted

    from .conftest import REPO

    vault = make_vault({"a.md": "# A\n\nsome *text*\n"})
    Journal(state_dir(vault) / "events.jsonl").append(
        ServerStarted(
            transport="http", read_only=False, version="0", vault=str(vault), config_errors=[]
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    r = subprocess.run(
        [sys.executable, "-c", PAINT, str(vault), ",".join(LAZY)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    stages = [json.loads(line) for line in r.stdout.splitlines()]
    assert stages == [
        ["imported", []],
        ["painted on server", []],
        ["diff drawn", ["pygments"]],
    ], r.stdout
