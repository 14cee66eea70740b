"""`vaultwatch review|revert|mv|rm` run as the real entry point in a subprocess: exit 0 when done,
1 with a one-line reason when refused, and a refusal writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.services.rewritten import NOTES_REF

from .conftest import git
from .conftest import vaultwatch_cli as run

pytestmark = pytest.mark.anyio

VAULTWATCH = str(Path(sys.executable).parent / "vaultwatch")
W = "# Week\n\n## Log\n- one\n\n## Notes\nfree text\n"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "w.md": W,
            "a.md": "# A\n\n## Log\n",
            "links.md": "See [[a]] and [[w]].\n",
        }
    )


def refused(r: subprocess.CompletedProcess[str], why: str) -> None:
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr


def state(root: Path) -> tuple[str, str, str]:
    """HEAD, the marks ref and git status: what a refusal must leave as it was."""
    marks = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "-q", "--verify", NOTES_REF],
        capture_output=True,
        text=True,
    ).stdout
    return git(root, "rev-parse", "HEAD"), marks, git(root, "status", "--porcelain")


async def test_review_json_markdown_and_marks(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai two")
        other = await s.call("append_section", path="a.md", heading="Log", content="- in a")
    (vault / "w.md").write_text((vault / "w.md").read_text() + "mine, unsaved\n")
    r = run(vault, "review", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["unreviewed_commits"] == 2
    notes = {n["path"]: n for n in out["notes"]}
    assert notes["w.md"]["commits"] == [ai["commit"]] and notes["a.md"]["commits"] == [
        other["commit"]
    ]
    w = notes["w.md"]
    assert (w["added"], w["removed"]) == (2, 0)
    assert "+- ai two\n" in w["diff"] and "+mine, unsaved\n" in w["diff"]
    owners = {ln["text"]: ln["owner"] for ln in w["lines"]}
    assert owners == {"- ai two\n": False, "mine, unsaved\n": True}
    md = run(vault, "review", str(vault), "--markdown")
    assert md.returncode == 0 and "## AI changes not yet reviewed" in md.stdout
    assert "```diff" in md.stdout and "[[w|Week]]" in md.stdout
    text = run(vault, "review")
    assert text.returncode == 0 and f"AI {ai['commit'][:8]} append_section" in text.stdout

    before = state(vault)
    refused(run(vault, "review", "--mark-reviewed", "nope.md"), "no unreviewed AI changes")
    refused(run(vault, "review", "--since", "someday"), "--since")
    assert state(vault) == before
    ok = run(vault, "review", "--mark-reviewed", "a.md", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout) == {"marked_commits": 1, "paths": ["a.md"]}
    assert "Reviewed: a.md" in git(vault, "notes", f"--ref={NOTES_REF}", "show", other["commit"])
    left = json.loads(run(vault, "review", "--json").stdout)
    assert [n["path"] for n in left["notes"]] == ["w.md"] and left["unreviewed_commits"] == 1
    # a period view shows the reviewed note too
    period = json.loads(run(vault, "review", "--since", "today", "--json").stdout)
    assert {n["path"]: n["reviewed"] for n in period["notes"]} == {"w.md": False, "a.md": True}
    assert run(vault, "review", "--mark-reviewed").returncode == 0
    assert json.loads(run(vault, "review", "--json").stdout)["notes"] == []


async def test_revert_one_commit_or_only_one_note(connect: Any, vault: Path) -> None:
    ops = [
        {"tool": "append_section", "args": {"path": p, "heading": "Log", "content": f"- in {p}"}}
        for p in ("w.md", "a.md")
    ]
    async with connect(vault) as s:
        batch = await s.call("batch", ops=ops)
    owner = git(vault, "rev-parse", "HEAD~1").strip()  # the import: the owner's own commit
    before = state(vault)
    refused(run(vault, "revert", owner), "your own edit")
    refused(run(vault, "revert", "0123456789abcdef"), "is not a commit")
    refused(run(vault, "revert", batch["commit"], "--path", "links.md"), "did not change")
    assert state(vault) == before
    r = run(vault, "revert", str(vault), batch["commit"], "--path", "w.md", "--json")
    assert r.returncode == 0, r.stderr
    done = json.loads(r.stdout)
    assert (vault / "w.md").read_text() == W and "- in a.md" in (vault / "a.md").read_text()
    msg = git(vault, "log", "-1", "--format=%B", done["commit"])
    assert f"Vaultwatch-Reverts-Path: {batch['commit']} w.md" in msg
    # not marked "reverted" as a whole: the rest of it can still be reverted
    whole = run(vault, "revert", batch["commit"])
    assert whole.returncode == 0, whole.stderr
    assert "- in a.md" not in (vault / "a.md").read_text()
    refused(run(vault, "revert", batch["commit"]), "already reverted")


def test_mv_dry_run_then_move_with_links(vault: Path) -> None:
    before = state(vault)
    dry = run(vault, "mv", "a.md", "archive/alpha.md", "--dry-run")
    assert dry.returncode == 0 and "a.md  →  archive/alpha.md" in dry.stdout
    assert "[[alpha]]" in dry.stdout  # the link rewrite is previewed
    assert state(vault) == before and (vault / "a.md").exists()
    refused(run(vault, "mv", "a.md", "w.md"), "w.md")  # the destination exists
    refused(run(vault, "mv", "a.md"), "usage")
    assert state(vault) == before
    r = run(vault, "mv", str(vault), "a.md", "archive/alpha.md", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["moves"] == {"a.md": "archive/alpha.md"} and out["edits"] == ["links.md"]
    assert (vault / "archive/alpha.md").exists() and "[[alpha]]" in (vault / "links.md").read_text()
    assert "Vaultwatch-Action: move" in git(vault, "log", "-1", "--format=%B")


def test_rm_needs_yes_and_prints_the_broken_links(vault: Path) -> None:
    before = state(vault)
    no = run(vault, "rm", "a.md")
    refused(no, "pass --yes")
    assert "links.md:1" in no.stdout  # the same preview: the link that will break
    refused(run(vault, "rm", "nope.md", "--yes"), "not a file")
    assert state(vault) == before and (vault / "a.md").exists()
    r = run(vault, "rm", "a.md", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["path"] == "a.md" and out["broken_links"][0]["note"] == "links.md"
    assert not (vault / "a.md").exists() and git(vault, "status", "--porcelain") == ""


def test_a_vault_named_like_a_command_still_opens(tmp_path: Path) -> None:
    (tmp_path / "review").mkdir()
    dash = run(tmp_path, "./review", "--help")  # the dashboard's parser took it as the vault
    assert dash.returncode == 0 and "--theme" in dash.stdout
    sub = run(tmp_path, "review", "--help")
    assert sub.returncode == 0 and "--mark-reviewed" in sub.stdout
    refused(run(tmp_path, "review"), "git history")  # the folder itself is not a vault


@pytest.mark.parametrize("command", ["review", "stats"])
def test_a_since_date_in_the_future_is_refused(vault: Path, command: str) -> None:
    """Before, `stats --since 2099-01-01` printed a week of zeros and exited 0: a mistyped
    year read as 'the AI did nothing'."""
    r = run(vault, command, str(vault), "--since", "2099-01-01")
    refused(r, "in the future")


@pytest.mark.parametrize("command", ["stats", "reads", "review", "health"])
def test_a_reader_that_stops_early_ends_the_command_quietly(vault: Path, command: str) -> None:
    """`vaultwatch stats | head -1` ended in a BrokenPipeError traceback. Each command's output
    is made long enough to fill the pipe after the reader has gone."""
    for i in range(400):  # many notes: long listings, and more than a pipe's 64 KB for some
        (vault / f"n{i:03}.md").write_text(f"# Note {i}\n\n## Log\n- line\n")
    proc = subprocess.Popen(
        [VAULTWATCH, command, str(vault), *(["--json"] if command != "reads" else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "VAULTWATCH_SEMANTIC": "off"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()  # the reader stops, as `head` does
    err = proc.stderr.read().decode()
    code = proc.wait(60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert code in (0, 141), (code, err)


def test_the_mv_preview_shows_a_removed_line_that_starts_with_two_dashes(make_vault: Any) -> None:
    # "-- see [[a]]" removed is "--- see [[a]]" in the diff: not the diff's own file header
    vault = make_vault({"a.md": "# A\n", "sig.md": "text\n-- see [[a]]\n"})
    dry = run(vault, "mv", "a.md", "archive/alpha.md", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "\n--- see [[a]]\n+-- see [[alpha]]\n" in dry.stdout
