"""One walk of the vault's files (server/notes/walk.py): every caller sees the same files, named
the same way, on a vault with NFD names, symlinked folders and files, hidden folders, .git, a
private folder and a fifo. Where a caller sees more, it is on purpose and asserted as such:
health and the owner's file finder include private files, and the file finder lists every
symlink as it is (to refuse acting through one)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from app.services.vault_files import vault_files
from server.core.gitrepo import ensure_repo
from server.notes.paths import is_note
from server.notes.templates import template_texts
from server.services.health_links import all_files
from server.vault import Vault
from server.write.validate import visible_files

NFD = unicodedata.normalize("NFD", "Café.md")
NFC = unicodedata.normalize("NFC", "Café.md")


@pytest.fixture
def odd_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    outside = tmp_path / "outside.md"
    outside.write_text("# not the vault's\n", encoding="utf-8")
    for rel, text in {
        "notes/a.md": "# A\n",
        NFD: "# Café, written on macOS\n",
        ".hidden/h.md": "# hidden\n",
        "notes/.dot.md": "# dot\n",
        "private/p.md": "# private\n",
        "img.png": "png",
        "vault.config.yaml": "private: [private/]\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    ensure_repo(root)
    (root / ".git" / "x.md").write_text("# in .git\n", encoding="utf-8")
    os.symlink("notes", root / "linked")  # a symlinked folder: never entered
    os.symlink("notes", root / "dirlink.md")  # a symlinked folder named like a note
    os.symlink("notes/a.md", root / "alias.md")  # a symlink to a note inside: a file
    os.symlink(str(outside), root / "out.md")  # out of the vault
    os.symlink(".git/config", root / "tok.md")  # into .git
    os.symlink("private/p.md", root / "pl.md")  # into the private folder
    os.symlink("gone.md", root / "dangling.md")  # to nothing
    os.mkfifo(root / "pipe.md")  # no regular file: opening it would block
    return root


VISIBLE = {"notes/a.md", NFC, "alias.md", "img.png", "vault.config.yaml"}


def test_every_walker_sees_the_same_files(odd_vault: Path) -> None:
    vault = Vault(odd_vault)
    try:
        seen = {
            # the AI's link check (write path): private left out, links by the policy's rule
            "validate": visible_files(vault.policy),
            # the note index: the same files, notes only
            "index": set(vault.entries()) | (VISIBLE - {p for p in VISIBLE if is_note(p)}),
            # health's links: private included on purpose (a link into a private folder must
            # resolve there, to be left out, not be called broken)
            "health": set(all_files(odd_vault)) - {"private/p.md", "pl.md"},
            # the owner's file finder: private included, and every link as it is
            "owner": set(vault_files(odd_vault))
            - {"private/p.md", "pl.md", "out.md", "tok.md", "dangling.md", "dirlink.md", "linked"},
        }
    finally:
        vault.close()
    assert {k: sorted(v) for k, v in seen.items()} == {k: sorted(VISIBLE) for k in seen}


def test_what_a_caller_sees_beyond_the_visible_files_is_on_purpose(odd_vault: Path) -> None:
    assert set(all_files(odd_vault)) == VISIBLE | {"private/p.md", "pl.md"}
    links = {"pl.md", "out.md", "tok.md", "dangling.md", "dirlink.md", "linked"}
    assert set(vault_files(odd_vault)) == VISIBLE | {"private/p.md"} | links
    assert vault_files(odd_vault) == sorted(vault_files(odd_vault), key=_walk_order)


def _walk_order(rel: str) -> tuple[tuple[int, str], ...]:
    # a folder's files before its sub-folders, each in name order (as os.walk sorted)
    parts = rel.split("/")
    return (*((1, p) for p in parts[:-1]), (0, parts[-1]))


@pytest.mark.timeout(60)  # the fifo: a walk that opens it waits for a writer for ever
def test_templates_are_read_by_the_same_rules(odd_vault: Path, tmp_path: Path) -> None:
    folder = odd_vault / "templates"
    folder.mkdir()
    (folder / "t.md").write_text("# template\n", encoding="utf-8")
    os.symlink(str(tmp_path / "outside.md"), folder / "out.md")  # not the vault's text
    os.mkfifo(folder / "pipe.md")  # reading it would hang the health check
    assert template_texts(odd_vault, ("templates",)) == ["# template\n"]
