"""The timeline's feed: the newest commits first, the rest of a long history in the background,
each new HEAD read incrementally, a rewritten history reread; and the timeline widget keeping
its cursor on its row while rows arrive."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.services import feed as feed_mod
from app.services.feed import Feed
from app.services.history import read_commits
from app.ui.dashboard import Dashboard
from app.ui.widgets.timeline import Timeline

from .conftest import git, until


def fast_commits(root: Path, n: int, start: int = 1_760_000_000) -> None:
    """n commits in one `git fast-import` (a long history in a fraction of a second)."""
    parent = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "-q", "--verify", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    out = []
    for i in range(n):
        msg = f"edit {i}\n"
        data = f"# N\n\n- entry {i}\n"
        out.append(
            f"commit refs/heads/master\ncommitter Owner <o@x> {start + i} +0000\n"
            f"data {len(msg)}\n{msg}"
            + (f"from {parent}\n" if parent and i == 0 else "")
            + f"M 100644 inline n{i % 7}.md\ndata {len(data)}\n{data}\n"
        )
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"], input="".join(out).encode(), check=True
    )
    git(root, "reset", "-q", "--hard")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    git(root, "init", "-q", "-b", "master")
    fast_commits(root, 30)
    return root


def subjects(f: Feed) -> list[str]:
    return [r.summary for r in f.rows if r.commit is not None]


def test_first_screen_reads_the_newest_commits_then_backfills_the_rest(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed_mod, "FIRST_COMMITS", 8)
    f = Feed(repo)
    assert f.poll() and not f.complete
    assert subjects(f) == [f"edit {i}" for i in range(29, 21, -1)]
    fast_commits(repo, 2, start=1_770_000_000)  # new commits land before the backfill
    assert f.poll()
    assert f.backfill() and f.complete
    assert subjects(f) == [c.subject for c in read_commits(repo)]
    assert len(subjects(f)) == 32
    assert not f.backfill()  # nothing more to read


def test_new_commits_are_read_incrementally_and_a_reset_rereads(repo: Path) -> None:
    f = Feed(repo)
    f.poll()
    assert f.complete and len(subjects(f)) == 30
    assert not f.poll()  # nothing new
    fast_commits(repo, 1, start=1_770_000_000)
    assert f.poll() and subjects(f)[0] == "edit 0" and len(subjects(f)) == 31
    git(repo, "reset", "-q", "--hard", "HEAD~5")  # history rewritten: those commits are gone
    assert f.poll()
    assert subjects(f) == [c.subject for c in read_commits(repo)] and len(subjects(f)) == 26


def test_journal_events_join_the_commits_by_time(repo: Path) -> None:
    j = repo / ".git/vaultwatch/events.jsonl"
    j.parent.mkdir(parents=True)
    e = {
        "v": 1,
        "ts": "2030-01-01T00:00:00.000Z",
        "pid": 1,
        "client": "c/1",
        "kind": "rejected",
        "tool": "create_doc",
        "paths": ["x.md"],
        "code": "unknown_tag",
        "message": "no",
        "hint": "h",
    }
    j.write_text(
        json.dumps(e)
        + "\n"
        + json.dumps({**e, "kind": "read", "ts": "2030-01-02T00:00:00.000Z"})
        + "\n"
    )
    f = Feed(repo)
    f.poll()
    assert f.rows[0].kind == "rejected" and f.rows[0].summary == "create_doc: unknown_tag: no"
    assert len(f.events) == 2  # reads are kept for the cost screen, not shown as rows
    assert sum(1 for r in f.rows if r.event is not None) == 1


def test_the_servers_own_rows_are_named_vaultwatch_and_an_unnamed_client_stays_unknown() -> None:
    """A server writes its start, stop, config reloads and recoveries on its own behalf, before
    any client has said its name: the journal says "unknown", the timeline said "who: unknown"
    for the dashboard's own server."""
    base = {"v": 1, "ts": "2030-01-01T00:00:00.000Z", "pid": 7, "client": "unknown"}
    for kind in ("server_started", "server_stopped", "config_reloaded", "recovered"):
        row = feed_mod.event_row({**base, "kind": kind, "ok": True}, 0)
        assert row is not None and row.who == "vaultwatch", (kind, row)
    row = feed_mod.event_row({**base, "kind": "rejected", "code": "x", "message": "m"}, 0)
    assert row is not None and row.who == "unknown"  # a client that did not say its name
    row = feed_mod.event_row({**base, "kind": "conflict", "client": "claude-code/2.1"}, 0)
    assert row is not None and row.who == "claude-code"


@pytest.mark.anyio
async def test_cursor_stays_on_its_row_and_thousands_of_rows_scroll(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    fast_commits(repo, 3_000, start=1_765_000_000)
    app = Dashboard(repo, poll_seconds=0.05)
    async with app.run_test(size=(160, 30)) as pilot:  # side by side: a page is ~25 rows
        t = app.query_one("#timeline", Timeline)
        await until(
            pilot,
            lambda: app.feed.complete and t.row_count == 3_030,
            "the whole history in the timeline",
            timeout=60,
            describe=lambda: (app.feed.complete, t.row_count),
        )
        assert t.row_count == 3_030
        await pilot.press("end")
        assert t.current is not None and t.current.summary == "edit 0"  # the oldest
        await pilot.press("home", "j", "j")
        chosen = t.current
        assert chosen is not None and t.cursor == 2
        fast_commits(repo, 4, start=1_790_000_000)
        await until(pilot, lambda: t.row_count == 3_034)
        assert t.row_count == 3_034
        assert t.current == chosen and t.cursor == 6  # same row, four new ones above it
        assert t.scroll_y == 0  # at the top the new rows are in view
        assert app.main._selected == chosen.key
        await pilot.press("pagedown", "pagedown")
        assert t.cursor > 6 + 2 * 20 and t.scroll_y > 0
        seen: Any = t.current
        fast_commits(repo, 1, start=1_800_000_000)
        before = t.scroll_y
        await until(pilot, lambda: t.row_count == 3_035)
        assert t.current == seen and t.scroll_y == before + 1  # the lines being read stay put


@pytest.mark.anyio
async def test_the_header_shows_how_far_recall_indexing_is(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Static

    from server.write.journal import Journal, SemanticProgress, ServerStopped

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    journal = Journal(repo / ".git/vaultwatch/events.jsonl", client="server")
    journal.append(SemanticProgress(model="use-multilingual-v3", indexed=340, total=1000))
    app = Dashboard(repo, poll_seconds=0.05)
    async with app.run_test(size=(200, 30)) as pilot:
        header = app.query_one("#header", Static)
        await until(pilot, lambda: "recall: indexing 340/1,000" in str(header.render()))
        assert "recall: indexing 340/1,000" in str(header.render())
        journal.append(SemanticProgress(model="use-multilingual-v3", indexed=1000, total=1000))
        await until(pilot, lambda: "recall: ready (1,000 notes)" in str(header.render()))
        assert "recall: ready (1,000 notes)" in str(header.render())
        # once that server stops, its "ready" says nothing of the notes as they are now (they
        # may change before the next server embeds them): the header no longer claims it
        journal.append(ServerStopped(transport="stdio", reason="exit"))
        await until(pilot, lambda: "recall" not in str(header.render()))
        assert "recall" not in str(header.render())


def test_a_killed_servers_recall_figure_is_not_shown() -> None:
    """A server killed without its stop line (a closed terminal) left 'recall: ready' in the
    header for good, over notes changed since; a live server's figure still shows."""
    import os
    import subprocess

    from app.ui.widgets.header import recall_progress

    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = {"kind": "semantic_progress", "indexed": 5, "total": 5, "pid": gone.pid}
    live = {**dead, "pid": os.getpid(), "indexed": 3}
    assert recall_progress([dead]) is None
    assert recall_progress([live, dead]) == live


@pytest.mark.anyio
async def test_a_narrow_terminal_still_shows_recall_progress(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 60 columns the header gives up the client names and the path, never the progress."""
    from textual.widgets import Static

    from server.write.journal import Journal, Read, SemanticProgress

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    journal = Journal(repo / ".git/vaultwatch/events.jsonl", client="server")
    journal.append(
        Read(tool="read_doc", paths=["a.md"], chars=0, tokens=0),
        client="claude-code-with-a-long-name/2.0",
    )
    journal.append(SemanticProgress(model="use-multilingual-v3", indexed=340, total=1000))
    app = Dashboard(repo, poll_seconds=0.05)
    async with app.run_test(size=(60, 20)) as pilot:
        header = app.query_one("#header", Static)
        await until(pilot, lambda: "recall: indexing 340/1,000" in str(header.render()))
        text = str(header.render())
        assert "recall: indexing 340/1,000" in text and len(text) <= 60, text
        assert "claude-code-with-a-long-name" not in text
        await pilot.resize_terminal(200, 20)
        await until(pilot, lambda: "claude-code-with-a-long-name" in str(header.render()))
        text = str(header.render())
        assert (
            "clients: claude-code-with-a-long-name" in text and "recall: indexing 340/1,000" in text
        )
