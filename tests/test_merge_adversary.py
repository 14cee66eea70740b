"""An adversary of the late-save merge (issue 27): `merge3.merge_lines` property-tested with
random notes, and the store's merge driven through its fault hooks with owner saves the merge
must not mishandle (a deleted section, a renamed heading, the AI's own line typed by the owner,
a final newline taken away). The promises: the owner's text never lost, no AI line in an owner's
commit and no owner line in an AI commit, each AI commit adds exactly the AI's lines, and the
merge refuses (None, the write planned again) rather than decide otherwise."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from server.core.gitrepo import ensure_repo
from server.write.merge3 import adds_lines_only, merge_lines

from .conftest import git, no_lease, tool_text
from .editors import at_steps, disk_full_once_at, editor_in_the_old_copy

# a small alphabet, so lines repeat: the cases a line merge gets wrong
LINES = st.sampled_from(["a", "b", "c", "- ai", "## Log", "", "x" * 3])
EOLS = st.sampled_from([b"\n", b"\r\n"])


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("merge3") / "v"
    root.mkdir()
    ensure_repo(root)
    return root


def _join(lines: list[str], eol: bytes) -> bytes:
    return b"".join(s.encode() + eol for s in lines)


@st.composite
def _edits(draw: Any) -> tuple[bytes, bytes, bytes, bytes]:
    """(base, owner's save, AI's change, AI's inserted lines): the owner adds and deletes lines
    anywhere; the AI adds one block at one place (the only change the write path merges)."""
    eol = draw(EOLS)
    base = draw(st.lists(LINES, max_size=8))
    owner = list(base)
    for _ in range(draw(st.integers(0, 4))):
        if owner and draw(st.booleans()):
            del owner[draw(st.integers(0, len(owner) - 1))]
        else:
            owner.insert(draw(st.integers(0, len(owner))), draw(LINES))
    at = draw(st.integers(0, len(base)))
    block = draw(st.lists(LINES, min_size=1, max_size=3))
    ai = base[:at] + block + base[at:]
    return _join(base, eol), _join(owner, eol), _join(ai, eol), _join(block, eol)


def _inserted(old: bytes, new: bytes) -> Counter[bytes]:
    """The lines `new` adds to `old` (which it must only add to)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    h = 0
    while h < len(a) and a[h] == b[h]:
        h += 1
    return Counter(b[h : h + len(b) - len(a)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_edits())
# found by hypothesis: the owner added an "a" in a run of "a"s and one at the end, the AI one
# before "b"; git's merge took the AI's for one of the owner's and returned the owner's save
@example((b"a\na\na\na\nb\n", b"a\na\na\na\na\nb\na\n", b"a\na\na\na\na\nb\n", b"a\n"))
def test_a_merge_is_the_owners_save_with_exactly_the_ais_lines(
    repo: Path, case: tuple[bytes, bytes, bytes, bytes]
) -> None:
    """Whatever the merge returns, the AI's commit on the owner's snapshot (save -> merge) adds
    exactly the AI's lines, as one block, and changes no line of the owner's; else None."""
    base, owner, ai, block = case
    out = merge_lines(repo, base, owner, ai)
    if out is None:
        return
    if out == owner and owner != base and ai != base and owner != ai:
        pytest.fail(f"the AI's lines vanished into the owner's: {case!r}")
    if ai == base or owner == ai:
        assert out == owner
        return
    assert adds_lines_only(owner, out), (case, out)  # the owner's text, whole, in order
    assert _inserted(owner, out) == Counter(block.splitlines(keepends=True)), (case, out)


@pytest.mark.parametrize(
    ("base", "owner", "ai", "why"),
    [
        # the owner deleted a line elsewhere and typed the very line the AI appends: git's
        # merge took the two for one, so the AI's commit added nothing (empty) and the
        # owner's snapshot held the line the AI wrote
        (b"a\nb\nc\nd\ne\n", b"b\nc\nd\ne\n- ai\n", b"a\nb\nc\nd\ne\n- ai\n", "same line"),
        # the owner's editor took the final newline away while typing: the AI's commit gave
        # the owner's last line its newline back (a change to an owner's line in an AI commit)
        (
            b"# N\n\n## Log\n- first\n",
            b"# N\n\n## Log\n- first\nX",
            b"# N\n\n## Log\n- first\n- ai\n",
            "newline",
        ),
        (b"", b"own", b"ai\n", "newline, empty base"),
    ],
)
def test_what_the_merge_got_wrong(
    repo: Path, base: bytes, owner: bytes, ai: bytes, why: str
) -> None:
    out = merge_lines(repo, base, owner, ai)
    if out is not None:  # refusing is right (the write is planned again on the save)
        assert adds_lines_only(owner, out), (why, out)
        assert _inserted(owner, out) == _inserted(base, ai), (why, out)


def test_the_merge_keeps_what_it_should(repo: Path) -> None:
    """What held: a renamed heading takes the AI's line along; a deleted section refuses; CRLF,
    a BOM and lines that look like git's own conflict markers come through byte for byte."""
    base = b"# N\n\n## Log\n- first\n"
    renamed = base.replace(b"## Log", b"## Journal")
    assert merge_lines(repo, base, renamed, base + b"- ai\n") == renamed + b"- ai\n"
    assert merge_lines(repo, base, b"# N\n\n", base + b"- ai\n") is None
    crlf = b"a\r\nb\r\nc\r\n"
    assert merge_lines(repo, crlf, b"b\r\nc\r\nX\r\n", crlf + b"Y\r\n") == b"b\r\nc\r\nX\r\nY\r\n"
    bom = b"\xef\xbb\xbfa\nb\nc\n"
    assert (
        merge_lines(repo, bom, b"\xef\xbb\xbfb\nc\nX\n", bom + b"Y\n")
        == b"\xef\xbb\xbfb\nc\nX\nY\n"
    )
    marks = b"<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n"
    owner = b"x\n" + marks[: marks.index(b"=")] + marks[marks.index(b"=") :] + b"typed\n"
    assert merge_lines(repo, marks, owner, marks + b"- ai\n") == owner + b"- ai\n"
    long = b"<" * 41 + b"\n"
    assert merge_lines(repo, long + b"a\n", b"x\n" + long + b"a\n", long + b"a\n- ai\n") is None


# ------------------------------------------------------------------------------------------------
# through the store: an owner's save between the plan and the rename (the store's "temps" step),
# no lease (the rule alone decides), as tests/test_owner_text.py drives its editor

TEXT = "# My note\n\nintro\n\n## Log\n- first\n"


# the append a killed writer was making
KILLED = ("append_section", {"path": "note.md", "heading": "Log", "content": "- AI killed"})


def _owner_saves(monkeypatch: pytest.MonkeyPatch, saves: dict[Path, Any]) -> list[str]:
    """At the first attempt's "temps" step, each note in `saves` is saved by truncate-then-write
    with `saves[note](its bytes)`. Returns the steps reached."""
    from server.write import store

    real = store.crash_point
    steps: list[str] = []

    def hook(step: str) -> None:
        steps.append(step)
        if step == "temps" and steps.count("temps") == 1:
            for note, change in saves.items():
                typed = change(note.read_bytes())
                fd = os.open(note, os.O_WRONLY | os.O_TRUNC)
                os.write(fd, typed)
                os.close(fd)
        real(step)

    monkeypatch.setattr(store, "crash_point", hook)
    return steps


def _two_keystrokes(note: Path) -> Callable[[int], None]:
    """An editor's two keystrokes right after the rename: "- keystroke 1" into the old copy
    (`fd`, opened before the rename), "- keystroke 2" by the path, into the AI's copy."""

    def type_(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, b"- keystroke 1\n")  # into the old copy
        with note.open("ab") as fh:  # by the path: into the AI's copy
            fh.write(b"- keystroke 2\n")

    return type_


def _ai_commits_add_exactly(root: Path, lines: list[str], heading: bool = False) -> None:
    """Each AI commit adds exactly one of `lines` (in order, oldest first; after the heading
    "## Log" when `heading`) and removes nothing; no owner commit adds an AI line."""
    shas = git(root, "log", "--reverse", "--author=Claude", "--format=%H").split()
    assert len(shas) == len(lines), git(root, "log", "--format=%an %s")
    for sha, line in zip(shas, lines, strict=True):
        body = git(root, "show", "--format=", "--unified=0", sha).splitlines()
        changed = [ln for ln in body if ln[:1] in ("+", "-") and not ln.startswith(("+++", "---"))]
        want = ["+## Log", f"+{line}"] if heading else [f"+{line}"]
        assert changed == want, git(root, "show", sha)
    for sha in git(root, "log", "--author=Test Owner", "--format=%H").split():
        added = [ln for ln in git(root, "show", "--format=", sha).splitlines() if ln[:1] == "+"]
        assert not [ln for ln in added if "AI" in ln], git(root, "show", sha)


async def _append(connect: Any, root: Path, content: str, path: str = "note.md") -> Any:
    """The AI's append_section to `path`'s Log, as the model calls it: its raw result."""
    with no_lease():
        async with connect(root) as s:
            r = await s.client.call_tool(
                "append_section", {"path": path, "heading": "Log", "content": content}
            )
            return r


@pytest.mark.anyio
@pytest.mark.parametrize("also_deletes", [True, False])
async def test_the_owner_typing_the_ais_line_leaves_the_ai_commit_its_line(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch, also_deletes: bool
) -> None:
    """The owner deletes a line and types, at the end of Log, the very line the AI appends.
    git's merge took the two lines for one: the owner's snapshot held it, and the AI's commit
    added nothing (the note did not change), though the AI was told its line was committed.
    Both wrote it: the owner's save is theirs, the AI's line goes on it (twice in the note)."""
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    # without the deletion the owner's save is byte for byte the AI's planned text
    owners = (TEXT.replace("intro\n", "") if also_deletes else TEXT) + "- AI note\n"
    _owner_saves(monkeypatch, {note: lambda _b: owners.encode()})
    r = await _append(connect, root, "- AI note")
    assert not r.is_error, tool_text(r)
    assert note.read_text() == owners + "- AI note\n"
    assert git(root, "show", "HEAD~1:note.md") == owners  # the owner's snapshot: their save
    assert git(root, "log", "-1", "--format=%an", "HEAD~1").strip() == "Test Owner"
    shas = git(root, "log", "--author=Claude", "--format=%H").split()
    assert len(shas) == 1
    assert git(root, "show", "--numstat", "--format=", shas[0]).split()[:2] == ["1", "0"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "case",
    ["section deleted", "heading renamed", "owner typed at the end", "frontmatter added"],
)
async def test_an_owner_save_during_an_append_loses_nothing(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    owners = {
        "section deleted": TEXT.replace("## Log\n- first\n", ""),
        "heading renamed": TEXT.replace("## Log", "## Journal"),
        "owner typed at the end": TEXT + "- typed\n",
        "frontmatter added": "---\nstatus: private\n---\n" + TEXT,
    }[case]
    _owner_saves(monkeypatch, {note: lambda _b: owners.encode()})
    r = await _append(connect, root, "- AI line")
    disk = note.read_text()
    assert owners in git(root, "log", "-p", "--format=").replace("\n+", "\n") or disk.startswith(
        owners.rstrip("\n")
    ), (case, disk)
    if r.is_error:
        assert "conflict" in tool_text(r), tool_text(r)
        assert disk == owners
        return
    assert disk.count("- AI line\n") == 1, (case, disk)
    assert git(root, "show", "HEAD:note.md") == disk  # nothing of the AI's left uncommitted
    # the owner's save is their snapshot, whole
    snap = git(root, "log", "--author=Test Owner", "--format=%H", "-1").strip()
    assert git(root, "show", f"{snap}:note.md") == owners, case
    # the result the model gets stays under the result budget and shows the AI's line only
    import json

    result = json.loads(tool_text(r))
    assert (
        len(tool_text(r)) <= 40_000 and result["commit"] == git(root, "rev-parse", "HEAD").strip()
    )
    assert [ln for ln in result["diff"].splitlines() if ln[:1] == "+" and ln[:3] != "+++"] == (
        ["+## Log", "+- AI line"] if case == "section deleted" else ["+- AI line"]
    ), result
    # planned again on a note without the section: the AI's append makes the heading anew
    _ai_commits_add_exactly(root, ["- AI line"], heading=case == "section deleted")


@pytest.mark.anyio
async def test_the_result_of_a_merged_write_has_the_hash_of_the_note(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repro: note `TEXT`; the owner saves TEXT + "- typed\n" between the plan and the rename
    (the "temps" step); append_section("- AI line") merges onto it and commits TEXT + "- typed\n"
    + "- AI line\n", yet its result's hash is content_hash(TEXT + "- AI line\n"), a text the
    note never had: a replace_doc pinned to it is refused as a conflict."""
    import json

    from server.notes.note import content_hash

    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    _owner_saves(monkeypatch, {note: lambda b: b + b"- typed\n"})
    r = await _append(connect, root, "- AI line")
    assert not r.is_error, tool_text(r)
    disk = note.read_bytes()
    assert disk == (TEXT + "- typed\n- AI line\n").encode()
    assert git(root, "show", "HEAD:note.md").encode() == disk
    assert len(tool_text(r)) < 4000
    assert json.loads(tool_text(r))["hash"] == content_hash(disk), tool_text(r)


@pytest.mark.anyio
async def test_a_batch_where_one_note_merges_and_one_does_not_is_all_or_nothing(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch appends to a.md and b.md; the owner saves both between the plan and the rename:
    a.md a typed line at the end (merges), b.md an edit of the line the AI appends under (does
    not: git cannot tell whose). The batch is planned again as one: one AI commit with both
    lines, each owner's save whole in their snapshot, nothing half-written."""
    root = make_vault({"a.md": TEXT, "b.md": TEXT})
    a, b = root / "a.md", root / "b.md"
    a_owner = TEXT + "- typed\n"
    b_owner = TEXT.replace("- first\n", "- first, edited\n")
    steps = _owner_saves(
        monkeypatch, {a: lambda _x: a_owner.encode(), b: lambda _x: b_owner.encode()}
    )
    with no_lease():
        async with connect(root) as s:
            ops = [
                {
                    "tool": "append_section",
                    "args": {"path": p, "heading": "Log", "content": f"- AI {p}"},
                }
                for p in ("a.md", "b.md")
            ]
            r = await s.client.call_tool("batch", {"ops": ops})
    assert not r.is_error, tool_text(r)
    assert a.read_text() == a_owner + "- AI a.md\n"
    assert b.read_text() == b_owner + "- AI b.md\n"
    assert git(root, "status", "--porcelain").strip() == ""
    ai = git(root, "log", "--author=Claude", "--format=%H").split()
    assert len(ai) == 1
    body = git(root, "show", "--format=", "--unified=0", ai[0]).splitlines()
    changed = [ln for ln in body if ln[:1] in ("+", "-") and not ln.startswith(("+++", "---"))]
    assert changed == ["+- AI a.md", "+- AI b.md"], body
    snap = git(root, "log", "--author=Test Owner", "--format=%H", "-1").strip()
    assert git(root, "show", f"{snap}:a.md") == a_owner
    assert git(root, "show", f"{snap}:b.md") == b_owner
    assert steps.count("temps") == 2, steps  # b.md did not merge: planned again, once
    assert not list((root / ".git" / "vaultwatch").glob("intent*"))


# ------------------------------------------------------------------------------------------------
# killed after the merge: the intent `_seal_intent` rewrote is what recovery reads


def _killed_then_one_more(
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    fault: str,
    restarted: Callable[[Path], None] | None = None,
) -> None:
    """The AI's KILLED append in a fork of the test process, killed (SIGKILL) at `fault`
    (e.g. "kill:renamed:1"); then the restart, without the test's editor or fault:
    `restarted(root)` if given, and the AI's "- AI after" append (its store recovers first)."""
    from .crashes import ai_write, run_child

    with no_lease():
        status = run_child(root, fault, lambda r: ai_write(r, "append_section", [KILLED]))
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
        monkeypatch.undo()  # the restart: no editor, no fault
        if restarted is not None:
            restarted(root)
        ai_write(
            root,
            "append_section",
            [("append_section", {"path": "note.md", "heading": "Log", "content": "- AI after"})],
        )


@pytest.mark.parametrize("step", ["renamed", "index_locked", "branch_moved", "commit_done"])
def test_killed_after_the_merge_recovery_keeps_the_owners_save(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The owner types a line between the plan and the rename, the AI's append is merged onto
    it, and the writer is killed (SIGKILL, a fork of the test process) at `step`. After the
    restart's recovery and one more write: the owner's line is on disk or committed as theirs,
    the killed write is whole or absent, each AI commit adds only its own line, nothing staged."""
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    owners = TEXT + "- typed by the owner\n"
    _owner_saves(monkeypatch, {note: lambda _b: owners.encode()})
    _killed_then_one_more(monkeypatch, root, f"kill:{step}:1")
    disk = note.read_text()
    history = git(root, "log", "-p", "--format=")
    assert "- typed by the owner\n" in disk, disk
    assert disk.count("- AI after\n") == 1 and disk.count("- AI killed\n") <= 1, disk
    assert git(root, "show", "HEAD:note.md") == disk  # nothing of the AI's uncommitted
    assert git(root, "diff", "--cached", "--name-only").strip() == ""
    assert not (root / ".git" / "index.lock").exists()
    landed = "- AI killed\n" in disk
    # killed before the branch moved: rolled back; after: landed on the owner's save
    assert landed == (step in ("branch_moved", "commit_done")), (step, disk)
    if landed:
        assert disk == owners + "- AI killed\n- AI after\n"
        snap = git(root, "log", "--author=Test Owner", "--format=%H", "-1").strip()
        assert git(root, "show", f"{snap}:note.md") == owners
    _ai_commits_add_exactly(root, (["- AI killed"] if landed else []) + ["- AI after"])
    assert "+- typed by the owner" in history
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


@pytest.mark.parametrize("step", ["index_locked", "branch_moved", "index_locked+recovery"])
def test_killed_after_a_save_into_the_old_copy_was_folded_in(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """An editor opened the note before the rename and saves a keystroke into the old copy
    right after it, then the next one by the path into the AI's copy: `_take_late_saves`
    folds the first in, `_land` merges the second, `_seal_intent` rewrites the intent with
    what is ours on disk and what goes back. Killed then: recovery must give back both
    keystrokes, and the AI's line only if its commit landed."""
    from server.vault import Vault

    from .crashes import run_child

    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    editor_in_the_old_copy(monkeypatch, note, _two_keystrokes(note))

    def recovery_killed_too(root: Path) -> None:  # once it put the note back
        status = run_child(root, "kill:recovered_file:1", lambda r: Vault(r).store.recover())
        assert os.WIFSIGNALED(status), status

    _killed_then_one_more(
        monkeypatch,
        root,
        f"kill:{step.split('+')[0]}:1",
        recovery_killed_too if step.endswith("+recovery") else None,
    )
    disk = note.read_text()
    history = git(root, "log", "-p", "--format=")
    for k in (1, 2):
        assert f"- keystroke {k}\n" in disk, (k, disk)
        assert f"+- keystroke {k}" in history, (k, history)  # snapshotted by the next write
    landed = "- AI killed\n" in disk
    assert landed == (step == "branch_moved"), (step, disk)
    assert disk.count("- AI after\n") == 1, disk
    if not landed:
        assert disk == TEXT + "- keystroke 1\n- keystroke 2\n- AI after\n", disk
    assert git(root, "show", "HEAD:note.md") == disk
    assert git(root, "diff", "--cached", "--name-only").strip() == ""
    _ai_commits_add_exactly(root, (["- AI killed"] if landed else []) + ["- AI after"])


@pytest.mark.anyio
async def test_a_write_failing_after_a_folded_save_takes_its_line_back_out(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, but the write fails (an OSError, e.g. a full disk, at "index_locked") instead
    of being killed: undone, the note must keep both keystrokes and lose the AI's line. The
    taking back met the second keystroke right after the AI's line and git's merge refused,
    so the AI's line stayed on disk uncommitted, and the next write committed it as the
    owner's snapshot (then appended it a second time)."""
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    editor_in_the_old_copy(monkeypatch, note, _two_keystrokes(note))
    at_steps(monkeypatch, disk_full_once_at("index_locked"))
    first = await _append(connect, root, "- AI failed")
    assert first.is_error, tool_text(first)
    disk = note.read_text()
    assert disk == TEXT + "- keystroke 1\n- keystroke 2\n", disk
    again = await _append(connect, root, "- AI after")
    assert not again.is_error, tool_text(again)
    assert note.read_text() == TEXT + "- keystroke 1\n- keystroke 2\n- AI after\n"
    _ai_commits_add_exactly(root, ["- AI after"])


@st.composite
def _taken_back(draw: Any) -> tuple[bytes, bytes, bytes, bytes]:
    """(saved, on, landed, block): `on` is `saved` with the AI's block; `landed` is `on` with
    the owner's later adds and deletes anywhere outside the block."""
    eol = draw(EOLS)
    saved = draw(st.lists(LINES, max_size=8))
    at = draw(st.integers(0, len(saved)))
    block = draw(st.lists(LINES, min_size=1, max_size=3))
    before, after = saved[:at], saved[at:]
    for _ in range(draw(st.integers(0, 3))):
        side = before if draw(st.booleans()) else after
        if side and draw(st.booleans()):
            del side[draw(st.integers(0, len(side) - 1))]
        else:
            side.insert(draw(st.integers(0, len(side))), draw(LINES))
    on = saved[:at] + block + saved[at:]
    return _join(saved, eol), _join(on, eol), _join(before + block + after, eol), _join(block, eol)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_taken_back())
def test_taking_the_ais_lines_back_keeps_every_owner_line(
    case: tuple[bytes, bytes, bytes, bytes],
) -> None:
    """`take_back` (the undo of a write whose note took a save since) returns the note with
    exactly the AI's block removed, every owner line kept, or None."""
    from server.write.merge3 import take_back

    saved, on, landed, block = case
    out = take_back(saved, on, landed)
    if out is None:
        return
    assert adds_lines_only(out, landed), (case, out)
    assert _inserted(out, landed) == Counter(block.splitlines(keepends=True)), (case, out)


@pytest.mark.anyio
@pytest.mark.parametrize("case", ["emptied", "half-way save", "crlf"])
async def test_an_emptied_or_crlf_note_during_an_append(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The owner empties the note (select all, delete, save); or an editor's truncate-then-write
    is caught between its two steps, its write coming 0.3 s later; or the note is CRLF and the
    owner types a CRLF line. Nothing of the owner's lost, the AI's commit adds its line only."""
    import threading

    text = TEXT.replace("\n", "\r\n") if case == "crlf" else TEXT
    root = make_vault({"note.md": text.encode()})
    note = root / "note.md"
    owners = {"emptied": "", "half-way save": TEXT + "- typed\n", "crlf": text + "- typed\r\n"}[
        case
    ]
    from server.write import store

    real = store.crash_point
    steps: list[str] = []
    writers: list[threading.Thread] = []

    def hook(step: str) -> None:
        steps.append(step)
        if step == "temps" and steps.count("temps") == 1:
            fd = os.open(note, os.O_WRONLY | os.O_TRUNC)
            if case == "half-way save":

                def finish() -> None:
                    time.sleep(0.3)  # the editor's write, a moment after its truncate
                    os.write(fd, owners.encode())
                    os.close(fd)

                writers.append(threading.Thread(target=finish))
                writers[-1].start()
            else:
                os.write(fd, owners.encode())
                os.close(fd)
        real(step)

    monkeypatch.setattr(store, "crash_point", hook)
    r = await _append(connect, root, "- AI line")
    for t in writers:
        t.join(10)
    disk = note.read_bytes().decode()

    def show(*args: str) -> str:  # bytes as git holds them (no newline translation)
        out = subprocess.run(["git", "-C", str(root), "show", *args], capture_output=True)
        return out.stdout.decode()

    assert not r.is_error or "conflict" in tool_text(r), tool_text(r)
    if r.is_error:
        assert disk == owners
        return
    assert disk.count("- AI line") == 1, disk
    assert show("HEAD:note.md") == disk
    assert disk.startswith(owners.rstrip("\r\n")) or case == "emptied", disk
    snap = git(root, "log", "--author=Test Owner", "--format=%H", "-1").strip()
    assert show(f"{snap}:note.md") == owners, case
    ai = git(root, "log", "--author=Claude", "--format=%H").split()
    assert len(ai) == 1
    body = show("--format=", "--unified=0", ai[0]).split("\n")
    changed = [ln for ln in body if ln[:1] in ("+", "-") and not ln.startswith(("+++", "---"))]
    eol = "\r" if case == "crlf" else ""
    want = [f"+- AI line{eol}"] if case != "emptied" else ["+## Log", "+- AI line"]
    assert changed == want, body


@pytest.mark.anyio
async def test_an_edit_into_the_old_copy_after_the_commit_is_never_lost(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repro: note TEXT (its Log ends "- first"); an editor opens it for writing before the
    rename ("temps") and, once the commit is made ("branch_moved"), saves into the old copy
    TEXT with "- first" changed to "- first, edited by the owner". The AI appended "- AI line"
    right after "- first": git's merge calls the two adjacent changes a conflict, so
    `_keep_saves_since` logs "does not merge; not kept" and the owner's edit exists nowhere
    (not on disk, not in git) once the editor closes the old copy."""
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"
    owners = TEXT.replace("- first\n", "- first, edited by the owner\n")
    saved: list[int] = []

    def save(fd: int) -> None:
        os.ftruncate(fd, 0)
        saved.append(os.write(fd, owners.encode()))  # into the old copy

    steps = editor_in_the_old_copy(monkeypatch, note, save, at="branch_moved")
    r = await _append(connect, root, "- AI line")
    assert not r.is_error, tool_text(r)
    assert "branch_moved" in steps and saved  # the owner's save was made
    disk = note.read_text()
    history = git(root, "log", "-p", "--format=")
    assert "edited by the owner" in disk or "edited by the owner" in history, disk


@pytest.mark.anyio
async def test_a_failed_write_takes_its_line_back_out_of_a_note_typed_on_since(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repro: note TEXT; the AI appends "- AI failed" to Log; right after the rename
    ("renamed") the owner types "- typed\\n" at the end by the path (into the AI's copy); the
    write then fails (OSError at "index_locked") and is undone. The undo merges "take the AI's
    line out" into the owner's newer save; git calls the two adjacent changes a conflict, and
    `_put_back` leaves the note as it is: TEXT + "- AI failed\\n- typed\\n", the AI's line in
    no commit. The next write snapshots it as the owner's."""
    root = make_vault({"note.md": TEXT})
    note = root / "note.md"

    def typed(step: str, steps: list[str]) -> None:
        if step == "renamed" and steps.count("renamed") == 1:
            with note.open("ab") as fh:
                fh.write(b"- typed\n")

    at_steps(monkeypatch, typed, disk_full_once_at("index_locked"))
    first = await _append(connect, root, "- AI failed")
    assert first.is_error, tool_text(first)
    assert note.read_text() == TEXT + "- typed\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _edits(),
    st.booleans(),
    st.booleans(),
    st.sampled_from([b"", b"\xef\xbb\xbf", b"<<<<<<< ours\n", b"=======\r\n"]),
)
def test_the_invariant_holds_without_final_newlines_with_a_bom_or_marker_lines(
    repo: Path, case: tuple[bytes, bytes, bytes, bytes], cut_owner: bool, cut_ai: bool, head: bytes
) -> None:
    """As above, with the owner's save or the AI's text missing its final newline, a BOM or
    a git-style conflict marker as every side's first line: a merge is the owner's save plus
    exactly the AI's lines, or None."""
    base, owner, ai, _ = case
    base, owner, ai = head + base, head + owner, head + ai
    if cut_owner and owner.endswith(b"\n"):
        owner = owner[:-1]
    if cut_ai and ai.endswith(b"\n"):
        ai = ai[:-1]
    out = merge_lines(repo, base, owner, ai)
    if out is None or ai == base or owner in (base, ai):
        return
    if not adds_lines_only(base, ai):
        return  # the write path never merges such a change (file_write.mergeable)
    assert adds_lines_only(owner, out), (base, owner, ai, out)
    assert _inserted(owner, out) == _inserted(base, ai), (base, owner, ai, out)
