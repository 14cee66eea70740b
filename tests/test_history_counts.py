"""The timeline's +/- counts are git's with rename detection: a note moved or renamed counts
the lines that changed, not the whole file deleted and added again (`git show --numstat -M`)."""

from __future__ import annotations

from typing import Any

from app.services.history import line_counts

from .conftest import git, head

BODY = "".join(f"line {i} of a long note\n" for i in range(125))


def test_a_pure_rename_counts_no_lines(make_vault: Any) -> None:
    root = make_vault({"资料/很长的参考资料汇编（第一卷）.md": BODY, "README.md": "# R\n"})
    git(root, "mv", "资料/很长的参考资料汇编（第一卷）.md", "资料/汇编第一卷.md")
    git(root, "commit", "-qm", "move: 资料/很长的参考资料汇编（第一卷）.md → 资料/汇编第一卷.md")
    sha = head(root)
    assert line_counts(root, [sha]) == {sha: (0, 0)}


def test_a_move_that_rewrites_a_link_counts_that_line(make_vault: Any) -> None:
    root = make_vault({"a/old.md": BODY, "index.md": "# Index\n\n[[a/old]]\n"})
    (root / "b").mkdir()
    git(root, "mv", "a/old.md", "b/new.md")
    (root / "index.md").write_text("# Index\n\n[[b/new]]\n")
    git(root, "commit", "-qam", "move: a/old.md → b/new.md")
    moved = head(root)
    (root / "index.md").write_text("# Index\n\n[[b/new]]\nmore\n")
    git(root, "commit", "-qam", "an edit after it")
    edited = head(root)
    # the same numbers git shows with -M; several commits through one git process
    assert line_counts(root, [moved, edited]) == {moved: (1, 1), edited: (1, 0)}
    shown = [
        ln.split("\t")
        for ln in git(root, "show", "--numstat", "-M", "--format=", moved).split("\n")
        if ln
    ]
    assert (sum(int(a) for a, _, _ in shown), sum(int(r) for _, r, _ in shown)) == (1, 1)
