"""The owner's file actions on real git repos: move + relink as one commit git sees as a
rename, folder moves, create from a type, delete with backlinks, revert of a delete, and
failures half-way that leave the vault exactly as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.services.actions import ActionError
from app.services.create_action import apply_create, plan_create
from app.services.move_action import apply_move, plan_move
from app.services.remove_action import apply_remove, plan_remove
from app.services.revert import revert

from .conftest import git

CONFIG = """types:
  session:
    folder: sessions
    filename: "{date}-{slug}.md"
    required: [date, kind]
    dates: [date]
    values: {kind: [mock, leetcode]}
"""


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": CONFIG,
            "inbox/2026-12-01-mock-one.md": "---\ndate: 2026-12-01\nkind: mock\n---\n# Mock one\n\nSee [[Plan]] and ![](../img/a%20b.png).\n",
            "plans/Plan.md": "# Plan\n\nBack to [[2026-12-01-mock-one|the mock]].\n",
            "index.md": "- [[2026-12-01-mock-one#Notes]]\n- [m](inbox/2026-12-01-mock-one.md)\n- `[[2026-12-01-mock-one]]`\n",
            "img/a b.png": b"\x89PNG fake",
            "sessions/.keep": "",
        }
    )


def state(root: Path) -> tuple[str, str, dict[str, bytes]]:
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }
    return git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"), files


def test_move_relinks_every_note_in_one_commit_git_sees_as_a_rename(vault: Path) -> None:
    assert plan_move(vault, "plans/Plan.md", "newfolder/").moves == {
        "plans/Plan.md": "newfolder/Plan.md"
    }
    assert plan_move(vault, "plans/Plan.md", "Roadmap").moves == {"plans/Plan.md": "Roadmap.md"}
    plan = plan_move(vault, "inbox/2026-12-01-mock-one.md", "sessions")
    assert plan.moves == {"inbox/2026-12-01-mock-one.md": "sessions/2026-12-01-mock-one.md"}
    assert sorted(plan.edits) == ["index.md"]  # its own links work from the new folder as they are
    assert plan.problems == []  # it fits the session type's folder and filename
    assert "[m](sessions/2026-12-01-mock-one.md)" in plan.edits["index.md"][1]
    sha = apply_move(vault, plan)
    show = git(
        vault,
        "show",
        "-M",
        "--name-status",
        "--format=%an%n%(trailers:key=Vaultwatch-Action,valueonly)",
        sha,
    )
    assert "Vaultwatch-Action" not in show and "move" in show
    assert "R" in show and "inbox/2026-12-01-mock-one.md\tsessions/2026-12-01-mock-one.md" in show
    assert "M\tindex.md" in show
    moved = (vault / "sessions/2026-12-01-mock-one.md").read_text()
    assert "![](../img/a%20b.png)" in moved  # relative from the same depth: unchanged
    assert (vault / "index.md").read_text() == (
        "- [[2026-12-01-mock-one#Notes]]\n- [m](sessions/2026-12-01-mock-one.md)\n- `[[2026-12-01-mock-one]]`\n"
    )
    assert not (vault / "inbox").exists()  # the emptied folder is gone
    assert git(vault, "status", "--porcelain") == ""


def test_a_move_that_breaks_a_type_rule_says_so(vault: Path) -> None:
    plan = plan_move(vault, "inbox/2026-12-01-mock-one.md", "sessions/mock.md")
    assert any("does not fit" in p for p in plan.problems)
    (vault / "sessions/2026-12-02-mock-two.md").write_text(
        "---\ndate: 2026-12-02\nkind: mock\n---\n# Two\n"
    )
    leaving = plan_move(vault, "sessions/2026-12-02-mock-two.md", "archive")
    assert any("no longer a 'session' note" in p for p in leaving.problems)


def test_folder_move(vault: Path) -> None:
    (vault / "plans/sub").mkdir()
    body = "".join(
        f"- point {k} of the deep plan\n" for k in range(8)
    )  # git's rename test is 50% alike
    (vault / "plans/sub/Deep.md").write_text(f"# Deep\n\n[up](../Plan.md) [[plans/Plan]]\n{body}")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "deep")
    plan = plan_move(vault, "plans", "archive/plans")
    assert plan.moves == {
        "plans/Plan.md": "archive/plans/Plan.md",
        "plans/sub/Deep.md": "archive/plans/sub/Deep.md",
    }
    assert (
        plan.edits["archive/plans/sub/Deep.md"][1]
        == f"# Deep\n\n[up](../Plan.md) [[archive/plans/Plan]]\n{body}"
    )
    sha = apply_move(vault, plan)
    names = git(vault, "show", "-M", "--name-status", "--format=", sha).split("\n")
    assert sum(1 for n in names if n.startswith("R")) == 2
    assert not (vault / "plans").exists()


def test_refusals_name_the_problem(vault: Path) -> None:
    with pytest.raises(ActionError, match="exists already"):
        plan_move(vault, "plans/Plan.md", "index.md")
    with pytest.raises(ActionError, match="not a file"):
        plan_move(vault, "nope.md", "x.md")
    with pytest.raises(ActionError, match=r"\.\."):
        plan_move(vault, "plans/Plan.md", "../outside.md")
    with pytest.raises(ActionError, match="into itself"):
        plan_move(vault, "plans", "plans/deeper")


def test_failure_half_way_leaves_the_vault_unchanged(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = plan_move(vault, "inbox/2026-12-01-mock-one.md", "sessions")
    before = state(vault)
    for n in range(2):  # fail at the move, then at the link edit after it
        monkeypatch.setenv("VAULTWATCH_FAULT", f"action_after:{n}")
        with pytest.raises(ActionError, match="undone"):
            apply_move(vault, plan)
        assert state(vault) == before
    monkeypatch.delenv("VAULTWATCH_FAULT")


def test_a_file_that_appears_or_changes_after_the_preview_stops_the_move(vault: Path) -> None:
    plan = plan_move(vault, "inbox/2026-12-01-mock-one.md", "sessions")
    (vault / "sessions/2026-12-01-mock-one.md").write_text("someone else's\n")
    with pytest.raises(ActionError):
        apply_move(vault, plan)
    assert (vault / "inbox/2026-12-01-mock-one.md").exists()
    assert (vault / "sessions/2026-12-01-mock-one.md").read_text() == "someone else's\n"
    (vault / "sessions/2026-12-01-mock-one.md").unlink()
    (vault / "index.md").write_text((vault / "index.md").read_text() + "- owner typing\n")
    with pytest.raises(ActionError, match="changed since the preview"):
        apply_move(vault, plan)
    assert "owner typing" in (vault / "index.md").read_text()


def test_pending_owner_edits_are_snapshotted_first(vault: Path) -> None:
    (vault / "plans/Plan.md").write_text("# Plan\n\nmine, unsaved in git\n")
    plan = plan_move(vault, "plans/Plan.md", "plans/Roadmap.md")
    apply_move(vault, plan)
    fmt = "--format=%s|%(trailers:key=Vaultwatch-Action,valueonly,separator=)"
    log = [line for line in git(vault, "log", "-2", fmt).splitlines() if line]
    assert log == [
        "move: plans/Plan.md → plans/Roadmap.md|move",
        "snapshot: plans/Plan.md|snapshot",
    ]
    assert (vault / "plans/Roadmap.md").read_text() == "# Plan\n\nmine, unsaved in git\n"
    assert "[[Roadmap]]" in (vault / "inbox/2026-12-01-mock-one.md").read_text()


def test_delete_lists_backlinks_commits_git_rm_and_reverts(vault: Path) -> None:
    plan = plan_remove(vault, "inbox/2026-12-01-mock-one.md")
    assert [(s, n) for s, n, _ in plan.backlinks] == [
        ("index.md", 1),
        ("index.md", 2),
        ("plans/Plan.md", 3),
    ]
    sha = apply_remove(vault, plan)
    assert git(
        vault, "show", "--name-status", "--format=%(trailers:key=Vaultwatch-Action,valueonly)", sha
    ).split() == ["remove", "D", "inbox/2026-12-01-mock-one.md"]
    assert not (vault / "inbox/2026-12-01-mock-one.md").exists()
    revert(vault, [sha])
    assert (vault / "inbox/2026-12-01-mock-one.md").read_bytes() == plan.original


def test_create_from_a_type_validates_and_commits(vault: Path) -> None:
    with pytest.raises(ActionError, match="fill in kind"):
        plan_create(vault, "session", {"date": "2026-12-02"}, "Mock two")
    with pytest.raises(ActionError, match="not a date"):
        plan_create(vault, "session", {"date": "2026-13-02", "kind": "mock"}, "Mock two")
    with pytest.raises(ActionError, match="not allowed"):
        plan_create(vault, "session", {"date": "2026-12-02", "kind": "nap"}, "Mock two")
    note = plan_create(vault, "session", {"date": "2026-12-02", "kind": "mock"}, "Mock two")
    assert note.path == "sessions/2026-12-02-mock-two.md"
    sha = apply_create(vault, note)
    assert (
        vault / note.path
    ).read_text() == "---\ndate: 2026-12-02\nkind: mock\n---\n\n# Mock two\n"
    assert git(
        vault, "show", "--name-status", "--format=%(trailers:key=Vaultwatch-Action,valueonly)", sha
    ).split() == ["create", "A", note.path]
    with pytest.raises(ActionError, match="exists already"):
        plan_create(vault, "session", {"date": "2026-12-02", "kind": "mock"}, "Mock two")


def test_the_owners_staged_work_stays_out_of_the_commit(vault: Path) -> None:
    (vault / "draft.md").write_text("# draft\n")
    subprocess.run(["git", "-C", str(vault), "add", "draft.md"], check=True)
    sha = apply_move(vault, plan_move(vault, "plans/Plan.md", "plans/Roadmap.md"))
    assert "draft.md" not in git(vault, "show", "--name-only", "--format=", sha)
    assert git(vault, "status", "--porcelain").strip() == "A  draft.md"


def test_what_is_a_note_follows_the_configs_extensions(make_vault: Any) -> None:
    """`extensions:` decides what a note is for the owner's file actions too (one predicate,
    `server.notes.paths.is_note`): a `.markdown` note's links are found and rewritten, and a note
    moved to a name without an extension keeps its own."""
    root = make_vault(
        {
            "vault.config.yaml": "extensions: [.md, .markdown]\n",
            "a.md": "# A\n",
            "b.markdown": "# B\n\nsee [[a]]\n",
        }
    )
    removing = plan_remove(root, "a.md")
    assert [(src, link) for src, _, link in removing.backlinks] == [("b.markdown", "[[a]]")]
    moving = plan_move(root, "a.md", "notes/c.md")
    assert moving.edits["b.markdown"][1] == "# B\n\nsee [[c]]\n"
    assert plan_move(root, "b.markdown", "d").moves == {"b.markdown": "d.markdown"}


def test_the_new_note_form_says_what_the_write_path_would_say(vault: Path) -> None:
    """plan_create checks with validate.problems, the rule every write is held to: every
    problem of the new note is named at once, in the write path's own words."""
    from server.notes.config import load_config
    from server.notes.note import parse_doc
    from server.write.validate import problems

    fields = {"date": "2026-13-02", "kind": "nap"}
    with pytest.raises(ActionError) as refused:
        plan_create(vault, "session", fields, "Mock two")
    doc = parse_doc("sessions/2026-12-02-x.md", b"---\ndate: 2026-13-02\nkind: nap\n---\n")
    expected = problems(doc, load_config(vault))
    assert [p.code for p in expected] == ["bad_date", "bad_value"]
    assert str(refused.value) == "; ".join(str(p) for p in expected)


def test_moving_a_note_under_git_crypt_never_commits_its_plaintext(make_vault: Any) -> None:
    """The owner's move stored the file's bytes on disk: for a git-crypt note, its plaintext.
    It is now stored as `git add` stores it (the filter's output), as `git mv` would."""
    root = make_vault({"crypt/secret.md": "# Secret\nPLAINTEXT\n", "a.md": "# A\n"})
    (root / ".gitattributes").write_text("crypt/** filter=fake-crypt\n")
    git(root, "config", "filter.fake-crypt.clean", "rev")  # stands in for the encryption
    git(root, "config", "filter.fake-crypt.smudge", "rev")
    git(root, "add", "--renormalize", ".")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "encrypt crypt/")
    assert "PLAINTEXT" not in git(root, "cat-file", "blob", "HEAD:crypt/secret.md")
    sha = apply_move(root, plan_move(root, "crypt/secret.md", "crypt/moved.md"))
    assert "PLAINTEXT" not in git(root, "cat-file", "blob", f"{sha}:crypt/moved.md")
    assert (root / "crypt/moved.md").read_text() == "# Secret\nPLAINTEXT\n"
    assert git(root, "status", "--porcelain") == ""
