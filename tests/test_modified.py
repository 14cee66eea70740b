"""A note's "modified" date: its last commit, or its mtime when the file is not as committed.

After the first pass, a note that changed on disk is compared with HEAD by blob id, without
running git (issue 15: a `git status` per reconcile took the search bench's reconcile from 0.9
to 13.5 ms); where git would store other bytes than the file's (autocrlf, attributes, clean
filters), `git status` still decides.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from server.vault import Vault

OLD = "2025-01-05T10:00:00+00:00"
LATER = "2025-12-01T10:00:00+00:00"


def _git(root: Path, *args: str, when: str = OLD) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)


def _repo(
    tmp_path: Path, files: Mapping[str, str | bytes], config: dict[str, str] | None = None
) -> Path:
    root = tmp_path / "v"
    root.mkdir()
    _git(root, "init", "-q")
    for key, value in (config or {}).items():
        _git(root, "config", key, value)
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "import")
    return root


def _day(vault: Vault, path: str) -> str:
    return (
        dt.datetime.fromtimestamp(vault.entries()[path].modified_ns / 1e9, dt.UTC)
        .date()
        .isoformat()
    )


TODAY = dt.date.today().isoformat()


@pytest.fixture
def git_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every git process started (the real one runs; this only writes down its arguments)."""
    runs: list[list[str]] = []
    real = subprocess.run

    def counting(cmd: Any, *a: Any, **kw: Any) -> Any:
        if isinstance(cmd, list) and cmd and cmd[0] == "git":
            runs.append([str(c) for c in cmd])
        return real(cmd, *a, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    yield runs


def _touch_later(path: Path, data: bytes) -> None:
    """Write `data` with an mtime surely past the index's last look (a coarse clock could
    otherwise hide the change)."""
    path.write_bytes(data)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_a_changed_note_is_dated_without_a_git_process_per_change(
    tmp_path: Path, git_runs: list[list[str]]
) -> None:
    notes = {f"n{i}.md": f"# N{i}\n\nbody {i}\n" for i in range(5)}
    root = _repo(tmp_path, notes)
    vault = Vault(root)
    try:
        assert {p: _day(vault, p) for p in notes} == dict.fromkeys(notes, "2025-01-05")
        # the first change after a HEAD reads HEAD's tree once, for any number of notes
        del git_runs[:]
        for i in range(3):
            _touch_later(root / f"n{i}.md", f"# N{i}\n\nedited\n".encode())
        assert [_day(vault, f"n{i}.md") for i in range(3)] == [TODAY] * 3
        assert len(git_runs) <= 2, git_runs
        # then a reconcile of one changed note runs no git at all, nor re-dates every note
        del git_runs[:]
        version = vault.modified.version
        _touch_later(root / "n3.md", b"# N3\n\nedited\n")
        assert _day(vault, "n3.md") == TODAY
        _touch_later(root / "n0.md", notes["n0.md"].encode())  # as committed again
        assert _day(vault, "n0.md") == "2025-01-05"
        assert _day(vault, "n3.md") == TODAY and _day(vault, "n1.md") == TODAY
        assert git_runs == []
        assert vault.modified.version == version
    finally:
        vault.close()


def test_a_head_that_moves_is_followed(tmp_path: Path, git_runs: list[list[str]]) -> None:
    root = _repo(tmp_path, {"a.md": "# A\n", "b.md": "# B\n"})
    vault = Vault(root)
    try:
        _touch_later(root / "b.md", b"# B\n\nmine\n")
        assert _day(vault, "b.md") == TODAY
        (root / "new.md").write_bytes(b"# New\n")  # untracked: its mtime
        assert _day(vault, "new.md") == TODAY
        # the owner commits in a terminal: HEAD moves forward, both take the commit's time
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "owner", when=LATER)
        assert _day(vault, "b.md") == "2025-12-01" and _day(vault, "new.md") == "2025-12-01"
        assert not any("status" in r for r in git_runs[-3:]), git_runs[-3:]
        # an edit after the move is compared with the new HEAD, with no git
        del git_runs[:]
        _touch_later(root / "b.md", b"# B\n")  # as in the first commit, not as in HEAD
        assert _day(vault, "b.md") == TODAY
        _touch_later(root / "b.md", b"# B\n\nmine\n")
        assert _day(vault, "b.md") == "2025-12-01"
        assert git_runs == []
        # HEAD jumps back (not forward): the files are as the owner left them, not as HEAD has
        _git(root, "reset", "-q", "--soft", "HEAD~1")
        assert _day(vault, "b.md") == TODAY and _day(vault, "new.md") == TODAY
        assert _day(vault, "a.md") == "2025-01-05"
        _touch_later(root / "b.md", b"# B\n")
        assert _day(vault, "b.md") == "2025-01-05"
    finally:
        vault.close()


CRLF = b"# a\r\n\r\nline\r\n"
FILTERS: dict[str, tuple[dict[str, str | bytes], dict[str, str]]] = {
    # CRLF on disk, LF in the blob
    "autocrlf": ({"a.md": CRLF}, {"core.autocrlf": "true"}),
    "eol attribute": ({"a.md": CRLF, ".gitattributes": "*.md text eol=crlf\n"}, {}),
}


@pytest.mark.parametrize("case", list(FILTERS))
def test_git_filters_leave_the_decision_to_git(tmp_path: Path, case: str) -> None:
    """A file git stores as other bytes than it has on disk (CRLF under autocrlf or eol=crlf) is
    as committed to git: git status decides, not the blob id of its bytes."""
    files, config = FILTERS[case]
    root = _repo(tmp_path, files, config)
    vault = Vault(root)
    try:
        assert _day(vault, "a.md") == "2025-01-05"
        _touch_later(root / "b.md", b"x")  # a first change: HEAD's tree is read, if ever
        vault.entries()
        _touch_later(root / "a.md", (root / "a.md").read_bytes())  # saved again, unchanged
        assert _day(vault, "a.md") == "2025-01-05"
        _touch_later(root / "a.md", b"# a\n\nother line\n")
        assert _day(vault, "a.md") == TODAY
    finally:
        vault.close()


def test_a_clean_filter_is_never_run_to_date_a_note(tmp_path: Path) -> None:
    """A clean filter is a program the vault's git config names: the server never runs one
    (issue 27). A note under a filter is as committed while git's index says its stat is
    unchanged (the owner's git refreshed it, running the filter itself); once its stat changes
    only the filter could tell, so it is dated by its mtime: lower case on disk, upper case in
    the blob."""
    marker = tmp_path / "filter-ran"
    root = _repo(
        tmp_path,
        {"a.md": "# a\n\nline\n", ".gitattributes": "*.md filter=upper\n"},
        {"filter.upper.clean": f"sh -c 'echo ran >> {marker}; tr a-z A-Z'"},
    )
    old = dt.datetime.fromisoformat(OLD).timestamp()
    os.utime(root / "a.md", (old, old))  # saved long ago: not racily clean in the index
    _git(root, "update-index", "--refresh")  # the owner's git, with the owner's filter
    marker.unlink()
    vault = Vault(root)
    try:
        assert _day(vault, "a.md") == "2025-01-05"
        _touch_later(root / "a.md", b"# a\n\nline\n")  # saved again, unchanged
        assert _day(vault, "a.md") == TODAY
        _touch_later(root / "a.md", b"# a\n\nother line\n")
        assert _day(vault, "a.md") == TODAY
    finally:
        vault.close()
    assert not marker.exists(), "the server ran the vault's clean filter"


def test_the_same_bytes_with_other_line_ends_are_a_change_without_filters(tmp_path: Path) -> None:
    """The other side of the test above: with no filter, CRLF bytes are not as committed."""
    root = _repo(tmp_path, {"a.md": "# a\n\nline\n"})
    vault = Vault(root)
    try:
        _touch_later(root / "a.md", b"# a\r\n\r\nline\r\n")
        assert _day(vault, "a.md") == TODAY
    finally:
        vault.close()


def test_a_symlinked_note_is_its_link(tmp_path: Path) -> None:
    """git stores a symlink's target path, never the target's text: editing the target leaves
    the link as committed; pointing it elsewhere does not."""
    root = _repo(tmp_path, {"real.md": "# Real\n", "other.md": "# Other\n"})
    (root / "link.md").symlink_to("real.md")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "link")
    vault = Vault(root)
    try:
        if "link.md" not in vault.entries():
            pytest.skip("symlinked notes are not listed here")
        assert _day(vault, "link.md") == "2025-01-05"
        _touch_later(root / "real.md", b"# Real\n\nedited\n")
        assert _day(vault, "real.md") == TODAY
        assert _day(vault, "link.md") == "2025-01-05"
        (root / "link.md").unlink()
        (root / "link.md").symlink_to("other.md")
        os.utime(
            root / "link.md",
            ns=(0, (root / "real.md").stat().st_mtime_ns + 2_000_000_000),
            follow_symlinks=False,
        )
        _touch_later(root / "other.md", b"# Other\n")
        assert _day(vault, "link.md") == TODAY
    finally:
        vault.close()


def test_a_note_named_in_nfd_on_disk(tmp_path: Path, git_runs: list[list[str]]) -> None:
    """A name made on macOS is NFD on disk and in git; the note's path is NFC."""
    nfd = unicodedata.normalize("NFD", "café.md")
    root = _repo(tmp_path, {nfd: "# Café\n", "plain.md": "# P\n"})
    vault = Vault(root)
    try:
        assert _day(vault, "café.md") == "2025-01-05"
        _touch_later(root / nfd, b"# Caf\xc3\xa9\n\nedited\n")
        assert _day(vault, "café.md") == TODAY
        _touch_later(root / nfd, "# Café\n".encode())
        assert _day(vault, "café.md") == "2025-01-05"
    finally:
        vault.close()


def _primed(vault: Vault) -> None:
    """Start the first status early (as `Vault.entries` does) and wait until it has run."""
    import time

    vault.modified.prime()
    deadline = time.monotonic() + 30
    while vault.modified._primed_at is None:  # the thread's own answer, nothing else to wait on
        assert time.monotonic() < deadline, "prime's git status never finished (30 s)"
        time.sleep(0.01)


def test_the_first_status_runs_beside_the_walk_and_once(
    tmp_path: Path, git_runs: list[list[str]]
) -> None:
    """The first `entries()` starts `git status` before walking the notes and uses its answer:
    one full status, not a second after the walk."""
    root = _repo(tmp_path, {"a.md": "# A\n", "b.md": "# B\n"})
    (root / "b.md").write_text("# B changed\n")
    v = Vault(root)
    try:
        assert _day(v, "a.md") == "2025-01-05"
        assert _day(v, "b.md") == TODAY  # changed since the commit: its mtime
        assert sum("status" in r for r in git_runs) == 1
    finally:
        v.close()


def test_a_note_changed_after_the_early_status_is_compared_again(tmp_path: Path) -> None:
    """A note saved after the early status looked at it, but before the walk read it: the
    status says clean, the index has the new text. It must be dated by its mtime, not by
    the commit of text it no longer has."""
    root = _repo(tmp_path, {"a.md": "# A\n", "b.md": "# B\n"})
    v = Vault(root)
    try:
        _primed(v)
        _touch_later(root / "a.md", b"# A edited after the status\n")
        assert _day(v, "a.md") == TODAY
        assert _day(v, "b.md") == "2025-01-05"
    finally:
        v.close()


def test_a_commit_after_the_early_status_is_followed(tmp_path: Path) -> None:
    """HEAD moved after the early status: its answer was for the old HEAD, and is not used."""
    root = _repo(tmp_path, {"a.md": "# A\n", "b.md": "# B\n"})
    (root / "a.md").write_text("# A draft\n")
    v = Vault(root)
    try:
        _primed(v)
        _git(root, "commit", "-qam", "draft", when=LATER)  # a.md clean again, at LATER
        assert _day(v, "a.md") == "2025-12-01"
        assert _day(v, "b.md") == "2025-01-05"
    finally:
        v.close()
