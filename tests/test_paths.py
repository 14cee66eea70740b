"""Every path from the model goes through one function; each broken rule has its own code."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from server.notes.paths import (
    PathPolicy,
    PathRefused,
    matches_any,
    normalize_glob,
    normalize_rel,
)


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# A\n")
    (root / "private").mkdir()
    (root / "private" / "s.md").write_text("secret\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return PathPolicy(root, ("private/**",), (".md",))


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("../outside.md", "path_escape"),
        ("notes/../../outside.md", "path_escape"),
        ("/etc/passwd", "path_absolute"),
        ("C:/Users/x.md", "path_absolute"),
        ("~/notes.md", "path_absolute"),
        (".git/config", "path_hidden"),
        (".obsidian/workspace.md", "path_hidden"),
        ("notes/.trash/old.md", "path_hidden"),
        ("notes\\a.md", "path_separator"),
        ("notes/a\x00.md", "path_nul"),
        ("", "path_empty"),
        ("private/s.md", "path_private"),
        ("Private/S.md", "path_private"),
        ("notes/picture.png", "path_extension"),
    ],
)
def test_refused_with_the_rule_named(policy: PathPolicy, raw: str, code: str) -> None:
    with pytest.raises(PathRefused) as info:
        policy.resolve(raw)
    assert info.value.code == code
    assert info.value.message  # a sentence the model can act on


def test_plain_and_dotted_paths_resolve(policy: PathPolicy) -> None:
    assert policy.resolve("notes/a.md").rel == "notes/a.md"
    assert policy.resolve("./notes//a.md").rel == "notes/a.md"
    assert policy.resolve("notes/a.md").exists()


def test_nfd_input_is_normalised_and_nfd_file_found(policy: PathPolicy) -> None:
    nfd_name = unicodedata.normalize("NFD", "café.md")
    (policy.root / "notes" / nfd_name).write_text("x")
    vp = policy.resolve(unicodedata.normalize("NFC", "notes/café.md"))
    assert vp.rel == unicodedata.normalize("NFC", "notes/café.md")
    assert vp.disk.exists() and vp.disk.name == nfd_name
    # and the NFD spelling from the model lands on the same file
    assert policy.resolve("notes/" + nfd_name).disk == vp.disk


def test_symlink_out_of_the_vault_is_refused(policy: PathPolicy, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("not yours")
    os.symlink(outside, policy.root / "notes" / "link.md")
    with pytest.raises(PathRefused) as info:
        policy.resolve("notes/link.md")
    assert info.value.code == "path_symlink_escape"


def test_symlinked_folder_out_of_the_vault_is_refused(policy: PathPolicy, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_text("x")
    os.symlink(tmp_path / "elsewhere", policy.root / "away")
    with pytest.raises(PathRefused) as info:
        policy.resolve("away/x.md")
    assert info.value.code == "path_symlink_escape"


def test_symlink_into_git_or_private_is_refused(policy: PathPolicy) -> None:
    os.symlink(policy.root / ".git" / "config", policy.root / "notes" / "cfg.md")
    os.symlink(policy.root / "private" / "s.md", policy.root / "notes" / "s.md")
    for raw in ("notes/cfg.md", "notes/s.md"):
        with pytest.raises(PathRefused) as info:
            policy.resolve(raw)
        assert info.value.code == "path_symlink_escape"


def test_symlink_loop_does_not_hang(policy: PathPolicy) -> None:
    os.symlink(policy.root / "notes" / "loop2.md", policy.root / "notes" / "loop1.md")
    os.symlink(policy.root / "notes" / "loop1.md", policy.root / "notes" / "loop2.md")
    vp = policy.resolve("notes/loop1.md")  # resolves (to nothing readable) without hanging
    assert not vp.disk.is_file()


@pytest.mark.parametrize(
    ("rel", "globs", "hit"),
    [
        ("private/a.md", ("private/**",), True),
        ("private", ("private/**",), True),
        ("notes/private/a.md", ("private/**",), False),
        ("notes/private/a.md", ("**/private/**",), True),
        ("journal/2026/x.md", ("journal/*/x.md",), True),
        ("diary.md", ("diary.md",), True),
        ("sub/diary.md", ("diary.md",), True),
        # as in .gitignore: a trailing / is that folder at any depth, an inner / anchors, and a
        # path is covered when any parent folder matches
        ("private/a.md", ("private/",), True),
        ("notes/private/a.md", ("private/",), True),
        ("private/sub/b.md", ("private/*",), True),
        ("work/hr/y.md", ("work/hr/",), True),
        ("other/work/hr/y.md", ("work/hr/",), False),
        ("sub/private/a.md", ("/private/",), False),
        ("privateer/a.md", ("private/",), False),
        # compared case-folded and in NFC
        ("STRASSE/a.md", ("straße/**",), True),
        ("cafe\u0301/b.md", ("café/**",), True),
    ],
)
def test_private_globs(rel: str, globs: tuple[str, ...], hit: bool) -> None:
    assert matches_any(rel, globs) is hit


def test_normalize_rel_is_nfc() -> None:
    assert normalize_rel(unicodedata.normalize("NFD", "é/ü.md")) == unicodedata.normalize(
        "NFC", "é/ü.md"
    )


@pytest.mark.parametrize(
    ("raw", "glob"),
    [
        ("Secret", "Secret"),
        ("./Secret", "Secret"),
        ("Secret\\", "Secret/"),
        ("./Secret/**", "Secret/**"),
        ("//Secret", "/Secret"),
        ("/./Secret/", "/Secret/"),
        ("Secret //sub. ", "Secret/sub"),
        ("Secret.", "Secret"),
        (".\\work\\hr\\", "work/hr/"),
        ("**/x", "**/x"),
        (unicodedata.normalize("NFD", "Café/"), "Café/"),
    ],
)
def test_globs_are_spelt_as_a_path_is(raw: str, glob: str) -> None:
    assert normalize_glob(raw) == glob
    assert normalize_glob(glob) == glob  # once is enough


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("../Secret", "glob_escape"),
        ("Secret/../x", "glob_escape"),
        ("C:\\vault\\Secret", "glob_absolute"),
        ("~/vault/Secret", "glob_absolute"),
        ("Sec\u200bret", "glob_invisible"),
        ("Sec\x07ret", "glob_invisible"),
        (".", "glob_root"),
        ("/", "glob_root"),
        ("  ", "glob_empty"),
    ],
)
def test_globs_that_name_no_folder_of_the_vault_are_refused(raw: str, code: str) -> None:
    with pytest.raises(PathRefused) as info:
        normalize_glob(raw)
    assert info.value.code == code
    # and should one reach the matcher anyway, it covers everything (fail closed)
    assert matches_any("notes/a.md", (raw,))


@pytest.mark.parametrize(
    ("rel", "glob", "hit"),
    [
        ("Secret/a.md", "./Secret", True),
        ("Secret/a.md", "Secret\\", True),
        ("Secret/a.md", "Secret.", True),
        ("Secret./a.md", "Secret", True),  # a folder really named `Secret.` stays covered
        ("Secret./a.md", "Secret.", True),
        ("Secret /a.md", "Secret", True),
        ("Secretive/a.md", "Secret.", False),
        ("notes/Secret/a.md", "./Secret/**", False),
        ("Secret/sub/b.md", "Secret\\sub", True),
        ("Secret/other/b.md", "Secret\\sub", False),
    ],
)
def test_every_spelling_of_a_glob_matches_as_its_plain_spelling(
    rel: str, glob: str, hit: bool
) -> None:
    assert matches_any(rel, (glob,)) is hit
