"""Health keeps the vault's file list for links between checks in one process and walks the
vault again only when a folder's mtime moved (server/services/health_links.py `_link_index`):
a file that came, went, was renamed, or came in a new folder must change the next check's
broken links as a first check would see them. The folders are dated back first, as in any
vault not edited this very moment (a folder changed moments ago is always walked again)."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Any

from server.services import health
from server.vault import Vault

OLD = 1_600_000_000  # 2020: long settled


def _settle(root: Path) -> None:
    for d, dirs, _ in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        os.utime(d, (OLD, OLD))


def _broken(v: Vault) -> set[str]:
    r = health.check(v, duplicates=False, today=date(2026, 12, 5))
    return {f.link or "" for f in r.findings if f.kind == "broken_link"}


def test_a_file_that_comes_or_goes_changes_the_next_checks_links(make_vault: Any) -> None:
    root = make_vault(
        {
            "notes/a.md": "# A\n\nSee [[b]], [[c]] and [[d]].\n",
            "notes/c.md": "# C\n",
            "other/x.md": "# X\n",
        }
    )
    v = Vault(root)
    try:

        def settled(expect: set[str]) -> None:
            """Folders dated back, then a check: it keeps their mtimes for the next one."""
            _settle(root)
            assert _broken(v) == expect

        settled({"[[b]]", "[[d]]"})
        assert _broken(v) == {"[[b]]", "[[d]]"}  # nothing changed: the list kept is used
        (root / "notes/b.md").write_text("# B\n", "utf-8")  # came
        assert _broken(v) == {"[[d]]"}
        settled({"[[d]]"})
        (root / "notes/c.md").unlink()  # went
        assert _broken(v) == {"[[c]]", "[[d]]"}
        settled({"[[c]]", "[[d]]"})
        (root / "other/x.md").rename(root / "other/d.md")  # renamed, in another folder
        assert _broken(v) == {"[[c]]"}
        settled({"[[c]]"})
        (root / "other/deep").mkdir()  # a new folder: its parent's mtime moves
        (root / "other/deep/c.md").write_text("# C again\n", "utf-8")
        os.utime(root / "other/deep", (OLD, OLD))
        assert _broken(v) == set()
    finally:
        v.close()


def test_a_folder_changed_moments_before_a_check_is_listed_again(make_vault: Any) -> None:
    """A file system clock ticks coarsely: a file added in the same tick as the check's look
    leaves the folder's mtime where it was. Simulated by putting the mtime back: a folder
    whose mtime was that recent at the check is listed again at the next one."""
    root = make_vault({"notes/a.md": "# A\n\nSee [[b]].\n"})
    v = Vault(root)
    try:
        folder = root / "notes"
        os.utime(folder)  # changed just now
        before = folder.stat().st_mtime_ns
        assert _broken(v) == {"[[b]]"}
        (folder / "b.md").write_text("# B\n", "utf-8")
        os.utime(folder, ns=(before, before))  # the same tick: the mtime did not move
        assert _broken(v) == set()
    finally:
        v.close()
