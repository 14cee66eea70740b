"""Data folders that ship inside the installed package: the demo vault and the dashboard themes.

The source tree keeps them at the top (`example_vault/`, `themes/`, the layout docs/design.md names);
the wheel maps them into the package (`server/example_vault`, `app/themes`: see pyproject's
`force-include`), so `uv tool install`, `pipx` and `pip` carry them along. One lookup serves both."""

from __future__ import annotations

import shutil
import tempfile
from importlib.resources import files
from pathlib import Path

from server.core.gitrepo import ensure_repo

SOURCE_TREE = Path(__file__).resolve().parents[2]  # server/notes/bundled.py -> the repo


def bundled_dir(package: str, name: str) -> Path:
    """The folder `name` shipped inside `package` when installed from the wheel, else the
    top-level folder of the same name in the source tree (`uv run`, editable installs)."""
    inside = files(package) / name
    # Installed wheels are plain folders on disk, so the resource is a real path we can copy.
    if isinstance(inside, Path) and inside.is_dir():
        return inside
    return SOURCE_TREE / name


EXAMPLE_VAULT = bundled_dir("server", "example_vault")


def make_demo_vault(dest: Path | None = None) -> Path:
    """A fresh copy of the example vault at `dest` (default: in a new temporary folder), made a
    git repo with its import commit: what `vaultwatch --demo`, `vaultwatch-server --demo` and
    the tests' `example_vault` serve."""
    if not EXAMPLE_VAULT.is_dir():
        raise SystemExit(
            f"vaultwatch: --demo needs the example vault, missing at {EXAMPLE_VAULT}; "
            "reinstall vaultwatch"
        )
    dest = dest or Path(tempfile.mkdtemp(prefix="vaultwatch-demo-")) / "vault"
    shutil.copytree(EXAMPLE_VAULT, dest)
    ensure_repo(dest)
    return dest
