"""The owner's git as it really is, not as `git init` leaves it: a global hook that refuses every
commit, a vault that is a worktree or a submodule (`.git` is a file), and line-ending
conversion (core.autocrlf, .gitattributes text/eol). Real repositories in temp
folders, the real server (a subprocess where the start itself is what is tested)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from server.core.gitrepo import ensure_repo
from server.core.state_files import state_dir
from server.write import store_errors
from server.write.journal import Journal, read_all
from server.write.store import Store

from .conftest import REPO, git, write_files
from .servers import client_env

pytestmark = pytest.mark.anyio


def blob(root: Path, rev_path: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(root), "cat-file", "blob", rev_path], capture_output=True, check=True
    ).stdout


def subjects(root: Path, *args: str) -> list[str]:
    """Each commit's subject up to its first " §" (the tool's section), newest first."""
    return [s.split(" §")[0] for s in git(root, "log", "--format=%s", *args).splitlines()]


async def serve_and_append(root: Path, env: dict[str, str], note: str) -> dict[str, Any]:
    """Start the real stdio server on `root`, read `note` and append a line to its Log."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server.protocol.cli", "--vault", str(root)],
        cwd=str(REPO),
        env=env,
    )
    async with Client(params) as c:
        r = await c.call_tool("read_doc", {"path": note})
        assert not r.is_error, r.content
        w = await c.call_tool(
            "append_section", {"path": note, "heading": "Log", "content": "- from the AI"}
        )
        assert not w.is_error, w.content
        assert w.structured_content is not None
        return w.structured_content


# ------------------------------------------------------------------------------------------------
# 1. a global hook that refuses commits


@pytest.mark.slow
async def test_a_global_hook_that_refuses_commits_does_not_stop_the_first_start(
    tmp_path: Path,
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg"):
        (hooks / name).write_text("#!/bin/sh\necho hook says no >&2\nexit 1\n")
        (hooks / name).chmod(0o755)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(
        f"[core]\n\thooksPath = {hooks}\n[user]\n\tname = Hook Owner\n\temail = hook@example.test\n"
    )
    root = tmp_path / "v"
    write_files(root, {"a.md": "# A\n\n## Log\n- one\n"})
    out = await serve_and_append(root, client_env(GIT_CONFIG_GLOBAL=str(gitconfig)), "a.md")
    assert out["commit"]
    assert subjects(root)[-1] == "import"
    # the import is the owner's, by the identity their config gives (hooks off, nothing else)
    assert git(root, "log", "--format=%an <%ae>", "--reverse").splitlines()[0] == (
        "Hook Owner <hook@example.test>"
    )
    assert blob(root, "HEAD:a.md").endswith(b"- one\n- from the AI\n")
    # the owner's own commits still run their hook: only ours skip it
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(gitconfig)}
    r = subprocess.run(
        ["git", "-C", str(root), "commit", "--allow-empty", "-qm", "owner"],
        capture_output=True,
        env=env,
    )
    assert r.returncode != 0 and b"hook says no" in r.stderr


def test_ensure_repo_skips_hooks_but_keeps_the_owners_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (hooks / "pre-commit").chmod(0o755)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[core]\n\thooksPath = {hooks}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    root = tmp_path / "v"
    write_files(root, {"a.md": "# A\n"})
    assert ensure_repo(root) is True
    assert git(root, "log", "--format=%an|%s") == "Test Owner|import\n"
    assert ensure_repo(root) is False  # a restart makes no second import


# ------------------------------------------------------------------------------------------------
# 2. `.git` is a file: a worktree, a submodule


@pytest.fixture
def worktree(tmp_path: Path) -> tuple[Path, Path]:
    main = tmp_path / "main"
    write_files(main, {"a.md": "# A\n\n## Log\n- one\n", "b.md": "# B\n"})
    ensure_repo(main)
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wtb")
    return main, tmp_path / "wt"


@pytest.mark.slow
async def test_the_server_starts_and_writes_in_a_worktree(worktree: tuple[Path, Path]) -> None:
    main, wt = worktree
    assert (wt / ".git").is_file()
    main_head = git(main, "rev-parse", "HEAD")
    (wt / "a.md").write_bytes(b"# A\n\n## Log\n- one\n- owner typed\n")
    out = await serve_and_append(wt, client_env(), "a.md")
    assert out["commit"]
    assert subjects(wt) == ["append_section: a.md", "snapshot: a.md", "import"]
    assert blob(wt, "wtb:a.md") == b"# A\n\n## Log\n- one\n- owner typed\n- from the AI\n"
    assert git(wt, "status", "--porcelain") == ""  # the worktree's own index follows
    assert git(main, "rev-parse", "HEAD") == main_head  # the main checkout is untouched
    assert git(main, "status", "--porcelain") == ""
    # state per checkout: in the worktree's git dir, never in the main checkout's
    wt_git = Path(git(wt, "rev-parse", "--absolute-git-dir").strip())
    assert wt_git == main / ".git" / "worktrees" / "wt"
    kinds = [e["kind"] for e in read_all(wt_git / "vaultwatch" / "events.jsonl")]
    assert "commit" in kinds and "server_started" in kinds
    assert not (main / ".git" / "vaultwatch" / "events.jsonl").exists()


async def test_a_worktree_keeps_its_state_and_locks_in_its_own_git_dir(
    connect: Any, worktree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the stopped rebase never ends: the write's wait for git (20 s) shortened, the refusal is
    # the same
    monkeypatch.setattr(store_errors, "GIT_WAIT_S", 1.0)
    main, wt = worktree
    wt_git = main / ".git" / "worktrees" / "wt"
    assert state_dir(wt) == wt_git / "vaultwatch"
    assert state_dir(main) == main / ".git" / "vaultwatch"
    assert ensure_repo(wt) is False  # a repository already: no `git init` inside the worktree
    async with connect(wt) as s:
        await s.call("append_section", path="a.md", heading="Log", content="- ai")
        # a rebase stopped in this checkout (its marker in the per-worktree git dir) stops
        # writes here, and only here
        (wt_git / "rebase-merge").mkdir()
        err = await s.error("append_section", path="a.md", heading="Log", content="- ai 2")
        assert "rebase" in err
        (wt_git / "rebase-merge").rmdir()
    assert blob(wt, "wtb:a.md").endswith(b"- one\n- ai\n")
    assert blob(main, "HEAD:a.md") == b"# A\n\n## Log\n- one\n"
    assert git(wt, "status", "--porcelain") == ""


async def test_a_worktree_keeps_the_last_good_private_rules(
    connect: Any, worktree: tuple[Path, Path]
) -> None:
    """A broken config falls back on the private rules of the last one that loaded. They were
    kept under `<root>/.git/vaultwatch`, which in a worktree is under a file: never kept, so a
    broken config there closed every note (closed, but the assistant could read nothing)."""
    _, wt = worktree
    (wt / "vault.config.yaml").write_text("private: ['secret/']\n")
    (wt / "secret").mkdir()
    (wt / "secret/diary.md").write_text("# Diary\nZEBRAFISH\n")
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", "private folder")
    async with connect(wt) as s:
        assert not s.vault.config_errors
    assert (state_dir(wt) / "last_good_rules.json").exists()
    (wt / "vault.config.yaml").write_text("private: [[\n")  # broken: the kept rules stand in
    async with connect(wt) as s:
        assert s.vault.config_errors
        listed = await s.call("list_docs", limit=50)
        assert {d["path"] for d in listed["docs"]} == {"a.md", "b.md"}, listed
        err = await s.error("read_doc", path="secret/diary.md")
        assert "ZEBRAFISH" not in err and "private" in err, err


async def test_a_submodule_vault_works(connect: Any, tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    write_files(origin, {"a.md": "# A\n\n## Log\n- one\n"})
    ensure_repo(origin)
    sup = tmp_path / "super"
    sup.mkdir()
    git(sup, "init", "-q")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "notes")
    root = sup / "notes"
    assert (root / ".git").is_file()
    assert state_dir(root) == sup / ".git" / "modules" / "notes" / "vaultwatch"
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Log", content="- ai")
    assert blob(root, "HEAD:a.md").endswith(b"- one\n- ai\n")
    assert git(root, "status", "--porcelain") == ""
    assert not (sup / ".git" / "vaultwatch").exists()


# ------------------------------------------------------------------------------------------------
# 3. git stores other bytes than the file's (line endings, a clean filter)

CRLF_NOTE = b"# Log\r\nline1\r\nline2\r\n"


def converting_vault(make_vault: Any, setting: str) -> Path:
    """A vault whose a.md has CRLF on disk and is clean to git, stored as git converts it."""
    root = make_vault({"a.md": CRLF_NOTE, "lf.md": "# Log\nlf\n"})
    if setting == "autocrlf":
        git(root, "config", "core.autocrlf", "true")
    elif setting == "text=auto":
        (root / ".gitattributes").write_text("* text=auto eol=crlf\n")
    else:
        assert setting == "eol=crlf", setting
        (root / ".gitattributes").write_text("*.md text eol=crlf\n")
    git(root, "rm", "-q", "--cached", "-r", ".")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "renorm")
    assert git(root, "status", "--porcelain") == ""  # clean, as git sees it
    assert blob(root, "HEAD:a.md") != CRLF_NOTE  # git stores other bytes than the file's
    return root


# (a note under a clean filter is not written by the assistant at all: see test_owner_text's
# test_a_note_under_a_git_filter_is_never_committed_by_the_assistant)
SETTINGS = ["autocrlf", "text=auto", "eol=crlf"]


@pytest.mark.parametrize("setting", SETTINGS)
async def test_a_file_git_calls_clean_is_not_snapshotted(
    connect: Any, make_vault: Any, setting: str
) -> None:
    root = converting_vault(make_vault, setting)
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Log", content="ai line")
        await s.call("append_section", path="lf.md", heading="Log", content="ai line")
    assert subjects(root)[:3] == ["append_section: lf.md", "append_section: a.md", "renorm"]
    assert git(root, "log", "--format=%H", "--grep=Vaultwatch-Action: snapshot") == ""
    # the owner's working file keeps its line endings, with the AI's line in the same style
    assert (root / "a.md").read_bytes() == b"# Log\r\nline1\r\nline2\r\n\r\nai line\r\n"
    # the AI's commit holds the bytes written, as every commit of ours (see store._hash_files)
    assert blob(root, "HEAD~1:a.md") == (root / "a.md").read_bytes()
    if setting in ("autocrlf", "text=auto"):
        # git keeps a blob committed with CRLF as it is: clean. (With an explicit eol git
        # would store other bytes than the commit's: it shows the file modified, and the next
        # write, finding HEAD's bytes on disk, snapshots nothing.)
        assert git(root, "status", "--porcelain") == ""
    events = read_all(state_dir(root) / "events.jsonl")
    assert [e.get("tool") for e in events if e["kind"] == "commit"] == ["append_section"] * 2


def test_the_dashboards_snapshot_leaves_a_file_git_calls_clean(make_vault: Any) -> None:
    root = converting_vault(make_vault, "autocrlf")
    head = git(root, "rev-parse", "HEAD")
    store = Store(root, Journal(state_dir(root) / "events.jsonl", client="dashboard"))
    with store.locked():
        blobs = store.snapshot(["a.md", "lf.md"])  # as a dashboard action calls it
    assert git(root, "rev-parse", "HEAD") == head
    assert blobs["a.md"] == git(root, "rev-parse", "HEAD:a.md").strip()


@pytest.mark.parametrize("setting", SETTINGS)
async def test_the_owners_real_edits_are_still_snapshotted_byte_for_byte(
    connect: Any, make_vault: Any, setting: str
) -> None:
    root = converting_vault(make_vault, setting)
    typed = b"# Log\r\nline1 edited by the owner\r\nline2\r\n"
    (root / "a.md").write_bytes(typed)
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Log", content="ai line")
    assert subjects(root)[:3] == ["append_section: a.md", "snapshot: a.md", "renorm"]
    assert blob(root, "HEAD~1:a.md") == typed  # the owner's exact bytes, as the store keeps them
    assert (root / "a.md").read_bytes() == typed + b"\r\nai line\r\n"


async def test_a_crlf_blob_committed_before_autocrlf_is_still_clean(
    connect: Any, make_vault: Any
) -> None:
    # CRLF committed as it is, autocrlf switched on later without renormalising: git keeps
    # calling the file clean (the index holds CRLF), and so does the write path
    root = make_vault({"a.md": CRLF_NOTE})
    git(root, "config", "core.autocrlf", "true")
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Log", content="ai line")
    assert subjects(root) == ["append_section: a.md", "import"]
    assert blob(root, "HEAD:a.md") == CRLF_NOTE + b"\r\nai line\r\n"
