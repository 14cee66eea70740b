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


# Imports from one test module into another: pytest then collects the imported tests twice and
# fixtures move with them, and a change to one test file breaks others. Shared helpers live in
# modules that are not test modules (tests/desk.py, tests/servers.py, ...) or in conftest.


def imported_test_modules(source: str, package: str = "tests") -> list[str]:
    """The test modules (`test_*`) `source`, a module of the `tests` package, imports: in any
    form (`from .test_x import`, `from tests.test_x import`, `from . import test_x`,
    `import tests.test_x`), at the top or inside a function."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 1 or base == package or base.startswith(package + "."):
                base = base.removeprefix(package).lstrip(".")
                names = [f"{base}.{a.name}" if base else a.name for a in node.names]
                names.append(base)
            else:
                continue
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts and parts[0] == package:
                parts = parts[1:]
            if parts and parts[0].startswith("test_"):
                found.append(parts[0])
    return sorted(set(found))


def test_no_test_module_imports_another_test_module() -> None:
    tests = REPO / "tests"
    found = {
        (str(path.relative_to(tests)), name)
        for path in tests.rglob("*.py")
        if "__snapshots__" not in path.parts
        for name in imported_test_modules(path.read_text(encoding="utf-8"))
    }
    assert not found, sorted(found)


def test_the_import_scan_finds_every_form() -> None:
    """The scan above can fail: each way of writing the import is found, helpers are not."""
    source = (
        "from .test_a import x\n"
        "from tests.test_b import y\n"
        "from . import test_c\n"
        "import tests.test_d\n"
        "from .desk import screen_text\n"
        "from .conftest import git\n"
        "import pytest\n"
        "def f():\n"
        "    from .test_e import z\n"
    )
    assert imported_test_modules(source) == ["test_a", "test_b", "test_c", "test_d", "test_e"]
