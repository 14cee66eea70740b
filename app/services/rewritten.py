"""AI commits a rebase rewrote: one change under two shas.

The Obsidian Git plugin (or the owner) rebases unpushed commits onto the remote: every AI
commit among them gets a new sha with the same author, author date, message (its trailers)
and patch. Review marks are git notes keyed by sha, so without help they stay on the old
commits and every rebased AI change reads as unreviewed again. Two ways they follow:

- `follow_rebases(root)` sets `notes.rewriteRef` for our notes ref, so git's own rebase (and
  `commit --amend`) copies each note to the new commit (`notes.rewrite.rebase` is on by
  default). Set when marks are written: only then is there anything to copy.
- `twins(...)`: for rewrites git did not record (a clone that had no such config, a
  cherry-pick, a rebase by another tool), a commit is matched to a marked commit no longer
  in history by `change_key`: author, author date, whole message and `git patch-id`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from server.core.git_run import git

NOTES_REF = (
    "refs/notes/vaultwatch-review"  # app.services.review's ref (one name: review imports it)
)


def follow_rebases(root: Path) -> None:
    """Make git copy our review notes to the commits a rebase or amend makes (idempotent)."""
    r = git(root, "config", "--get-all", "notes.rewriteRef", check=False)
    if NOTES_REF in r.stdout.decode("utf-8", "replace").split():
        return
    git(root, "config", "--add", "notes.rewriteRef", NOTES_REF, check=False)


def _existing(root: Path, shas: list[str]) -> list[str]:
    """The shas whose commit is still in the object store (a rewritten one may be pruned)."""
    if not shas:
        return []
    r = git(
        root,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        input=("\n".join(shas) + "\n").encode(),
        check=False,
    )
    return [ln.split()[0] for ln in r.stdout.decode().splitlines() if ln.endswith(" commit")]


def change_keys(root: Path, shas: list[str]) -> dict[str, str]:
    """sha -> what makes it the same change as another commit: author, author date, message
    and patch-id (a commit with no diff has no key). Two git runs for all of `shas`."""
    shas = _existing(root, shas)
    if not shas:
        return {}
    stdin = ("\n".join(shas) + "\n").encode()
    log = git(
        root,
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "--format=%x1e%H%x1f%an <%ae> %ad%x1f%B",
        input=stdin,
        check=False,
    )
    ident: dict[str, str] = {}
    for rec in log.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
        sha, _, rest = rec.partition("\x1f")
        ident[sha] = hashlib.sha1(rest.strip().encode()).hexdigest()
    patches = git(
        root,
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "-p",
        "--no-renames",
        "--format=commit %H",
        input=stdin,
        check=False,
    )
    ids = git(root, "patch-id", "--stable", input=patches.stdout, check=False)
    out = {}
    for line in ids.stdout.decode().splitlines():
        pid, _, sha = line.partition(" ")
        if sha in ident:
            out[sha] = f"{pid} {ident[sha]}"
    return out


def noted(root: Path) -> list[str]:
    """Every commit our notes ref has a review note for."""
    r = git(root, "notes", f"--ref={NOTES_REF}", "list", check=False)
    return [ln.split()[1] for ln in r.stdout.decode().splitlines() if len(ln.split()) == 2]


def twins(
    root: Path, candidates: list[str], history: set[str], marked: list[str] | None = None
) -> dict[str, str]:
    """candidate -> the marked commit (of `marked`, default every noted one), no longer in
    `history` (the shas of HEAD's history), it was rewritten from. Costs nothing when no
    marked commit has left the history."""
    if not candidates:
        return {}
    gone = [s for s in (noted(root) if marked is None else marked) if s not in history]
    if not gone:
        return {}
    keys = change_keys(root, [*gone, *candidates])
    by_key: dict[str, str] = {}
    for s in gone:
        if s in keys:
            by_key.setdefault(keys[s], s)
    return {c: by_key[keys[c]] for c in candidates if keys.get(c) in by_key}


def once_each(root: Path, shas: list[str], ident: dict[str, str]) -> set[str]:
    """The shas of `shas` that repeat an earlier one's change (a rebased AI commit beside its
    original, both in history): `ident` (sha -> author, date and message) picks the few that
    could, and only those are diffed (patch-id)."""
    groups: dict[str, list[str]] = {}
    for s in shas:
        groups.setdefault(ident.get(s, s), []).append(s)
    maybe = [s for g in groups.values() if len(g) > 1 for s in g]
    if not maybe:
        return set()
    keys = change_keys(root, maybe)
    seen: set[str] = set()
    repeats = set()
    for s in shas:
        k = keys.get(s)
        if k is None:
            continue
        if k in seen:
            repeats.add(s)
        seen.add(k)
    return repeats
