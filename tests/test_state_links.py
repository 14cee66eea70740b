"""Nothing of ours is written or read through a symbolic link in the state folder (issue 27).

`.git/vaultwatch/` holds the journal, the locks, the commit index, temp files, the search
index, the token, the review and stats state. A link planted there (a synced or unzipped
`.git`, or put there after the server started) made the server, the shell commands or the
dashboard write our state into the file it names, or read another file as ours. Every opener
checks the folders from the state folder down and opens the file with O_NOFOLLOW; a refusal
says "symbolic link". Each test failed on the code before its fix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import git, head, tool_text, vaultwatch_here

pytestmark = pytest.mark.anyio

OUTSIDE_TEXT = "the owner's own file, not vaultwatch's\n"

# Every file and folder an opener of ours makes or reads in the state folder: the journal,
# locks (the write lock, git's index lock marker, the marks lock, the resident's and its
# starters'), the private
# commit index and its marker, the copy of git's index, SQLite files with their WAL, caches,
# the review and context state, the port and token, the resident's log, the temp folder.
STATE_FILES = [
    "events.jsonl",
    "write.lock",
    "index.lock",
    "index.next",
    "commit.index",
    "commit.index.head",
    "modified.json",
    "last_good_rules.json",
    "index.sqlite",
    "index.sqlite-wal",
    "parsed.sqlite",
    "parsed.sqlite-shm",
    "health.sqlite",
    "health.sqlite-wal",
    "review.lock",
    "review-listed",
    "stats-lines.json",
    "context-reviewed.json",
    "port",
    "token",
    "resident.lock",
    "resident.start.lock",
    "tmp",
]


# Opened to be created: a link to a file that does not exist yet is followed by O_CREAT and the
# file made where it points (a lock or log opened through a link leaves no other trace).
CREATED = [
    "events.jsonl",
    "write.lock",
    "index.lock",
    "index.sqlite",
    "parsed.sqlite",
    "health.sqlite",
    "review.lock",
    "review-listed",
    "port",
    "token",
    "resident.lock",
    "resident.start.lock",
]
CASES = [(name, False) for name in STATE_FILES] + [(name, True) for name in CREATED]


def outside_file(tmp_path: Path, name: str, dangling: bool) -> Path:
    out = tmp_path / "outside" / name
    out.parent.mkdir(exist_ok=True)
    if not dangling:
        out.write_text(OUTSIDE_TEXT)
        out.chmod(0o644)
    return out


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `folder`: its bytes and mode."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


async def everything(connect: Any, root: Path) -> list[str]:
    """The AI reading and writing, the owner's shell commands, and what the dashboard opens
    (its port and token files, the journal it follows, the resident's log): every opener of a
    state file. The refusals, as said."""
    from app.services.supervisor import ServerSupervisor, remember_port, remembered_port
    from server.core.state_files import state_dir
    from server.protocol.http_serve import read_or_create_token
    from server.protocol.resident import take_vault
    from server.protocol.resident_socket import Unusable
    from server.protocol.resident_start import start_lock
    from server.write.journal import JournalReader, read_all

    said: list[str] = []
    try:
        async with connect(root) as s:
            calls: list[tuple[str, dict[str, str]]] = [
                ("list_docs", {}),
                ("search_text", {"query": "owner"}),
                ("read_doc", {"path": "notes/a.md"}),
                ("append_section", {"path": "notes/a.md", "heading": "Log", "content": "- ai"}),
                ("create_doc", {"path": "notes/new.md", "body": "# New\n"}),
            ]
            for tool, call in calls:
                r = await s.client.call_tool(tool, call)
                if r.is_error:
                    said.append(f"{tool}: {tool_text(r)}")
    except OSError as exc:  # a server does not start on a state folder that is a link
        said.append(f"server start: {exc}")
    for args in (
        ["review"],
        ["review", "--mark-reviewed"],
        ["health"],
        ["stats"],
        ["context", "--mark-reviewed"],
        ["mv", "notes/b.md", "notes/c.md"],
    ):
        r = vaultwatch_here(root, *args)
        if r.returncode != 0:
            said.append(f"{' '.join(args)}: {r.stderr.strip()}")
    sdir = state_dir(root)

    def resident_locks() -> None:  # what a starting relay and resident take
        with start_lock(sdir):
            fd, sock = take_vault(sdir)
            sock.close()
            os.close(fd)

    for step in (
        lambda: remember_port(root, 4242),
        lambda: remembered_port(root),
        lambda: read_or_create_token(sdir / "token"),
        lambda: ServerSupervisor(root).token,
        lambda: JournalReader(sdir / "events.jsonl").poll(),
        lambda: read_all(sdir / "events.jsonl", {"commit"}),
        resident_locks,
    ):
        try:
            step()
        except (OSError, ValueError, SystemExit, Unusable) as exc:
            said.append(f"dashboard: {exc}")
    return said


@pytest.mark.parametrize(
    ("name", "dangling"), CASES, ids=[f"{n}{'-dangling' if d else ''}" for n, d in CASES]
)
async def test_a_state_file_that_is_a_link_is_never_written_or_read_through(
    connect: Any, make_vault: Any, tmp_path: Path, name: str, dangling: bool
) -> None:
    from server.core.state_files import state_dir

    root = make_vault({"notes/a.md": "# A\n\n## Log\n- owner\n", "notes/b.md": "# B\n"})
    sdir = state_dir(root)
    async with connect(root) as s:  # the state folder as a running server leaves it
        await s.call("append_section", path="notes/a.md", heading="Log", content="- first")
    target = outside_file(tmp_path, name, dangling) if name != "tmp" else tmp_path / "outside"
    target.parent.mkdir(exist_ok=True)
    link = sdir / name
    if link.is_dir() and not link.is_symlink():
        for p in link.iterdir():
            p.unlink()
        link.rmdir()
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    before = snapshot(tmp_path / "outside")
    said = await everything(connect, root)
    assert snapshot(tmp_path / "outside") == before, said
    for words in said:  # a refusal names the link
        assert "symbolic link" in words or "nothing was" in words, said
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


async def test_temp_files_never_go_through_a_linked_tmp_folder(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    """A note's temp file is made in `.git/vaultwatch/tmp/`: with that folder a link it went
    where the link pointed (then renamed into the vault: no trace left there). Now it goes
    beside the note, as on a filesystem the state folder is not on."""
    from server.core.state_files import state_dir
    from server.write.temp_files import temp_dir

    root = make_vault({"notes/a.md": "# A\n\n## Log\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tmp = state_dir(root) / "tmp"
    if tmp.exists():
        tmp.rmdir()
    tmp.symlink_to(elsewhere)
    assert temp_dir(root, root / "notes/a.md") == root / "notes"
    async with connect(root) as s:
        assert (await s.call("append_section", path="notes/a.md", heading="Log", content="- x"))[
            "commit"
        ]
    assert list(elsewhere.iterdir()) == []


async def test_a_state_folder_made_a_link_after_the_start_is_refused(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    """The server runs; the state folder is moved away and a link put in its place. Writes
    are refused, saying why; reads go on; nothing is created in or appended to the folder the
    link names (the files the running server holds open stay its own, wherever they moved)."""
    from server.core.state_files import state_dir

    root = make_vault({"notes/a.md": "# A\n\n## Log\n- owner\n", "notes/b.md": "# B\n"})
    sdir = state_dir(root)
    moved = tmp_path / "state-elsewhere"
    before_sha = head(root)
    async with connect(root) as s:
        await s.call("append_section", path="notes/a.md", heading="Log", content="- first")
        sdir.rename(moved)
        sdir.symlink_to(moved)
        names = sorted(p.name for p in moved.iterdir())
        journal = (moved / "events.jsonl").read_bytes()
        err = await s.error("append_section", path="notes/a.md", heading="Log", content="- b")
        assert "symbolic link" in err, err
        await s.call("read_doc", path="notes/a.md")
        await s.call("list_docs")
    said = await everything(connect, root)
    assert sorted(p.name for p in moved.iterdir()) == names, said
    assert (moved / "events.jsonl").read_bytes() == journal
    assert said and all("symbolic link" in w for w in said), said
    assert len(git(root, "rev-list", f"{before_sha}..HEAD").split()) == 1  # the first write only
    assert os.path.islink(sdir)
