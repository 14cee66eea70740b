"""What of the vault config outlives a config that does not load: its private and protected
rules, kept in .git/vaultwatch/ (never a note, never committed), and the `Config` that stands in
for the vault's own until it loads again: never wider than the last good one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from server.core.git_run import GitError
from server.core.state_files import load_state_json, state_dir, write_state
from server.notes.config_model import Config
from server.notes.paths import PathRefused, normalize_glob

LAST_GOOD = "last_good_rules.json"


def _last_good_path(root: Path) -> Path:
    """In the vault's own git dir (a worktree's is not `<root>/.git`, which is then a file:
    the rules were silently never kept there)."""
    try:
        return state_dir(root) / LAST_GOOD
    except GitError:  # a `.git` file that points nowhere: nowhere to keep them
        return root / ".git" / "vaultwatch" / LAST_GOOD


def rules_of(cfg: Config) -> dict[str, Any]:
    """What of a config must outlive a broken one: what is private and what is the owner's."""
    return {
        "private": list(cfg.private),
        "protected": list(cfg.protected_paths()),
        "rules": cfg.rules,
        "vocabulary": cfg.tags.vocabulary,
        "source": cfg.source,
    }


def read_last_good(root: Path) -> dict[str, Any] | None:
    try:
        data = load_state_json(_last_good_path(root))
    except (OSError, ValueError):  # StateDamaged is a ValueError
        return None
    ok = isinstance(data, dict) and all(
        isinstance(data.get(k), list) and all(isinstance(v, str) for v in data[k])
        for k in ("private", "protected")
    )
    return data if ok else None


def write_last_good(root: Path, rules: dict[str, Any]) -> None:
    """Kept in .git/vaultwatch/ (never a note, never committed), written atomically, 0600."""
    path = _last_good_path(root)
    if not path.parent.parent.is_dir():
        return  # not a git repo (yet): nowhere private to keep it
    # never through a link in the state folder: the rules would go where it points (issue 27)
    write_state(path, json.dumps(rules, ensure_ascii=False).encode("utf-8"))


def stand_in(root: Path, loaded_at: str) -> Config:
    """The config while the vault's own does not load: never wider than the last good one."""
    kept = read_last_good(root)
    if kept is None:
        return Config(standing_in="closed", loaded_at=loaded_at)
    rules = kept.get("rules")
    try:  # kept by an older version as written in the config: spelt as the matcher reads them
        private = tuple(normalize_glob(g) for g in kept["private"])
    except PathRefused:
        return Config(standing_in="closed", loaded_at=loaded_at)
    return Config(
        rules=rules if isinstance(rules, str) and rules else "CLAUDE.md",
        private=private,
        protected=tuple(kept["protected"]),
        standing_in="last_good",
        loaded_at=loaded_at,
    )
