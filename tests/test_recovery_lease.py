"""Crash recovery puts a dead writer's file back under a file lease, as a write replaces one
(issue 27: lease-aware opens applied only to the write itself).

The vault lock keeps our other writers out, not the owner's editor. Recovery looked at the
dead writer's copy, saw its bytes, and renamed the old text over it: an editor that had the
note open for writing at that moment wrote its line into the copy just replaced, and the line
was gone. Under a read lease the save in flight is seen (the lease is refused while the note is
open for writing), the note is left as found, and the recovery says so. Failed before."""

from __future__ import annotations

import os
import signal
from typing import Any

from server.write.journal import read_all

from .conftest import git, head
from .crashes import ai_write, call_until_killed, run_child


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


def test_a_rollback_that_leaves_a_note_as_found_keeps_the_text_before_in_git(
    make_vault: Any,
) -> None:
    """The owner had a pending edit (in no commit); an AI append was killed after its rename;
    before the restart, another program saved the note over with other text. The rollback
    leaves the note as found (that save is newer), and the pending edit was then in no file
    and no commit: lost. It is kept in git under `refs/vaultwatch/kept/`, and the rollback's
    `recovered` event says where."""
    from server.core.state_files import state_dir
    from server.vault import Vault

    root = make_vault({"notes/a.md": "# A\n\n## Log\n- owner\n"})
    note = root / "notes/a.md"
    pending = "# A\n\n## Log\n- owner\n- the owner's pending line\n"
    note.write_text(pending)
    killed = ("append_section", {"path": "notes/a.md", "heading": "Log", "content": "- ai, killed"})
    status = run_child(root, "kill:renamed:1", lambda r: ai_write(r, "append_section", [killed]))
    assert os.WIFSIGNALED(status), status
    assert "- ai, killed" in note.read_text()  # renamed in, never committed
    note.write_text("# A\n\nreplaced whole by another program\n")
    vault = Vault(root)  # a fresh server's start recovers the dead write
    try:
        vault.store.recover()
    finally:
        vault.close()
    assert note.read_text() == "# A\n\nreplaced whole by another program\n"
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/vaultwatch/kept/").split()
    assert [git(root, "cat-file", "blob", ref) for ref in refs] == [pending], refs
    recovered = [e for e in read_all(state_dir(root) / "events.jsonl") if e["kind"] == "recovered"]
    assert recovered[-1]["kept"] == ["notes/a.md"], recovered
    assert f"git show {refs[0]}" in recovered[-1]["message"], recovered[-1]
