"""The owner's feedback reaches the AI (issue 31), through the real MCP client and the shell:
added with `vaultwatch feedback add`, shown first by get_context, answered by a write that names
it (`Vaultwatch-Answers`), closed by the owner. Kept in git beside the review marks: it survives
a rebase and a second writer; a private note's feedback is never shown to the AI."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from server.core.git_log import ANSWERS
from server.vault import Vault
from server.write import feedback as store
from server.write.feedback import FEEDBACK_REF

from .conftest import git, head, vaultwatch_cli

pytestmark = pytest.mark.anyio

CONFIG = (
    "private: ['private/**']\n"
    "context:\n  - {title: Recent, recent: 5}\n"
    "limits: {result_chars: 6000}\n"
)
FILES = {
    "vault.config.yaml": CONFIG,
    "notes/plan.md": "# Plan\n\n## Log\n- first step\n- second step\n",
    "notes/other.md": "# Other\nplain\n",
    "private/salary.md": "# Salary\nZEBRAFISH figure\n",
}


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return vaultwatch_cli(root, "feedback", *args)


def add(root: Path, *args: str) -> str:
    r = cli(root, "add", *args)
    assert r.returncode == 0, r.stderr
    fid = r.stdout.strip()
    assert store._ID.fullmatch(fid), r.stdout
    return fid


def listed(root: Path, *flags: str) -> dict[str, dict[str, Any]]:
    r = cli(root, "list", "--json", *flags)
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)["feedback"]
    for i in items:
        assert {"id", "path", "text", "status", "commit", "created", "answered_by"} <= set(i)
    return {i["id"]: i for i in items}


def feedback_block(ctx: dict[str, Any]) -> dict[str, Any] | None:
    blocks = [b for b in ctx["blocks"] if b["kind"] == "feedback"]
    return blocks[0] if blocks else None


async def test_added_shown_answered_then_closed(make_vault: Any, connect: Any) -> None:
    root = make_vault(FILES)
    fid = add(root, "notes/plan.md", "-m", "Say why the second step comes second", "--line", "5")
    async with connect(root) as s:
        ctx = await s.call("get_context")
        block = ctx["blocks"][0]  # first, before the rules and notes
        assert block["kind"] == "feedback"
        (item,) = block["items"]
        assert item["id"] == fid and item["path"] == "notes/plan.md"
        assert item["lines"] == "5" and item["about"] == "- second step"
        assert item["text"] == "Say why the second step comes second"

        res = await s.call(
            "append_section",
            path="notes/plan.md",
            heading="Log",
            content="- why: it needs the first",
            answers=[fid],
        )
        assert res["answered"] == [fid]
        msg = git(root, "log", "-1", "--format=%B")
        assert f"{ANSWERS}: {fid}" in msg
        # answered: no longer open for the AI, answered by that commit for the owner
        assert feedback_block(await s.call("get_context")) is None
    item = listed(root)[fid]
    assert item["status"] == "answered" and item["answered_by"] == res["commit"]

    r = cli(root, "close", fid)
    assert r.returncode == 0, r.stderr
    assert fid not in listed(root)
    assert listed(root, "--all")[fid]["status"] == "closed"
    # the owner reopens: the earlier answer no longer counts, the AI sees it again
    assert cli(root, "reopen", fid).returncode == 0
    assert listed(root)[fid]["status"] == "open"
    async with connect(root) as s:
        block = feedback_block(await s.call("get_context"))
        assert block is not None and block["items"][0]["id"] == fid


async def test_unknown_or_closed_answers_are_refused_and_nothing_written(
    make_vault: Any, connect: Any
) -> None:
    root = make_vault(FILES)
    fid = add(root, "notes/plan.md", "-m", "shorter please")
    assert cli(root, "close", fid).returncode == 0
    before = head(root)
    async with connect(root) as s:
        err = await s.error(
            "append_section",
            path="notes/plan.md",
            heading="Log",
            content="x",
            answers=["fb-000000"],
        )
        assert "fb-000000" in err and "get_context" in err and "Nothing was written" in err
        err = await s.error(
            "batch",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "notes/plan.md", "heading": "Log", "content": "y"},
                }
            ],
            answers=[fid],
        )
        assert "closed" in err and fid in err
    assert head(root) == before
    assert "- x" not in (root / "notes/plan.md").read_text()


async def test_batch_answers_in_one_commit(make_vault: Any, connect: Any) -> None:
    root = make_vault(FILES)
    a = add(root, "notes/plan.md", "-m", "one")
    b = add(root, "notes/other.md", "-m", "two")
    async with connect(root) as s:
        res = await s.call(
            "batch",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "notes/plan.md", "heading": "Log", "content": "- a"},
                },
                {
                    "tool": "edit_text",
                    "args": {"path": "notes/other.md", "old": "plain", "new": "plainer"},
                },
            ],
            answers=[a, b],
        )
    assert sorted(res["answered"]) == sorted([a, b])
    items = listed(root)
    assert items[a]["answered_by"] == items[b]["answered_by"] == res["commit"]


async def test_private_notes_feedback_is_never_shown(make_vault: Any, connect: Any) -> None:
    root = make_vault(FILES)
    secret = add(root, "private/salary.md", "-m", "ZEBRAFISH is wrong, fix it")
    add(root, "notes/other.md", "-m", "fine")
    async with connect(root) as s:
        ctx = await s.call("get_context")
        assert "ZEBRAFISH" not in json.dumps(ctx) and secret not in json.dumps(ctx)
        # answering it is refused as for an unknown id: its existence is not told either
        err = await s.error(
            "edit_text", path="notes/other.md", old="plain", new="x", answers=[secret]
        )
        assert "unknown id" in err and "ZEBRAFISH" not in err and "private" not in err
    # a note made private after the comment: hidden from then on
    (root / "vault.config.yaml").write_text(
        CONFIG.replace("'private/**'", "'private/**', 'notes/other.md'")
    )
    async with connect(root) as s:
        assert feedback_block(await s.call("get_context")) is None
    # the owner still sees both
    assert secret in listed(root)


async def test_oldest_feedback_is_summarised_to_fit_the_budget(
    make_vault: Any, connect: Any
) -> None:
    root = make_vault(FILES)
    ids = [add(root, "notes/plan.md", "-m", f"item {n}: " + "long words " * 60) for n in range(6)]
    async with connect(root) as s:
        ctx = await s.call("get_context")
    block = feedback_block(ctx)
    assert block is not None
    shown = block["items"]
    assert shown[0]["id"] == ids[-1] and "summarised" not in shown[0]  # newest whole
    assert shown[-1].get("summarised") or block.get("more")  # oldest cut first
    assert len(json.dumps(block)) <= int((6000 - 1000) * 0.3)


async def test_rebase_keeps_feedback_and_its_answer(make_vault: Any, connect: Any) -> None:
    root = make_vault(FILES)
    async with connect(root) as s:
        await s.call("append_section", path="notes/plan.md", heading="Log", content="- ai line")
    ai = head(root)
    fid = add(root, "notes/plan.md", "-m", "not this", "--commit", ai, "--line", "6")
    async with connect(root) as s:
        res = await s.call(
            "edit_text", path="notes/plan.md", old="- ai line", new="- better", answers=[fid]
        )
    # the owner rebases the branch onto a commit made beside it: every sha changes
    git(root, "branch", "side", f"{ai}~1")
    git(root, "switch", "-q", "side")
    (root / "notes/third.md").write_text("# Third\n")
    git(root, "add", "notes/third.md")
    git(root, "commit", "-qm", "side note")
    git(root, "switch", "-q", "-")
    git(root, "rebase", "-q", "side")
    new_ai = git(root, "rev-parse", "HEAD~1").strip()
    assert new_ai != ai and head(root) != res["commit"]
    item = listed(root)[fid]
    assert item["status"] == "answered"
    assert item["answered_by"] == head(root)  # the rewritten answering commit
    assert item["commit"] == new_ai  # the note on the commit it is about followed it


def test_second_writer_race_loses_nothing(make_vault: Callable[..., Path]) -> None:
    """Two writers at once (two dashboards): every item lands, the ref is one chain."""
    root = make_vault(FILES)
    made: list[str] = []
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for k in range(5):
                made.append(store.add(root, "notes/plan.md", f"writer {n} item {k}").id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert sorted(i.id for i in store.read_all(root)) == sorted(made) and len(made) == 15


def test_a_lost_compare_and_swap_reads_again(make_vault: Callable[..., Path]) -> None:
    """The race made exact: another writer moves the ref between this writer's read and its
    update-ref; the update is refused, the writer reads again and keeps both items."""
    root = make_vault(FILES)
    first = store.add(root, "notes/plan.md", "first")
    tree = store._read(root, store._tip(root))
    other = store.add(root, "notes/plan.md", "the other dashboard's")
    items = dict(tree.items)
    assert not store._write(root, tree, items, dict(tree.notes), "stale")  # refused: moved
    third = store.add(root, "notes/plan.md", "third")
    assert {i.id for i in store.read_all(root)} == {first.id, other.id, third.id}


def test_feedback_is_never_in_the_notes_or_on_the_branch(make_vault: Callable[..., Path]) -> None:
    root = make_vault(FILES)
    before = head(root)
    status = git(root, "status", "--porcelain")
    add(root, "notes/plan.md", "-m", "kept aside")
    assert head(root) == before and git(root, "status", "--porcelain") == status
    assert git(root, "rev-parse", "--verify", FEEDBACK_REF).strip()
    assert FEEDBACK_REF in git(root, "config", "--get-all", "notes.rewriteRef")
    # a restart: a new process reads it back
    assert listed(root)


def test_shell_refusals_write_nothing(make_vault: Callable[..., Path]) -> None:
    root = make_vault(FILES)
    for args in (
        ["add", "nope.md", "-m", "x"],
        ["add", "notes/plan.md", "-m", "x", "--line", "99"],
        ["add", "notes/plan.md", "-m", "x", "--commit", "notacommit"],
        ["add", "notes/plan.md", "-m", "   "],
        ["add", "../outside.md", "-m", "x"],
        ["close", "fb-000000"],
        ["reopen", "fb-000000"],
    ):
        r = cli(root, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    ref = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "-q", "--verify", FEEDBACK_REF],
        capture_output=True,
    )
    assert ref.returncode != 0  # nothing was ever written
    fid = add(root, "notes/plan.md", "-m", "x")
    r = cli(root, "reopen", fid)
    assert r.returncode == 1 and "open already" in r.stderr


def test_open_feedback_for_the_start_prompt(make_vault: Callable[..., Path]) -> None:
    from server.services.feedback import open_feedback

    root = make_vault(FILES)
    fid = add(root, "notes/plan.md", "-m", "for the prompt")
    add(root, "private/salary.md", "-m", "hidden")
    vault = Vault(root)
    try:
        assert [i["id"] for i in open_feedback(vault)] == [fid]
    finally:
        vault.close()


async def test_a_broken_feedback_ref_is_said_and_the_context_stands(
    make_vault: Any, connect: Any
) -> None:
    """The ref's tree gone from the object store (a damaged repo, a partial clone): get_context
    says the feedback could not be read and gives the rest of the context."""
    root = make_vault(FILES)
    add(root, "notes/plan.md", "-m", "x")
    tree = git(root, "rev-parse", f"{FEEDBACK_REF}^{{tree}}").strip()
    (root / ".git/objects" / tree[:2] / tree[2:]).unlink()
    async with connect(root) as s:
        ctx = await s.call("get_context")
    block = ctx["blocks"][0]
    assert block["kind"] == "feedback" and block["items"] == []
    assert "could not be read" in block["note"]
    assert any(b["kind"] == "recent" for b in ctx["blocks"])


async def test_feedback_follows_its_note_moved_into_a_private_folder(
    make_vault: Any, connect: Any
) -> None:
    """The owner moves a note with feedback into a private folder: the feedback goes with it,
    and is hidden from the AI from then on (and listed under the new path for the owner)."""
    root = make_vault(FILES)
    fid = add(root, "notes/other.md", "-m", "ZEBRAFISH: tell nobody")
    git(root, "mv", "notes/other.md", "private/other.md")
    git(root, "commit", "-qm", "owner moves it")
    async with connect(root) as s:
        ctx = await s.call("get_context")
        assert "ZEBRAFISH" not in json.dumps(ctx)
        err = await s.error(
            "append_section", path="notes/plan.md", heading="Log", content="x", answers=[fid]
        )
        assert "unknown id" in err
    assert listed(root)[fid]["path"] == "private/other.md"


async def test_feedback_on_a_note_moved_but_not_committed_is_hidden(
    make_vault: Any, connect: Any
) -> None:
    """Moved in the file manager, not committed: git cannot tell where the note went (it may
    be a private folder), so its feedback is hidden until the move is committed."""
    root = make_vault(FILES)
    add(root, "notes/other.md", "-m", "ZEBRAFISH: tell nobody")
    (root / "notes/other.md").rename(root / "private/other.md")
    async with connect(root) as s:
        assert "ZEBRAFISH" not in json.dumps(await s.call("get_context"))


async def test_a_write_that_changes_nothing_answers_nothing(make_vault: Any, connect: Any) -> None:
    root = make_vault({**FILES, "notes/fm.md": "---\nstatus: open\n---\n# FM\n"})
    fid = add(root, "notes/fm.md", "-m", "close it")
    async with connect(root) as s:
        res = await s.call(
            "update_frontmatter", path="notes/fm.md", set={"status": "open"}, answers=[fid]
        )
    assert res["noop"] and "stays open" in res["note"] and "answered" not in res
    assert listed(root)[fid]["status"] == "open"
