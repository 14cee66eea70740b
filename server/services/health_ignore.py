"""The findings the owner chose to ignore: `.git/vaultwatch/health-ignore.json`, the only file
health writes; a damaged list is a warning, kept aside at the next change, never a crash."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.core.state_files import make_state_dir, read_state, state_dir
from server.services.health_findings import Finding

if TYPE_CHECKING:
    pass

IGNORE_FILE = "health-ignore.json"


def ignore_path(root: Path) -> Path:
    return state_dir(root) / IGNORE_FILE


def load_ignored(root: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """(finding id -> what was ignored and when, a warning when the file cannot be used). A
    missing file is an empty list; a damaged one is a warning and an empty list, never a crash
    (it is left as it is until the next ignore or unignore sets it aside)."""
    path = ignore_path(root)
    try:
        raw = read_state(path).decode("utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError, StateDamaged
        return {}, f"the health ignore list {path} cannot be read ({exc}); nothing is ignored"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return {}, (
            f"the health ignore list {path} is damaged ({exc.__class__.__name__}: {exc}); "
            "nothing is ignored until it is fixed or the next ignore starts a new one"
        )
    items = data.get("ignored") if isinstance(data, dict) else None
    if not isinstance(items, dict) or not all(isinstance(v, dict) for v in items.values()):
        return {}, (
            f"the health ignore list {path} is not a list vaultwatch wrote (no 'ignored' "
            "mapping); nothing is ignored until it is fixed or the next ignore starts a new one"
        )
    return {str(k): v for k, v in items.items()}, None


def _write_ignored(root: Path, items: dict[str, dict[str, Any]]) -> None:
    """Atomically: a temp file in the same folder, fsync, rename; 0600 like every state file."""
    folder = make_state_dir(state_dir(root))
    fd, tmp = tempfile.mkstemp(prefix=f".{IGNORE_FILE}.", suffix=".vaultwatch-tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"v": 1, "ignored": items}, fh, ensure_ascii=False, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / IGNORE_FILE)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _editable(root: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The list to change; a damaged file is kept beside it (`.damaged`), never overwritten
    unseen, and the change starts a new list (the message says so)."""
    items, warning = load_ignored(root)
    if warning is None:
        return items, None
    src = ignore_path(root)
    kept = src.with_name(IGNORE_FILE + ".damaged")
    os.replace(src, kept)
    return {}, f"the damaged ignore list was kept as {kept.name}; a new one was started"


def ignore(root: Path, finding: Finding) -> str | None:
    """Put a finding on the ignore list (a note about a damaged list set aside, or None)."""
    items, note = _editable(root)
    items[finding.id] = {
        "kind": finding.kind,
        "paths": finding.paths,
        "reason": finding.reason,
        "at": datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    _write_ignored(root, items)
    return note


def unignore(root: Path, finding_id: str) -> str | None:
    items, note = _editable(root)
    if items.pop(finding_id, None) is not None or note:
        _write_ignored(root, items)
    return note
