"""Per-user dashboard settings (the chosen theme), in $XDG_CONFIG_HOME/vaultwatch/settings.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from textual.theme import Theme

from server.notes.bundled import bundled_dir

THEMES_DIR = bundled_dir("app", "themes")


def settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vaultwatch" / "settings.json"


def load() -> dict[str, Any]:
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save(**changes: Any) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**load(), **changes}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def bundled_themes() -> list[Theme]:
    themes = []
    for f in sorted(THEMES_DIR.glob("*.json")):
        spec = json.loads(f.read_text(encoding="utf-8"))
        themes.append(Theme(**spec))
    return themes
