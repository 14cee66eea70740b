"""An editor that saves by renaming a new file over the note (vim, many IDEs) between the write
rule's check and our rename: the rename is an atomic compare of the inode (server/write/swap.py),
so that save is never replaced unseen (issue 27). Driven at the exact moment by wrapping the
check's read of the note; with a lease and without one, since renaming over a path breaks no
lease."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from .conftest import git, no_lease

TEXT = "# My note\n\nA paragraph the owner wrote.\n\n## Log\n- first\n"


def _rename_save_after_the_check(
    monkeypatch: pytest.MonkeyPatch, note: Path, save: Callable[[bytes], bytes], times: int = 1
) -> list[int]:
    """After the write rule has read the note to check it (`leases._read_whole`, under the
    lease when there is one), an editor writes `save(what it holds)` to a new file and renames
    it over the note, `times` times. Returns the inodes of the saves made."""
    from server.write import leases

    real = leases._read_whole
    made: list[int] = []

    def read_then_an_editor_saves(fd: int) -> Any:
        out = real(fd)
        if len(made) < times and os.fstat(fd).st_ino == os.stat(note).st_ino:
            new = note.parent / f".{note.name}.swp"
            new.write_bytes(save(note.read_bytes()))
            os.replace(new, note)
            made.append(os.stat(note).st_ino)
        return out

    monkeypatch.setattr(leases, "_read_whole", read_then_an_editor_saves)
    return made


@pytest.mark.anyio
@pytest.mark.parametrize("lease", [True, False], ids=["lease", "no lease"])
async def test_an_editors_rename_save_after_the_check_is_never_replaced(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch, lease: bool
) -> None:
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    made = _rename_save_after_the_check(
        monkeypatch, note, lambda b: b.replace(b"owner wrote.", b"owner wrote, and edited.")
    )
    guard: AbstractContextManager[None] = nullcontext() if lease else no_lease()
    with guard:
        async with connect(root) as s:
            out = await s.call("append_section", path="note.md", heading="Log", content="- ai")
    assert made, "the editor's save was never made"
    disk = note.read_text()
    # before: the save was replaced by ours, the edit in no file and no commit
    assert "owner wrote, and edited." in disk, disk
    assert disk.endswith("- first\n- ai\n"), disk
    assert git(root, "show", "HEAD:note.md") == disk
    assert out["commit"] == git(root, "rev-parse", "HEAD").strip()
    # the edit is the owner's snapshot; the AI's commit adds its line only
    ai = git(root, "log", "-1", "--format=", "--numstat", out["commit"]).split()
    assert ai[:3] == ["1", "0", "note.md"], ai
    owners = git(root, "log", "-1", "--format=%s", f"{out['commit']}^")
    assert owners.startswith("snapshot"), owners


@pytest.mark.anyio
async def test_a_note_made_after_the_check_is_never_replaced_by_a_new_one(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """create_doc checked that no note is there; the owner's editor makes one at that path
    before our rename: the AI's create is refused as a conflict, the owner's note stays."""
    from server.write import leases

    root = make_vault({"a.md": "# A\n"})
    note = root / "new.md"
    real = leases._open_if_exists

    def open_then_the_owner_makes_it(path: Path) -> int | None:
        fd = real(path)
        if path == note and fd is None and not note.exists():
            note.write_text("# The owner's own\n")
        return fd

    monkeypatch.setattr(leases, "_open_if_exists", open_then_the_owner_makes_it)
    async with connect(root) as s:
        r = await s.client.call_tool("create_doc", {"path": "new.md", "body": "# AI's\n\ntext"})
    assert note.read_text().startswith("# The owner's own\n"), note.read_text()
    assert "AI's" not in note.read_text()
    assert git(root, "status", "--porcelain").strip() in ("", "?? new.md"), git(
        root, "status", "--porcelain"
    )
    del r  # refused or planned again: either way the owner's note is whole


@pytest.mark.anyio
async def test_a_failed_writes_put_back_never_replaces_an_editors_rename_save(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write fails after its rename (no space, at "index_locked") and puts the note back;
    between the put-back's look at the note and its rename (its temp file being made), the
    owner's editor renames its save over the note. The put-back leaves that save (before: it
    was replaced by the text from before the write, the owner's edit in no file)."""
    import tempfile

    from server.write import store

    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    real_point, real_mkstemp = store.crash_point, tempfile.mkstemp
    failed: list[str] = []
    saved: list[bytes] = []

    def fail_once(step: str) -> None:
        if step == "index_locked" and not failed:
            failed.append(step)
            raise OSError(28, "No space left on device")
        real_point(step)

    def an_editor_saves_then_mkstemp(*a: Any, **kw: Any) -> Any:
        if failed and not saved and "- ai" in note.read_text():  # the put-back's temp file
            new = root / ".note.md.swp"
            data = note.read_bytes().replace(b"- ai\n", b"- the owner's own line\n")
            new.write_bytes(data)
            os.replace(new, note)
            saved.append(data)
        return real_mkstemp(*a, **kw)

    monkeypatch.setattr(store, "crash_point", fail_once)
    monkeypatch.setattr(tempfile, "mkstemp", an_editor_saves_then_mkstemp)
    async with connect(root) as s:
        r = await s.client.call_tool(
            "append_section", {"path": "note.md", "heading": "Log", "content": "- ai"}
        )
    assert r.is_error
    assert saved, "the editor's save was never made"
    assert note.read_bytes() == saved[0], note.read_text()
