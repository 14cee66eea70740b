"""Hand a note to the owner's programs: `$EDITOR` (the dashboard steps aside) or Obsidian."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from textual.app import SuspendNotSupported
from textual.screen import Screen


def obsidian_url(root: Path, path: str) -> str:
    """Obsidian's link to a note: the vault by its folder's name, the file by its path from the
    vault's root, both url-encoded (a space, a `/`, a Chinese name)."""
    return f"obsidian://open?vault={quote(root.name, safe='')}&file={quote(path, safe='')}"


def opener() -> list[str] | None:
    """The platform's command that opens a URL in the app that handles it; None where there is
    none (no graphical session: a server, ssh, a container)."""
    if sys.platform == "darwin":
        return ["open"]
    if sys.platform == "win32":
        return ["explorer"]
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return None
    found = shutil.which("xdg-open")
    return [found] if found else None


def editor_command() -> list[str] | None:
    """The owner's editor: $EDITOR, else $VISUAL, as the shell would split it."""
    for name in ("EDITOR", "VISUAL"):
        value = os.environ.get(name, "").strip()
        if value:
            with contextlib.suppress(ValueError):
                return shlex.split(value)
    return None


def edit_note(screen: Screen[Any], root: Path, path: str) -> bool:
    """Open the note in $EDITOR with the dashboard suspended (the editor gets the terminal);
    True when the editor ran. Says why in the screen when it cannot."""
    cmd = editor_command()
    if cmd is None:
        screen.notify(
            "set $EDITOR (for example: export EDITOR=vim) to edit notes from here",
            title="no editor",
            severity="warning",
            timeout=8,
        )
        return False
    target = str(root / path)
    try:
        with screen.app.suspend():
            code = subprocess.run([*cmd, target], cwd=root).returncode
    except SuspendNotSupported:
        # no terminal to hand over (a headless or web driver): run it as it is
        code = subprocess.run([*cmd, target], cwd=root, capture_output=True).returncode
    except OSError as exc:
        screen.notify(f"{cmd[0]}: {exc.strerror}", title="editor failed", severity="error")
        return False
    if code:
        screen.notify(f"{' '.join(cmd)} exited with {code}", severity="warning", timeout=6)
    return True


def open_in_obsidian(screen: Screen[Any], root: Path, path: str) -> str:
    """Hand the note's obsidian:// link to the platform's opener; with none, copy it to the
    clipboard. Returns what the screen should keep saying (with none: why, then the link on a
    line of its own)."""
    url = obsidian_url(root, path)
    cmd = opener()
    if cmd is not None:
        try:
            subprocess.Popen(
                [*cmd, url],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            pass
        else:
            return f"opened in Obsidian: {url}"
    screen.app.copy_to_clipboard(url)
    # said where the link is, not in a toast: the toast covered the link it pointed to
    return (
        "open in Obsidian (copied): no program here opens links (no desktop session), so the "
        f"link is below and sent to the terminal's clipboard:\n{url}"
    )
