"""What the owner does from the dashboard, as the owner: revert an AI commit (or several).

Every action takes the vault's write lock (the AI's servers may be writing at that moment),
commits the owner's pending edits to the files involved first, and on any failure leaves the
vault exactly as it was.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from server.gitrepo import human_identity, identity_env, state_dir, write_lock
from server.journal import Journal
from server.store import NO_SIGN, Store

from .history import Commit, read_commits


class ActionError(Exception):
    pass


@dataclass
class RevertConflict(Exception):
    """The revert did not apply cleanly: later commits changed the same lines. The vault was
    restored; `blockers` are the later commits in the way, newest first."""

    targets: list[Commit]
    blockers: list[Commit]

    def __str__(self) -> str:
        names = ", ".join(f"{c.short} {c.subject!r}" for c in self.blockers) or "(none found)"
        return f"later commits changed the same lines: {names}"


def _git(root: Path, *args: str, env: dict[str, str] | None = None,
         input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, input=input,
                          env={**os.environ, **(env or {})})  # fmt: skip


def revert(root: Path, shas: list[str]) -> str:
    """Revert these commits (applied newest first) as one commit by the owner, with the
    trailer `Vaultwatch-Action: revert`. Returns the new commit's sha; raises RevertConflict
    (vault unchanged) when later commits are in the way."""
    if not shas:
        raise ActionError("nothing to revert")
    history = read_commits(root)
    order = {c.sha: i for i, c in enumerate(history)}  # 0 = newest
    targets = []
    for s in shas:
        full = next((c for c in history if c.sha.startswith(s)), None)
        if full is None:
            raise ActionError(f"{s} is not a commit on this branch")
        targets.append(full)
    targets.sort(key=lambda c: order[c.sha])  # newest first: undo in reverse order of making
    journal = Journal(state_dir(root) / "events.jsonl", client="dashboard")
    store = Store(root, journal)
    files = sorted({f for c in targets for f in c.files})
    with write_lock(root):
        store.check_repo()
        store.snapshot(files)
        r = _git(root, "revert", "--no-commit", "--no-edit", *[c.sha for c in targets])
        if r.returncode != 0:
            _git(root, "revert", "--abort")
            _git(root, "reset", "-q", "--", *files)  # in case the abort left anything staged
            oldest = max(order[c.sha] for c in targets)
            wanted = {c.sha for c in targets}
            blockers = [
                c for c in history[:oldest] if c.sha not in wanted and set(c.files) & set(files)
            ]
            raise RevertConflict(targets, blockers)
        name, email = human_identity(root)
        if len(targets) == 1:
            t = targets[0]
            message = f'Revert "{t.subject}"\n\nThis reverts commit {t.sha}.\n'
        else:
            lines = "".join(f"This reverts commit {t.sha} ({t.subject}).\n" for t in targets)
            message = f"Revert {len(targets)} commits\n\n{lines}"
        message += "\nVaultwatch-Action: revert\n"
        c = _git(root, *NO_SIGN, "commit", "-q", "--no-verify", "-F", "-",
                 env=identity_env(name, email), input=message.encode())  # fmt: skip
        if c.returncode != 0:
            # Only the files the revert touched, whose owner edits the snapshot committed.
            _git(root, "reset", "-q", "--", *files)
            _git(root, "checkout", "-q", "--", *files)
            raise ActionError(f"the revert could not be committed: {c.stderr.decode().strip()}")
        sha = _git(root, "rev-parse", "HEAD").stdout.decode().strip()
    return sha
