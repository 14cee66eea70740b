"""Vaults that take seconds to build (dozens of writes through the real server), built once per
test process and copied into each test's own folder: every test still owns its vault (a copy in
its tmp_path, git history, journal and state folder included), and what it does to it reaches
no other test. A helper module, not a test module: test modules import from here, never from
each other.

A build must depend only on its key: the same files, the same writes, the same environment a
test's autouse fixtures give (git identity, recall off). Anything a test changes after its
copy is made stays in that test."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# key -> the built template, for this test process (each xdist worker builds its own)
_BUILT: dict[str, Path] = {}


def copy_of(
    tmp_path_factory: pytest.TempPathFactory, key: str, dest: Path, build: Callable[[Path], object]
) -> Path:
    """`dest`, a copy of the vault `build(folder)` makes in an empty folder, built the first
    time `key` is asked for in this process. `dest` may exist (it must be empty)."""
    template = _BUILT.get(key)
    if template is None:
        template = tmp_path_factory.mktemp(f"template-{key}") / "vault"
        template.mkdir()
        build(template)
        _BUILT[key] = template
    # copy2 keeps each file's mtime (a pinned one stays pinned); links are copied as links
    shutil.copytree(template, dest, symlinks=True, dirs_exist_ok=True)
    return dest
