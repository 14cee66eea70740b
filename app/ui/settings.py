"""Per-user dashboard settings (the chosen theme), in $XDG_CONFIG_HOME/vaultwatch/settings.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from textual.color import Color
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


# WCAG 2's "AA" for body text: muted text is still text the owner has to read
READABLE = 4.5


def luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of a `#rrggbb` colour."""

    def lin(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two `#rrggbb` colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable_colours(variables: dict[str, str], ansi: bool) -> dict[str, str]:
    """The theme's colours that were drawn below READABLE, each made readable in one place:
    - muted text (a folder after a note's name, hints, counts, a pane's title) as one solid
      colour: the foreground faded toward the background as far as it stays readable on the
      background, the surface and the panel. Textual's `auto 60%` is blended over whatever
      lies under it when drawn; a table cell is drawn with nothing under it, and the folder
      came out black (#000000 on the Reads screen's grey rows, 1.2-2.3:1); on vaultwatch-dark's
      panel even the blend was 4.3:1;
    - the coloured text (+/- counts, errors, warnings: `−0` at 3.7:1 on vaultwatch-dark's
      rows, the header's warning at 2.8:1 on textual-light's panel) and the footer's keys (the
      accent, 3.05:1 on vaultwatch-dark's panel), each moved toward the foreground until
      readable on the background, the surface and the panel (the footer's keys on the footer).
    An ANSI theme's colours are the terminal's own: left as they are."""
    if ansi:
        return {}
    fg = Color.parse(variables["foreground"])
    backs = [Color.parse(variables[k]).hex for k in ("background", "surface", "panel")]
    out = {"text-muted": _readable(Color.parse(variables["background"]), fg, backs, 0.6)}
    for name in ("text-success", "text-error", "text-warning", "text-primary", "text-accent"):
        if variables.get(name, "").startswith("#"):
            out[name] = _readable(Color.parse(variables[name]), fg, backs, 0.0)
    key = variables.get("footer-key-foreground", "")
    footer = variables.get("footer-background", "")
    if key.startswith("#") and footer.startswith("#"):
        out["footer-key-foreground"] = _readable(Color.parse(key), fg, [footer], 0.0)
    return out


def _readable(start: Color, towards: Color, backs: list[str], least: float) -> str:
    """`start` blended toward `towards` (at least `least` of the way), the least that stands at
    READABLE (with a little to spare for tinted rows) on every one of `backs`."""
    for step in range(round(least * 50), 51):
        colour = start.blend(towards, step / 50, alpha=1.0).hex
        if min(contrast(colour, b) for b in backs) >= READABLE + 0.2:
            return colour
    return towards.hex
