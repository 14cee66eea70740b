"""The layering docs/design.md describes is a test, not a hope: import-linter's contracts (in
pyproject.toml) over the static import graph, and a run-time check that the server starts
without loading the dashboard or Textual (a deferred import the static graph cannot see)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import REPO


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run(
        [str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 5 kept, 0 broken." in r.stdout, r.stdout  # every contract was checked


def test_a_screen_importing_another_screen_breaks_the_contract(tmp_path: Path) -> None:
    """The app's contracts can fail: a copy of the tree where the review screen imports the note
    screen (what the dashboard's navigation replaced) is refused, and so is a service that
    imports Textual."""
    import shutil

    for folder in ("server", "app"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    review = tmp_path / "app" / "ui" / "screens" / "review_screen.py"
    review.write_text(review.read_text() + "\nfrom app.ui.screens.note_screen import NoteScreen\n")
    service = tmp_path / "app" / "services" / "stats.py"
    service.write_text(service.read_text() + "\nimport textual.widgets\n")
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run(
        [str(lint), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode != 0, r.stdout
    assert "No screen imports another screen BROKEN" in r.stdout, r.stdout
    assert "run without Textual BROKEN" in r.stdout, r.stdout
    assert "Contracts: 3 kept, 2 broken." in r.stdout, r.stdout


def test_the_server_loads_without_textual_or_the_dashboard() -> None:
    code = (
        "import sys\n"
        "import server.protocol.cli, server.protocol.tools, server.services.writes, server.vault\n"
        "import server.protocol.resident, server.protocol.relay\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'app'))\n"
        "print(loaded)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
