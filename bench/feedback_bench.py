"""Feedback figures on a small vault with a long history: adding an item (one compare-and-swap
of the ref), reading every item with its status (answers read from the trailers of the history
since the oldest item), and the answers check a write makes under the write lock. Printed only
(`uv run python -m bench --only feedback`)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.fastimport import fast_import
from server.services.feedback import check_answers
from server.vault import Vault
from server.write.feedback import add, read_all

from .stats import ms

COMMITS = 5_000
ITEMS = (10, 200)


def _repo() -> Path:
    root = Path(tempfile.mkdtemp(prefix="vw-bench-feedback-")) / "vault"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    who = "Owner <owner@example.test>"
    fast_import(
        root,
        [
            (1_760_000_000 + i * 60, who, f"edit {i}", f"n{i % 50}.md", f"# Note\n\n- entry {i}\n")
            for i in range(COMMITS)
        ],
    )
    return root


def run() -> dict[str, Any]:
    root = _repo()
    out: dict[str, Any] = {}
    try:
        made = 0
        for n in ITEMS:
            t0 = time.perf_counter()
            ids = [add(root, f"n{k % 50}.md", f"comment {k}").id for k in range(made, n)]
            per_add = (time.perf_counter() - t0) / max(1, n - made)
            made = n
            t0 = time.perf_counter()
            items = read_all(root)
            read = time.perf_counter() - t0
            vault = Vault(root)
            try:
                _ = vault.policy  # the config loaded, as in a running server
                t0 = time.perf_counter()
                check_answers(vault, ids[-3:])
                check = time.perf_counter() - t0
            finally:
                vault.close()
            print(
                f"  {len(items):>4} items on {COMMITS:,} commits: add {ms(per_add)} each, "
                f"read all {ms(read)}, answers check {ms(check)}"
            )
            out.update({f"add_{n}": per_add, f"read_{n}": read, f"check_{n}": check})
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return out
