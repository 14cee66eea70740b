"""Properties of the edits, byte preservation, concurrent writers, and crash recovery."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.gitrepo import ensure_repo
from server.notes.note import parse_doc
from server.services.writes import Rejected, apply
from server.vault import Vault
from server.write.edit_base import EditError
from server.write.edits import append_section, edit_text
from server.write.frontmatter_edits import update_frontmatter
from server.write.journal import read_all

from .conftest import REPO

line_text = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n#-`"), max_size=30
)


@settings(max_examples=200, deadline=None)
@given(st.lists(line_text, min_size=1, max_size=12), st.data())
def test_edit_text_changes_only_the_match(lines: list[str], data: Any) -> None:
    text = "\n".join(lines) + "\n"
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    old = text[i:j]
    new = data.draw(line_text)
    overlapping = sum(1 for k in range(len(text)) if text.startswith(old, k))
    if overlapping != 1:
        with pytest.raises(EditError):
            edit_text(text, old, new)
        return
    assert edit_text(text, old, new) == text[:i] + new + text[j:]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(line_text, st.sampled_from(["## Log", "## Other", "# Top", "", "- item"])),
        max_size=15,
    ),
    line_text.filter(lambda s: s.strip()),
)
def test_append_section_only_inserts(lines: list[str], content: str) -> None:
    text = "\n".join(lines) + ("\n" if lines else "")
    doc = parse_doc("n.md", text.encode())
    try:
        out = append_section(text, doc, "Log", content)
    except EditError:
        return  # ambiguous heading: refused, which is allowed
    block = content.strip("\r\n") + "\n"
    if any(h.text == "Log" for h in doc.headings):
        # the original bytes, with the block inserted at one place (and a newline added to an
        # unterminated last line), set apart from the section's last block by a blank line
        # unless it is list items added to a list
        inserted = [
            (i, len(b))
            for b in (block, "\n" + block)
            for i in range(len(out))
            if out.startswith(b, i)
        ]
        assert any(out[:i] + out[i + n :] in (text, text + "\n") for i, n in inserted)
    else:
        assert out.startswith(text.rstrip("\n")) and out.endswith("## Log\n" + block)
        assert out[: len(text.rstrip("\n"))] == text.rstrip("\n")


OBSIDIAN_FM = """---
# Obsidian-style frontmatter, written by hand
title: "Mock: system design"
aliases:
  - mock-sd
  - 模拟面试
date: '2026-10-02'
created: 2026-10-02T09:14
score: 3   # out of 5
tags: [system-design, "area/backend"]
links: "[[Other Note]]"
nested:
  a: 1
  b: [x, y]
---
# Body stays
"""


@pytest.mark.parametrize(
    ("set_", "unset", "add", "remove", "changed"),
    [
        ({"status": "open"}, [], [], [], set()),
        ({"score": 4}, [], [], [], {"score"}),
        ({}, ["links"], [], [], {"links"}),
        ({}, [], ["crdt"], ["area/backend"], {"tags"}),
        ({"aliases": ["one", "two"]}, [], [], [], {"aliases"}),
        ({"nested": {"a": 2}}, ["created"], [], [], {"nested", "created"}),
    ],
)
def test_update_frontmatter_keeps_every_other_line_byte_identical(
    set_: dict[str, Any], unset: list[str], add: list[str], remove: list[str], changed: set[str]
) -> None:
    for nl in ("\n", "\r\n"):
        text = OBSIDIAN_FM.replace("\n", nl)
        out = update_frontmatter(text, set_, unset, add, remove)
        owner = {}  # line -> key it belongs to
        key = None
        for line in OBSIDIAN_FM.split("\n")[1:-3]:
            if line and not line.startswith((" ", "-", "#")):
                key = line.split(":")[0]
            owner[line] = key if line and not line.startswith("#") else None
        kept = [ln for ln in OBSIDIAN_FM.split("\n") if owner.get(ln) not in changed]
        out_lines = out.split(nl)
        it = iter(out_lines)
        assert all(any(ln == o for o in it) for ln in kept), out  # same lines, same order
        assert out.endswith("---" + nl + "# Body stays" + nl)
        doc = parse_doc("x.md", out.encode())
        assert not doc.problems
        for k, v in set_.items():
            assert doc.frontmatter[k] == v
        for k in unset:
            assert k not in doc.frontmatter


def test_broken_yaml_is_refused_not_overwritten() -> None:
    text = "---\ntitle: [oops\n---\nbody\n"
    with pytest.raises(EditError) as info:
        update_frontmatter(text, {"status": "x"})
    assert info.value.code == "broken_yaml"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kind=st.text(max_size=12), tag=st.text(max_size=12))
def test_a_rejected_write_leaves_file_and_git_untouched(
    make_vault: Any, kind: str, tag: str
) -> None:
    vroot = _prop_vault(make_vault)
    vault = Vault(vroot)
    note = vroot / "sessions" / "s.md"
    before, head = note.read_bytes(), _git(vroot, "rev-parse", "HEAD")
    ops = [
        (
            "update_frontmatter",
            {
                "path": "sessions/s.md",
                "set": {"kind": kind},
                "add_tags": [tag] if tag.strip() else None,
            },
        )
    ]
    try:
        res = apply(vault, vault.store, "update_frontmatter", "test", ops)
    except Rejected:
        assert note.read_bytes() == before and _git(vroot, "rev-parse", "HEAD") == head
        assert _git(vroot, "status", "--porcelain") == ""
    else:
        # accepted: the value is one the type allows (or empty), and it is exactly what landed
        assert kind in ("mock", "leetcode", "")
        fm = parse_doc("s.md", note.read_bytes()).frontmatter
        assert fm["kind"] == kind or (kind == "mock" and res.commit is None)
        assert _git(vroot, "status", "--porcelain") == ""
    vault.close()


_PROP_VAULTS: dict[int, Path] = {}


def _prop_vault(make_vault: Any) -> Path:
    key = id(make_vault)
    if key not in _PROP_VAULTS:
        _PROP_VAULTS[key] = make_vault(
            {
                "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\ntypes:\n  session:\n"
                "    folder: sessions\n    values: {kind: [mock, leetcode]}\n",
                "tags.yaml": "- crdt\n",
                "sessions/s.md": "---\nkind: mock\ntags: [crdt]\n---\n# S\n",
            },
            name=f"prop{len(_PROP_VAULTS)}",
        )
    root = _PROP_VAULTS[key]
    _git(root, "checkout", "-q", "--", ".")
    return root


# ------------------------------------------------------------------------------------------------
# several writers, crashes


def _writer(root: str, who: int, n: int) -> None:
    vault = Vault(Path(root))
    for i in range(n):
        ops = [
            ("append_section", {"path": "shared.md", "heading": "Log", "content": f"- w{who} #{i}"})
        ]
        apply(vault, vault.store, "append_section", f"proc-{who}", ops)
        ops = [("create_doc", {"path": f"own/{who}-{i}.md", "body": f"# W{who} {i}\n"})]
        apply(vault, vault.store, "create_doc", f"proc-{who}", ops)
    vault.close()


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing(make_vault: Any) -> None:
    root = make_vault({"shared.md": "# Shared\n\n## Log\n"})
    ctx = multiprocessing.get_context("spawn")
    n = 25
    procs = [ctx.Process(target=_writer, args=(str(root), w, n)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    text = (root / "shared.md").read_text()
    for w in (1, 2):
        mine = [ln for ln in text.splitlines() if ln.startswith(f"- w{w} ")]
        assert mine == [f"- w{w} #{i}" for i in range(n)]  # every write, in each writer's order
    subjects = _git(root, "log", "--format=%an|%s").splitlines()
    assert len([s for s in subjects if s.startswith("Claude|")]) == 4 * n
    for sha in _git(root, "rev-list", "HEAD").split()[:-1]:
        assert len(_git(root, "show", "--name-only", "--format=", sha).split()) == 1
    assert _git(root, "status", "--porcelain") == ""
    assert (
        subprocess.run(["git", "-C", str(root), "fsck", "--strict"], capture_output=True).returncode
        == 0
    )


CRASH_SCRIPT = """
import sys
from pathlib import Path
from server.vault import Vault
from server.services.writes import apply
vault = Vault(Path(sys.argv[1]))
ops = [("append_section", {"path": f"n{i}.md", "heading": "Log", "content": "- batch line"}) for i in range(6)]
ops.append(("create_doc", {"path": "brand-new.md", "body": "# New\\n"}))
apply(vault, vault.store, "batch", "crash-test", ops)
"""


@pytest.mark.slow
@pytest.mark.parametrize("after", [1, 3, 7])
def test_killed_mid_batch_is_rolled_back_on_restart(make_vault: Any, after: int) -> None:
    files = {f"n{i}.md": f"# N{i}\n\n## Log\n- before\n" for i in range(6)}
    root = make_vault(files)
    (root / "n2.md").write_text("# N2\n\n## Log\n- before\n- human edit, not yet committed\n")
    env = {**os.environ, "VAULTWATCH_FAULT": f"after_write:{after}"}
    r = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(root)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == -9, r.stderr  # killed with SIGKILL inside the batch
    assert list((root / ".git/vaultwatch").glob("intent*.json"))
    head_before = _git(root, "log", "--format=%s")
    vault = Vault(root)
    restored = vault.store.recover()
    assert len(restored) == after
    for i in range(6):
        assert "batch line" not in (root / f"n{i}.md").read_text()
    assert not (root / "brand-new.md").exists()
    # the human's edit is put back as it was: its snapshot lands in the same move of the branch
    # as the batch's commit, or (killed before it) not at all, and the edit stays theirs, pending
    assert "human edit" in (root / "n2.md").read_text()
    assert _git(root, "log", "--format=%s") == head_before  # no AI commit landed
    assert _git(root, "status", "--porcelain") == " M n2.md\n"
    ev = [e for e in read_all(root / ".git/vaultwatch/events.jsonl") if e["kind"] == "recovered"]
    assert len(ev) == 1 and sorted(ev[0]["paths"]) == sorted(restored)
    assert not list((root / ".git/vaultwatch").glob("intent*.json"))
    assert subprocess.run(["git", "-C", str(root), "fsck"], capture_output=True).returncode == 0
    vault.close()


def test_recovery_leaves_files_the_human_changed_since(make_vault: Any) -> None:
    root = make_vault({"a.md": "# A\n\n## Log\n"})
    env = {**os.environ, "VAULTWATCH_FAULT": "after_write:1"}
    script = CRASH_SCRIPT.replace('f"n{i}.md"', '"a.md"').replace("range(6)", "range(1)")
    r = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == -9
    (root / "a.md").write_text("# A\nthe human typed over it\n")
    vault = Vault(root)
    assert vault.store.recover() == []
    assert (root / "a.md").read_text() == "# A\nthe human typed over it\n"
    ev = [e for e in read_all(root / ".git/vaultwatch/events.jsonl") if e["kind"] == "recovered"][
        -1
    ]
    assert ev["kept"] == ["a.md"]
    vault.close()


def test_ensure_repo_is_idempotent(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    assert ensure_repo(tmp_path) is True
    assert ensure_repo(tmp_path) is False
