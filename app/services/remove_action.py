"""Deleting a file with `git rm`, one commit as the owner (action_tree), revertable like any
commit: the plan names every link to it from another note. No Textual here."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from app.services.action_tree import (
    check_unchanged,
    commit_action,
    open_action,
    why_failed,
)
from app.services.actions import ActionError
from app.services.vault_files import (
    clean_path,
    file_bytes,
    note_texts,
    refuse_links,
    vault_config,
    vault_files,
)
from server.core.git_run import GitError
from server.notes.links import LinkIndex
from server.notes.paths import NOTE_EXTENSIONS
from server.notes.walk import spelled
from server.write.leases import WriteRace
from server.write.recovery import prune_empty_folders


@dataclass
class RemovePlan:
    path: str
    backlinks: list[tuple[str, int, str]]  # (note, line number, the link as written)
    original: bytes


def plan_remove(root: Path, path: str) -> RemovePlan:
    """What deleting `path` would break: every link to it from another note."""
    rel = clean_path(path, "the file to delete")
    refuse_links(root, [rel])
    data = file_bytes(root, rel)
    if data is None or not (root / spelled(root, rel)).is_file():
        raise ActionError(f"{rel} is not a file in the vault")
    files = vault_files(root)
    config = vault_config(root)
    texts = note_texts(root, files, config.extensions if config is not None else NOTE_EXTENSIONS)
    index = LinkIndex(files)
    links = []
    for src, link in index.backlinks(rel, texts):
        if src == rel:
            continue
        text = texts[src]
        links.append((src, text.count("\n", 0, link.start) + 1, text[link.start : link.end]))
    return RemovePlan(rel, links, data)


def apply_remove(root: Path, plan: RemovePlan) -> str:
    """`git rm` the file as one commit by the owner (revertable like any commit)."""
    with open_action(root, [plan.path]) as tree:
        if file_bytes(root, plan.path) is None:
            raise ActionError(f"{plan.path} is gone already")
        check_unchanged(root, {plan.path: plan.original})
        try:
            tree.intend("remove", [(tree.names[plan.path], plan.original, None)])
            tree.remove(plan.path, plan.original)
            sha = commit_action(tree, [tree.names[plan.path]], f"remove: {plan.path}", "remove")
        except (OSError, GitError, WriteRace) as exc:
            tree.rollback()
            raise ActionError(f"the delete failed and was undone: {why_failed(exc)}") from None
        prune_empty_folders(root, {posixpath.dirname(plan.path)})
    return sha
