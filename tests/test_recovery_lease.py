"""Crash recovery puts a dead writer's file back under a file lease, as a write replaces one
(issue 27: lease-aware opens applied only to the write itself).

The vault lock keeps our other writers out, not the owner's editor. Recovery looked at the
dead writer's copy, saw its bytes, and renamed the old text over it: an editor that had the
note open for writing at that moment wrote its line into the copy just replaced, and the line
was gone. Under a read lease the save in flight is seen (the lease is refused while the note is
open for writing), the note is left as found, and the recovery says so. Failed before."""

from __future__ import annotations

import signal
from typing import Any

from server.write.journal import read_all

from .conftest import git, head
from .crashes import call_until_killed


def test_recovery_never_replaces_a_note_an_editor_is_saving(make_vault: Any) -> None:
    from server.core.state_files import state_dir
    from server.vault import Vault

    root = make_vault({"notes/a.md": "# A\n\n## Log\n- owner\n"})
    before = head(root)
    call_until_killed(
        root,
        "kill:renamed:1",
        [("append_section", {"path": "notes/a.md", "heading": "Log", "content": "- ai, killed"})],
    )
    note = root / "notes/a.md"
    assert "- ai, killed" in note.read_text()  # renamed in, never committed
    assert list(state_dir(root).glob("intent*.json"))
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)  # as the server's main does
    try:
        with note.open("a", encoding="utf-8") as editor:  # a save in flight
            vault = Vault(root)  # a fresh server's start recovers the dead write
            try:
                vault.store.recover()
            finally:
                vault.close()
            editor.write("- the owner's line\n")
    finally:
        signal.signal(signal.SIGIO, previous)
    text = note.read_text()
    assert "- the owner's line" in text, text
    recovered = [e for e in read_all(state_dir(root) / "events.jsonl") if e["kind"] == "recovered"]
    assert recovered and "notes/a.md" in recovered[-1]["kept"], recovered
    assert head(root) == before
    assert not list(state_dir(root).glob("intent*.json"))
    assert git(root, "status", "--porcelain") == " M notes/a.md\n"  # the owner's, to snapshot
