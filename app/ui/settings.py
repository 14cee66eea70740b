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


def diff_colours(variables: dict[str, str], ansi: bool) -> dict[str, str]:
    """The diff's colours in a theme: added and removed text, and the colour their line is
    tinted with (the diff styles blend it at 12 % and 35 %). An ANSI theme's colours are the
    terminal's own and cannot be blended: its tint came out the text's own green (SGR 32 on
    42, in `ansi-light`), so there the lines keep the terminal's background."""
    back = ("ansi_default", "ansi_default") if ansi else (variables["success"], variables["error"])
    return {
        "diff-added": variables["text-success"],
        "diff-added-back": back[0],
        "diff-removed": variables["text-error"],
        "diff-removed-back": back[1],
    }
