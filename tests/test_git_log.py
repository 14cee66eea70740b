"""The one `git log` record reader (server/core/gitrepo.py `read_log`): every trailer the server
and the owner's actions write is read back the same by the history, review, stats and the
feedback store, whatever the commit's text holds (commas, a path with a comma, no trailer)."""

from __future__ import annotations

from pathlib import Path

from app.services.history import read_commits
from app.services.stats import _Log
from server.core.git_log import (
    ACTION,
    ANSWERS,
    CLIENT,
    REVERTS,
    REVERTS_PATH,
    TOOL,
    UNDOES,
    commit_message,
    read_log,
)
from server.core.git_run import git
from server.core.gitrepo import ensure_repo

from .conftest import write_files


def _commit(root: Path, rel: str, message: str) -> str:
    write_files(root, {rel: f"# {rel}\n"})
    git(root, "add", "--", rel)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").stdout.decode().strip()


def test_every_reader_reads_the_trailers_alike(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write_files(root, {"a.md": "# A\n"})
    ensure_repo(root)
    ai = _commit(
        root,
        "b, c.md",
        commit_message("append_section: b, c.md", {TOOL: "append_section", CLIENT: "claude/1.0"}),
    )
    answered = _commit(
        root,
        "d.md",
        commit_message("create_doc: d.md", [(TOOL, "create_doc"), (ANSWERS, "fb-abc123")]),
    )
    revert = _commit(
        root,
        "e.md",
        commit_message(
            "revert one file",
            [(ACTION, "revert"), (REVERTS, ai), (REVERTS_PATH, f"{answered} b, c.md")],
        ),
    )
    undo = _commit(
        root, "f.md", commit_message("undo lines", [(ACTION, "undo"), (UNDOES, answered)])
    )
    fields: tuple[str, ...] = ("sha", "parents", "time", "tool", "client", "action", "reverts")
    fields += ("reverts_path", "undoes", "answers", "subject")
    records = read_log(root, fields, "--name-only", "-z", "HEAD")
    assert records is not None
    by = {r.sha: r for r in records}
    assert [r.sha for r in records][:4] == [undo, revert, answered, ai]  # newest first
    assert (by[ai].tool, by[ai].client, by[ai].files) == (
        "append_section",
        "claude/1.0",
        ("b, c.md",),
    )
    assert by[ai].subject == "append_section: b, c.md"
    assert by[answered].answers == ("fb-abc123",) and by[answered].client is None
    assert by[revert].reverts == (ai,) and by[revert].path_reverts == ((answered, "b, c.md"),)
    assert by[revert].took_back == (ai, answered)
    assert by[undo].undoes == (answered,) and by[undo].took_back == (answered,)
    assert by[undo].parents == (revert,) and by[ai].time > 0

    # the readers built on it see the same commits and trailers
    history = {c.sha: c for c in read_commits(root)}
    assert history[revert].reverts == (ai,) and history[ai].tool == "append_section"
    assert history[ai].files == ("b, c.md",) and history[revert].action == "revert"
    rows = {r.commit.sha: r for r in _Log(root, "HEAD").rows()}
    assert rows[revert].targets == (ai, answered) and rows[undo].targets == (answered,)
    assert rows[ai].commit.client == "claude/1.0" and rows[ai].targets == ()


def test_no_history_is_none(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q")
    assert read_log(root, ("sha",), "HEAD") is None  # an unborn branch: no history yet
    assert read_commits(root) == []
