"""Superseded instead of deleted, through the real MCP client on a real git vault: supersede_doc
marks a note (three frontmatter keys, every other byte kept, one commit with the trailers),
list_docs, search_text and get_context leave it out unless asked, read_doc says first what
replaced it; a loop, a missing or private `by`, and a path outside the vault are refused with
nothing written; health lists superseded notes, and its screen offers to delete them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.ui.dialogs.modals import ConfirmModal

from .conftest import git, head

pytestmark = pytest.mark.anyio

OLD = "study/cache-invalidation.md"
NEW = "study/idempotency-keys.md"


def paths_of(result: dict[str, Any], key: str) -> list[str]:
    return [d["path"] for d in result[key]]


def context_paths(ctx: dict[str, Any]) -> list[str]:
    return [d["path"] for b in ctx["blocks"] for d in b.get("docs", [])]


async def test_supersede_hides_a_note_and_read_doc_says_what_replaced_it(
    connect: Any, example_vault: Path
) -> None:
    before = (example_vault / OLD).read_bytes()
    async with connect(example_vault) as s:
        assert OLD in paths_of(await s.call("list_docs", folder="study"), "docs")
        assert OLD in paths_of(await s.call("search_text", query="cache invalidation"), "hits")
        done = await s.call(
            "supersede_doc", path=OLD, by=NEW, reason="merged into the idempotency note"
        )
        listed = await s.call("list_docs", folder="study")
        found = await s.call("search_text", query="cache invalidation")
        asked = await s.call("list_docs", folder="study", include_superseded=True)
        asked_search = await s.call(
            "search_text", query="cache invalidation", include_superseded=True
        )
        read = await s.call("read_doc", path=OLD)
        raw = await s.client.call_tool("read_doc", {"path": OLD})
    assert done["commit"] and OLD not in paths_of(listed, "docs")
    assert listed["total"] == asked["total"] - 1
    assert OLD not in paths_of(found, "hits") and OLD in paths_of(asked, "docs")
    assert OLD in paths_of(asked_search, "hits")
    # said first, with the replacing note's title and path
    text = raw.content[0].text
    assert next(iter(json.loads(text))) == "superseded"
    assert "'Idempotency keys' (study/idempotency-keys.md)" in read["superseded"]
    # every other byte as it was: the three keys are added at the end of the frontmatter
    after = (example_vault / OLD).read_bytes()
    added = {
        b"status: superseded\n",
        b"superseded_by: '[[study/idempotency-keys]]'\n",
    }
    lines = after.splitlines(keepends=True)
    kept = [ln for ln in lines if ln not in added and not ln.startswith(b"superseded: 20")]
    assert b"".join(kept) == before and len(lines) == len(before.splitlines()) + 3
    msg = git(example_vault, "log", "-1", "--format=%s%n%b")
    assert msg.startswith(f"supersede_doc: {OLD} by {NEW}: merged into the idempotency note")
    assert "Vaultwatch-Tool: supersede_doc" in msg and "Vaultwatch-Client:" in msg
    assert git(example_vault, "show", "--name-only", "--format=", "HEAD").split() == [OLD]


async def test_get_context_leaves_a_superseded_note_out_unless_asked(
    connect: Any, example_vault: Path
) -> None:
    """The example's "This week" block shows the latest week note: once that one is superseded
    the week before takes its place, and include_superseded brings it back."""
    async with connect(example_vault) as s:
        first = context_paths(await s.call("get_context"))
        await s.call(
            "supersede_doc", path="weeks/2026-W49.md", by="weeks/2026-W48.md", reason="test"
        )
        hidden = context_paths(await s.call("get_context"))
        asked = context_paths(await s.call("get_context", include_superseded=True))
    assert "weeks/2026-W49.md" in first and "weeks/2026-W48.md" not in first
    assert "weeks/2026-W49.md" not in hidden and "weeks/2026-W48.md" in hidden
    assert asked == first


async def test_loops_missing_and_private_targets_are_refused_with_nothing_written(
    connect: Any, example_vault: Path
) -> None:
    async with connect(example_vault) as s:
        await s.call("supersede_doc", path=OLD, by=NEW, reason="a to b")
        sha = head(example_vault)
        loop = await s.error("supersede_doc", path=NEW, by=OLD, reason="b to a")
        self_ = await s.error("supersede_doc", path=NEW, by=NEW, reason="itself")
        missing = await s.error("supersede_doc", path=NEW, by="study/nothing.md", reason="x")
        private = await s.error("supersede_doc", path=NEW, by="private/salary-notes.md", reason="x")
        outside = await s.error("supersede_doc", path="../x.md", by=NEW, reason="x")
        in_batch = await s.error(
            "batch",
            ops=[
                {
                    "tool": "supersede_doc",
                    "args": {"path": "inbox/ideas.md", "by": "weeks/2026-W48.md", "reason": "1"},
                },
                {
                    "tool": "supersede_doc",
                    "args": {"path": "weeks/2026-W48.md", "by": "inbox/ideas.md", "reason": "2"},
                },
            ],
        )
        two_lines = await s.error("supersede_doc", path=NEW, by=OLD, reason="a\nb")
    assert "rejected (supersede_loop)" in loop, loop
    assert f"{NEW} -> {OLD} -> {NEW}" in loop and "Nothing was written" in loop
    assert "supersede_self" in self_
    assert "not_found" in missing and "create the replacing note first" in missing
    assert "path_private" in private and "salary" not in private.replace("salary-notes.md", "")
    assert "Nothing was written" in outside
    assert "supersede_loop" in in_batch and "operation 2" in in_batch
    assert "one line" in two_lines
    assert head(example_vault) == sha
    assert git(example_vault, "status", "--porcelain") == ""


async def test_a_batch_creates_the_new_note_and_supersedes_the_old_one_in_one_commit(
    connect: Any, example_vault: Path
) -> None:
    async with connect(example_vault) as s:
        res = await s.call(
            "batch",
            ops=[
                {
                    "tool": "create_doc",
                    "args": {"path": "inbox/garden.md", "body": "# Garden plan\n\nTomatoes.\n"},
                },
                {
                    "tool": "supersede_doc",
                    "args": {"path": "inbox/ideas.md", "by": "inbox/garden.md", "reason": "x"},
                },
            ],
        )
        listed = await s.call("list_docs", folder="inbox")
    assert res["commit"] and paths_of(listed, "docs") == ["inbox/garden.md"]
    assert "superseded_by: '[[inbox/garden]]'" in (example_vault / "inbox/ideas.md").read_text()


async def test_a_type_whose_status_has_allowed_values_can_still_be_superseded(
    connect: Any, example_vault: Path
) -> None:
    """improvement's status is one of open, closed: `superseded` is not a new problem (the
    "not worse" check would otherwise refuse every supersede of such a note)."""
    async with connect(example_vault) as s:
        res = await s.call(
            "supersede_doc",
            path="improvements/big-o-under-pressure.md",
            by="improvements/clarify-then-sketch.md",
            reason="the newer habit covers it",
        )
        again = await s.call(
            "supersede_doc",
            path="improvements/big-o-under-pressure.md",
            by="improvements/clarify-then-sketch.md",
            reason="the same again",
        )
    assert res["commit"] and "warnings" not in res
    assert again.get("noop") is True  # already so: the date is not moved


async def test_health_lists_superseded_notes_and_the_screen_offers_delete(
    connect: Any, example_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.dashboard import Dashboard
    from server.services.health import check_root

    from .conftest import until
    from .health_vault import open_health, select

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    async with connect(example_vault) as s:
        await s.call("supersede_doc", path=OLD, by=NEW, reason="merged")
    report = check_root(example_vault)
    found = [f for f in report.findings if f.kind == "superseded"]
    assert [f.path for f in found] == [OLD]
    assert f"superseded by {NEW} on " in found[0].reason
    assert report.to_json()["superseded"] == [OLD]
    assert "delete" in found[0].actions

    app = Dashboard(example_vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_health(pilot)
        await select(pilot, screen, f"superseded:{OLD}")
        assert screen.check_action("delete", ()) is True
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: f"superseded:{OLD}" not in screen.by_id)
    assert not (example_vault / OLD).exists()
    assert "Vaultwatch-Action: remove" in git(example_vault, "log", "-1", "--format=%B")


@pytest.mark.semantic
def test_health_lists_same_subject_pairs_older_first_with_their_score(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two notes on one subject, the second written 30 days after the first: listed for the
    owner to judge, older first; a pair close enough to be a near-duplicate is listed as that
    instead (once), and a superseded note is in no pair."""
    from server.services import health
    from server.vault import Vault

    old = "# Payment retry policy\n\nRetry a failed card payment three times, one minute apart, then email the customer.\n"
    new = "# Payment retry policy, revised\n\nRetry a failed card payment five times, two minutes apart, then email the customer.\n"
    month_ago = "2026-10-01T12:00:00+00:00"
    monkeypatch.setenv("GIT_AUTHOR_DATE", month_ago)
    monkeypatch.setenv("GIT_COMMITTER_DATE", month_ago)
    root = make_vault(
        {
            "vault.config.yaml": "health: {duplicate_score: 0.95}\n",
            "notes/retry.md": old,
            "notes/garden.md": GARDEN,
        }
    )
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    (root / "notes/retry-2026.md").write_text(new, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "newer")

    def findings(vault: Vault) -> list[health.Finding]:
        sem = vault.semantic()
        assert sem is not None
        sem.reconcile({p: e.doc for p, e in vault.entries().items()}, vault.note_meta)
        return health.check(vault).findings

    vault = Vault(root)
    try:
        found = findings(vault)
        pairs = [f for f in found if f.kind == "same_subject"]
        assert [(f.path, f.other) for f in pairs] == [("notes/retry.md", "notes/retry-2026.md")]
        assert pairs[0].score is not None and 0.75 <= pairs[0].score < 0.95
        assert pairs[0].days is not None and pairs[0].days >= 30
        assert f"(score {pairs[0].score:.2f})" in pairs[0].reason
        assert "delete" in pairs[0].actions
        assert not [f for f in found if f.kind == "duplicate"]
        # at the default near-duplicate score (0.85) the pair is a near-duplicate, listed once
        (root / "vault.config.yaml").write_text("health: {}\n", encoding="utf-8")
        vault.close()
        vault = Vault(root)
        found = findings(vault)
        pairs_now = [f.kind for f in found if f.kind in ("duplicate", "same_subject")]
        assert pairs_now == ["duplicate"]
    finally:
        vault.close()


GARDEN = "# Tomatoes\n\nWater the tomatoes at dawn and stake them before the first storm.\n"
