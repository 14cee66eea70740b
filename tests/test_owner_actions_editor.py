"""The owner's move and delete beside an editor that keeps saving into a note they replace or
remove: no line the editor saved is lost. A real editor process, real git, the owner's actions
as the dashboard and the shell run them (file leases on, as `app.main` sets them up)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.services.actions import ActionError
from app.services.move_action import apply_move, plan_move
from app.services.remove_action import apply_remove, plan_remove
from server.write.leases import ignore_lease_breaks

from .conftest import git

# An editor appending a line at a time, as Obsidian's editor saves a note being typed into:
# open for appending, write, close; a pause a typist would make.
EDITOR = """
import random, sys, time
from pathlib import Path
note, seconds, log = Path(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
rng = random.Random(11)
end = time.monotonic() + seconds
k = 0
with log.open("w") as out:
    while time.monotonic() < end:
        with note.open("a", encoding="utf-8") as fh:
            fh.write(f"- typed {k}\\n")
        out.write(f"{k}\\n"); out.flush()
        k += 1
        time.sleep(rng.uniform(0.01, 0.06))
"""

EDITOR_SECONDS = 6.0
LINKING = 40  # notes whose links a rename rewrites: the move writes each, the typed note last


@pytest.fixture
def leases() -> Iterator[None]:
    """File leases for this process's writes, as the dashboard and `vaultwatch mv` take them."""
    previous = signal.getsignal(signal.SIGIO)
    ignore_lease_breaks()
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)


def _lost(root: Path, log: Path, note: str) -> tuple[int, list[str]]:
    """(lines the editor saved, those found neither in the note on disk nor in history)."""
    saved = [k for k in log.read_text().split("\n") if k]
    disk = (root / note).read_text() if (root / note).exists() else ""
    history = git(root, "log", "-p", "--format=")
    lost = [k for k in saved if f"- typed {k}\n" not in disk and f"+- typed {k}\n" not in history]
    return len(saved), lost


@pytest.mark.slow
@pytest.mark.parametrize("action", ["move", "delete"])
def test_an_editor_saving_during_the_owners_move_or_delete_loses_no_line(
    make_vault: Any, leases: None, action: str
) -> None:
    files = {f"n{i:02d}.md": f"# N{i}\n\nSee [[a]].\n" for i in range(LINKING)}
    files |= {"a.md": "# A\n", "z.md": "# Z\n\nSee [[a]].\n\n## Log\n"}
    root = make_vault(files)
    log = root.parent / "editor.log"
    editor = subprocess.Popen(
        [sys.executable, "-c", EDITOR, str(root / "z.md"), str(EDITOR_SECONDS), str(log)]
    )
    outcomes: Counter[str] = Counter()
    name = "a"
    try:
        while editor.poll() is None:  # bounded by the editor's own end
            try:
                if action == "move":
                    other = "b" if name == "a" else "a"
                    # a rename: every [[a]] becomes [[b]], z.md (typed into) among them
                    apply_move(root, plan_move(root, f"{name}.md", f"{other}.md"))
                    name = other
                elif (root / "z.md").exists():
                    apply_remove(root, plan_remove(root, "z.md"))
                outcomes["done"] += 1
            except ActionError as exc:  # refused, said why, nothing changed: try again
                outcomes[str(exc).split(":")[0][:60]] += 1
    finally:
        editor.wait(30)
    assert editor.returncode == 0
    saved, lost = _lost(root, log, "z.md")
    assert saved > 50, saved
    assert not lost, f"{len(lost)} of {saved} typed lines lost: {lost[:10]} ({dict(outcomes)})"
    assert sum(outcomes.values()) > 5, outcomes
    # nothing half-done: no intent, temp file or staged change left behind
    assert not list((root / ".git/vaultwatch").glob("intent*.json"))
    assert not list(root.rglob("*.vaultwatch-tmp"))
    assert git(root, "diff", "--cached", "--name-only") == ""
