"""Histories made in one `git fast-import` run (thousands of commits in a second), for the
benches and the tests that need a long history: the one writer of fast-import's records."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

# (unix time, "Name <email>", message, path, text): one commit changing one file
Commit = tuple[int, str, str, str, str]


def fast_import(
    root: Path, commits: Iterable[Commit], parent: str | None = None, branch: str = "master"
) -> None:
    """`commits` on `branch` of the repository at `root` (after `parent` when given), then
    HEAD on that branch and the working tree checked out as its tip."""
    out = []
    for n, (t, who, msg, path, text) in enumerate(commits):
        data, m = text.encode(), msg.encode()
        after = f"from {parent}\n" if parent and n == 0 else ""
        out.append(
            f"commit refs/heads/{branch}\nauthor {who} {t} +0000\ncommitter {who} {t} +0000\n"
            f"data {len(m)}\n{msg}\n{after}M 100644 inline {path}\ndata {len(data)}\n{text}\n"
        )
    stream = "".join(out).encode()
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "fast-import", "--quiet"], input=stream, check=True)
    subprocess.run([*git, "symbolic-ref", "HEAD", f"refs/heads/{branch}"], check=True)
    subprocess.run([*git, "reset", "-q", "--hard"], check=True)
