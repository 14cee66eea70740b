"""The get_context preview: exactly what a new conversation receives now, its size, and what
changed in it since the owner last marked it reviewed. No Textual: the Reads screen and
`vaultwatch context` call this.

The text comes from server.services.context.context_text, the function the get_context tool's result
goes through, on the vault's own config: never a copy of its logic. The reviewed copy is kept
in `.git/vaultwatch/context-reviewed.json` (never in the vault's files), written atomically.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from server.core.state_files import load_state_json, make_state_dir, state_dir
from server.services.context import context_text
from server.vault import Vault
from server.write.journal import estimate_tokens, now_iso, parse_time
from server.write.temp_files import atomic_write

REVIEWED = "context-reviewed.json"


@dataclass
class Preview:
    text: str  # byte for byte what get_context returns now
    reviewed: str | None  # the text as last marked reviewed (None: never)
    reviewed_at: datetime | None

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    @property
    def lines(self) -> list[str]:
        return readable(self.text)

    @property
    def changed(self) -> bool:
        """True when it differs from the reviewed copy, or none was ever marked."""
        return self.reviewed != self.text

    def diff(self) -> list[str]:
        """Unified diff, line by line in the readable form, from the reviewed copy to now
        (everything added when it was never reviewed); [] when nothing changed."""
        if not self.changed:
            return []
        old = readable(self.reviewed) if self.reviewed is not None else []
        return list(difflib.unified_diff(old, self.lines, "reviewed", "now", n=2, lineterm=""))[
            2:
        ]  # the ---/+++ header says nothing here

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "chars": self.chars,
            "tokens": self.tokens,
            "reviewed_at": self.reviewed_at.isoformat(timespec="seconds")
            if self.reviewed_at
            else None,
            "changed": self.changed,
            "diff": self.diff(),
        }


def _reviewed_path(root: Path) -> Path:
    return state_dir(root) / REVIEWED


def load_reviewed(root: Path) -> tuple[str | None, datetime | None]:
    """The text last marked reviewed and when; (None, None) when never, or when the file is
    unreadable (then everything shows as new: nothing is hidden from the owner)."""
    try:
        data = load_state_json(_reviewed_path(root))
        text, at = data["text"], data["at"]
        if not isinstance(text, str):
            return None, None
        when = parse_time(at)
        if when is None:
            raise ValueError(f"not a time: {at!r}")
        return text, when.astimezone()
    except (OSError, ValueError, KeyError, TypeError):
        return None, None


def preview(root: Path, vault: Vault | None = None) -> Preview:
    """The preview on the vault's current config (`vault`: one already open on `root`)."""
    reviewed, at = load_reviewed(root)
    if vault is not None:
        return Preview(context_text(vault), reviewed, at)
    own = Vault(root)
    try:
        return Preview(context_text(own), reviewed, at)
    finally:
        own.close()


def mark_reviewed(root: Path, text: str) -> None:
    """Keep `text` (the preview the owner looked at, not whatever it is a moment later) as the
    reviewed copy: temp file, fsync, rename, 0600 in the state folder."""
    make_state_dir(state_dir(root))
    data = json.dumps({"v": 1, "at": now_iso(), "text": text}, ensure_ascii=False)
    atomic_write(_reviewed_path(root), data.encode("utf-8"))


# -- a readable form ------------------------------------------------------------------------------


def readable(text: str) -> list[str]:
    """The result as lines a person reads and a diff can compare: keys and values one a line,
    a note's text as its own lines. Lossless for the content (every string in full); the
    exact bytes are `Preview.text`."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text.splitlines()
    out: list[str] = []
    _render(data, "", out)
    return out


def _scalar(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _render(value: Any, ind: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _render_item(f"{ind}{k}:", v, ind, out)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict) and v:
                start = len(out)
                _render(v, ind + "  ", out)
                out[start] = f"{ind}- {out[start][len(ind) + 2 :]}"
            else:
                _render_item(f"{ind}-", v, ind, out)
    else:
        out.append(f"{ind}{_scalar(value)}")


def _render_item(label: str, v: Any, ind: str, out: list[str]) -> None:
    if isinstance(v, str) and "\n" in v:
        out.append(f"{label} |")
        out.extend(f"{ind}  {line}" if line else "" for line in v.split("\n"))
    elif isinstance(v, (dict, list)) and v:
        out.append(label)
        _render(v, ind + "  ", out)
    elif isinstance(v, (dict, list)):
        out.append(f"{label} {json.dumps(v)}")
    else:
        out.append(f"{label} {_scalar(v)}".rstrip())
