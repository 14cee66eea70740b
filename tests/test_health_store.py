"""Health keeps each note's judgment in `.git/vaultwatch/health.sqlite` (server/services/
health_store.py), so the first check of a new process reads and judges only what changed.
A new process is what each check here stands for: what health keeps in this process is
dropped before it (`new_process`), so every answer comes from the file or from the notes.
The file must never serve what is stale (a note changed, the config changed, a note gone)
and never hold a private note (a note made private leaves it at once)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from server.core.state_files import state_dir
from server.services import health, health_links
from server.vault import Vault

from .health_vault import CONFIG, FILES, LATER

SECRET = "PRIVATE-NOTE-7731"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    files = dict(FILES)
    files["private/salary.md"] = f"# Salary\n\n{SECRET}\n\nSee [[lonely]].\n"
    return make_vault(files)


def new_process() -> None:
    health_links._CACHE.clear()
    health_links._INDEXES.clear()
    health._PROBLEMS.clear()
    health._PROBLEMS_CFG.clear()


def check(root: Path) -> dict[str, Any]:
    new_process()
    v = Vault(root)
    try:
        return health.check(v, include_ignored=True, today=LATER, duplicates=False).to_json()
    finally:
        v.close()


def stored(root: Path) -> dict[str, str]:
    """path -> the row's data, as the file holds it."""
    db = sqlite3.connect(state_dir(root) / "health.sqlite")
    try:
        return dict(db.execute("SELECT path, data FROM notes").fetchall())
    finally:
        db.close()


def problems(out: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["path"], p["code"]) for p in out["problems"]]


def broken(out: dict[str, Any]) -> dict[str, int]:
    return {b["link"]: b["line"] for b in out["broken_links"]}


def test_a_new_process_gets_what_a_first_check_would(vault: Path) -> None:
    first = check(vault)
    rows = stored(vault)
    assert "notes/a.md" in rows and "tasks/t3.md" in rows
    assert check(vault) == first  # served from the file: the same findings, lines, reasons


def test_a_changed_note_is_judged_again(vault: Path) -> None:
    first = check(vault)
    assert ("tasks/t3.md", "missing_field") in problems(first)
    assert broken(first)["[[nothere]]"] == 4
    (vault / "tasks/t3.md").write_text("---\nstatus: done\n---\n# Done\n\nSee [[t1]].\n")
    a = vault / "notes/a.md"
    a.write_text("# A\n\n\n\n" + a.read_text().split("\n", 2)[2])  # two lines more above
    out = check(vault)
    assert ("tasks/t3.md", "missing_field") not in problems(out)
    assert broken(out)["[[nothere]]"] == 6


def test_a_new_config_judges_every_note_again(vault: Path) -> None:
    assert ("tasks/t3.md", "missing_field") in problems(check(vault))
    (vault / "vault.config.yaml").write_text(CONFIG.replace("required: [status]", "required: []"))
    assert problems(check(vault)) == []
    (vault / "vault.config.yaml").write_text(CONFIG)
    assert problems(check(vault)) == [("tasks/t3.md", "missing_field")]


def test_no_private_note_in_the_file_and_one_made_private_leaves_it(vault: Path) -> None:
    check(vault)
    rows = stored(vault)
    assert not any(p.startswith("private/") for p in rows)
    for f in state_dir(vault).glob("health.sqlite*"):  # its -wal file too
        assert SECRET.encode() not in f.read_bytes(), f  # (notes/a.md's links name the folder)
    # notes/ made private: gone from the findings and from the file at the next check
    (vault / "vault.config.yaml").write_text(
        CONFIG.replace('["private/**"]', '["private/**", "notes/"]')
    )
    out = check(vault)
    assert "notes/" not in json.dumps(out)
    assert not any(p.startswith("notes/") for p in stored(vault))


def test_a_note_deleted_or_moved_leaves_the_file(vault: Path) -> None:
    check(vault)
    (vault / "notes/lonely.md").unlink()
    (vault / "tasks/t3.md").rename(vault / "t3-moved.md")
    out = check(vault)
    rows = stored(vault)
    assert "notes/lonely.md" not in rows and "tasks/t3.md" not in rows
    assert "t3-moved.md" in rows
    assert "notes/lonely.md" not in json.dumps(out)


@pytest.mark.parametrize("damage", ["garbage", "rows"])
def test_a_damaged_file_is_judged_again_not_trusted(vault: Path, damage: str) -> None:
    first = check(vault)
    path = state_dir(vault) / "health.sqlite"
    if damage == "garbage":
        path.write_bytes(b"not a database" * 100)
    else:  # a database whose rows are not what health wrote
        db = sqlite3.connect(path)
        db.execute("UPDATE notes SET data = '{\"links\": 5}'")
        db.execute("UPDATE notes SET data = '[1, 2]' WHERE path = 'notes/a.md'")
        db.commit()
        db.close()
    assert check(vault) == first
    assert check(vault) == first  # and written again
