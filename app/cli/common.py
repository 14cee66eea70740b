"""What every shell command shares: the vault argument, refusals, colour, the pager, columns, and
the stream that shows control characters instead of sending them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.services.cell_wrap import cells
from app.services.history import Commit
from server.core.errors import VaultwatchError
from server.core.safetext import visible


class Refused(VaultwatchError):
    """The one-line reason a command did nothing."""

    code = "refused"


def _vault(raw: str) -> Path:
    root = Path(raw).expanduser().absolute()
    if not root.is_dir():
        raise Refused(f"{raw} is not a folder")
    if not (root / ".git").exists():
        raise Refused(f"{raw} is not a vault with git history (open it once with vaultwatch)")
    return root


def _split(values: list[str], want: int, usage: str) -> tuple[str, list[str]]:
    """`[VAULT] A B`: the optional leading vault before `want` positionals."""
    if len(values) == want:
        return ".", values
    if len(values) == want + 1:
        return values[0], values[1:]
    raise Refused(f"usage: {usage}")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _who(c: Commit | None) -> str:
    """Who wrote (or removed) a line: the AI's commit with tool, client and time, or you."""
    if c is None:
        return ""
    if c.sha == "worktree":
        return "you: unsaved edit"
    if c.is_ai:
        return f"AI {c.short} {c.tool} · {c.client or '?'} · {c.time.astimezone():%m-%d %H:%M}"
    return f"you: {c.short}"


def _vault_and_path(where: list[str]) -> tuple[str, str | None]:
    """`review [VAULT] [PATH]`: one word is the vault when it is a folder with git history,
    else a note of the vault here; two are the vault and the note."""
    if not where:
        return ".", None
    if len(where) == 1:
        raw = Path(where[0]).expanduser()
        return (where[0], None) if (raw / ".git").exists() else (".", where[0])
    if len(where) == 2:
        return where[0], where[1]
    raise Refused("usage: vaultwatch review [VAULT] [PATH] (one note at a time)")


COLOURS = {"bold": "1", "cyan": "36", "yellow": "33", "green": "32", "red": "31"}


def _colour_on(choice: str) -> bool:
    """--color: always, never, or auto (a terminal, and NO_COLOR not set: no-color.org)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _painter(choice: str) -> Callable[[str, str], str]:
    """Every line through `visible` first (the AI's text may hold control characters: shown,
    never sent), then our own colour codes around it; `_page` writes past `_Shown`."""
    on = _colour_on(choice)

    def paint(colour: str, text: str) -> str:
        text = visible(text)
        return f"\x1b[{COLOURS[colour]}m{text}\x1b[0m" if on and colour else text

    return paint


def _terminal_width() -> int | None:
    """Rows are wrapped to the terminal's width on a terminal (CJK prose has no spaces for the
    pager to break at); piped, lines stay whole."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else None


def _page(text: str, choice: str) -> None:
    """On a terminal, through $PAGER (`less -R` by default, as git does: -F quits when it fits)
    when the text is taller than the screen; piped, as it is."""
    import shlex
    import shutil
    import subprocess

    rows = shutil.get_terminal_size((80, 24)).lines
    # the lines are made visible already (`_painter`): past `_Shown`, or our colours would be too
    raw = sys.stdout._out if isinstance(sys.stdout, _Shown) else sys.stdout
    if not sys.stdout.isatty() or text.count("\n") < rows:
        raw.write(text)
        return
    pager = os.environ.get("PAGER") or "less"
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # raw colours, quit if one screen, keep the screen after
    try:
        proc = subprocess.Popen(shlex.split(pager), stdin=subprocess.PIPE, env=env)
    except OSError:  # no such pager: print it
        raw.write(text)
        return
    assert proc.stdin is not None
    raw.flush()
    try:
        proc.stdin.write(text.encode("utf-8", "surrogateescape"))
        proc.stdin.close()
    except BrokenPipeError:  # the owner quit the pager early
        pass
    proc.wait()


def _columns(headings: list[str], rows: list[list[str | int]]) -> list[str]:
    """Aligned columns (counts right, text left), measured in terminal cells."""
    table = [headings, *[[f"{c:,}" if isinstance(c, int) else c for c in r] for r in rows]]
    right = [bool(rows) and isinstance(rows[0][i], int) for i in range(len(headings))]
    widths = [max(cells(r[i]) for r in table) for i in range(len(headings))]
    out = []
    for r in table:
        padded = []
        for i, cell in enumerate(r):
            pad = " " * (widths[i] - cells(cell))
            padded.append(pad + cell if right[i] else cell + pad)
        out.append("  ".join(padded))
    return out


class _Shown:
    """A text stream that shows control characters instead of sending them (safetext.visible):
    every line a command prints goes through it, whoever wrote the text (the AI's note text,
    titles and headings, commit subjects, paths)."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return int(self._out.write(visible(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)
