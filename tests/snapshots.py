"""The snapshot tests' shared ground: a vault with every picture pinned (commit dates, journal
times, the vault's path, "today"), the three sizes, and the waits until a screen is still. A
helper module, not a test module: the snapshot modules import from here."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.screens.review_screen import ReviewScreen
from app.ui.widgets.timeline import Timeline
from server.core.gitrepo import ensure_repo

from .conftest import until
from .settling import settled, unsettled
from .templates import copy_of

WHEN = "2026-01-15T10:{:02d}:00+00:00"
SIZES = {"80x24": (80, 24), "120x36": (120, 36), "200x50": (200, 50)}
_PINNED_DATES: dict[str, str] = {}  # git's dates as the pinned vault's build leaves them
LONG = "项目笔记/二零二六年第四季度/系统设计面试准备/关于离线同步与冲突解决的学习笔记.md"


@pytest.fixture
def pinned_vault(
    monkeypatch: pytest.MonkeyPatch, pinned_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The vault every snapshot draws, at `~/vault` (the header shows it; HOME is the test's):
    a copy of one built once per test process (every date in it is pinned, so every build is
    the same), with git's dates pinned as the build leaves them for what the test commits.
    The screens read git in worker threads (lists, diffs read ahead, counts, the parse cache);
    each test waits (bounded) for the threads it started, so none outlives its vault."""
    before = set(threading.enumerate())

    def build(root: Path) -> None:
        _build_pinned_vault(monkeypatch, root)
        _PINNED_DATES.update({k: os.environ[k] for k in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")})

    root = copy_of(tmp_path_factory, "pinned", pinned_root, build)
    for name, value in _PINNED_DATES.items():
        monkeypatch.setenv(name, value)
    yield root
    deadline = time.monotonic() + 20
    for t in set(threading.enumerate()) - before:
        t.join(max(0.0, deadline - time.monotonic()))


def _build_pinned_vault(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    import anyio
    from mcp import Client

    from server.protocol.tools import build_server
    from server.vault import Vault

    (root / "vault.config.yaml").write_text("tags: {vocabulary: tags.yaml, unknown: reject}\n")
    (root / "tags.yaml").write_text("- crdt\n- caching\n- 同步\n")
    (root / "weeks").mkdir()
    (root / "weeks/w49.md").write_text(
        "---\nstart: 2026-01-12\ntags: [crdt]\n---\n# Week 49\n\n## Log\n- Mon: read about CRDT tombstones\n"
    )
    (root / "study").mkdir()
    (root / "study/cache.md").write_text(
        "---\ndate: 2026-01-05\ntags: [caching]\n---\n# Cache invalidation\n\nTTL expiry and the thundering herd.\n"
    )
    (root / LONG).parent.mkdir(parents=True)
    (root / LONG).write_text(
        "---\ntags: [同步]\n---\n# 离线同步与冲突解决\n\n## 日志\n- 读了 CRDT 的论文\n"
    )
    step = iter(range(60))

    def tick() -> None:
        t = WHEN.format(next(step))
        monkeypatch.setenv("GIT_AUTHOR_DATE", t)
        monkeypatch.setenv("GIT_COMMITTER_DATE", t)

    tick()
    ensure_repo(root)

    async def writes() -> None:
        vault = Vault(root)
        async with Client(build_server(vault)) as c:
            tick()
            await c.call_tool(
                "append_section",
                {
                    "path": "weeks/w49.md",
                    "heading": "Log",
                    "content": "- Tue: mock interview, drew the architecture first",
                },
            )
            tick()
            await c.call_tool(
                "edit_text",
                {
                    "path": "study/cache.md",
                    "old": "TTL expiry and the thundering herd.",
                    "new": "TTL expiry, write-through, and the thundering herd.",
                },
            )
            tick()
            await c.call_tool(
                "append_section",
                {
                    "path": LONG,
                    "heading": "日志",
                    "content": "- 周二：模拟面试，先画整体架构图，再讨论向量时钟与最后写入者胜出的取舍",
                },
            )
            tick()
            await c.call_tool(
                "create_doc", {"path": "inbox/idea.md", "body": "# Idea\n", "tags": ["made-up"]}
            )
            read = (await c.call_tool("read_doc", {"path": "weeks/w49.md"})).structured_content
            (root / "weeks/w49.md").write_text(
                (root / "weeks/w49.md").read_text() + "- owner typed this\n"
            )
            await c.call_tool(
                "replace_doc",
                {"path": "weeks/w49.md", "content": "# stale\n", "hash": read["hash"]},
            )
        vault.close()

    anyio.run(writes)
    # the journal's clock and pids are not pinned by git's dates: pin them here
    journal = root / ".git/vaultwatch/events.jsonl"
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    for i, e in enumerate(events):
        e["ts"] = f"2026-01-15T11:{i:02d}:00.000Z"
        e["pid"] = 4242
    journal.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    pinned = 1_768_471_200  # 2026-01-15 10:00 UTC
    # the owner's unsaved line dates w49.md by its mtime (git has not seen it): pin it too, or
    # the tags screen would date the note to the day the test runs, after the pinned "today"
    for rel in ("vault.config.yaml", "weeks/w49.md"):
        os.utime(root / rel, (pinned, pinned))
    return root


def make_app(root: Path) -> Dashboard:
    app = Dashboard(root, poll_seconds=60)  # one poll at start; the picture must not move
    app.today = date(2026, 1, 20)
    return app


async def settle(pilot: Any, toasts: bool = False) -> None:
    """Until nothing moves: the review count read, every worker done (diffs, line counts, tags,
    the review count), the screen's first read in, nothing left to lay out or paint. The
    launch's "to review" toast covers the screen under test: it goes (it has its own snapshot,
    which keeps it with `toasts=True`)."""
    app = pilot.app
    watch = getattr(app, "review_watch", None)
    if watch is not None:  # read once the timeline has rows; the toast follows it
        await until(pilot, lambda: watch.count is not None, "the review count")

    def still() -> bool:
        if not toasts and app._notifications:
            app.clear_notifications()  # one came since (the toast follows the count)
        return not unsettled(app, toasts=toasts)

    await until(
        pilot, still, "the screen to settle", describe=lambda: unsettled(app, toasts=toasts)
    )


async def open_screen(pilot: Any, key: str) -> None:
    """Press a key that opens a screen or dialog and wait for it to be on top and settled: its
    first read in, its thread workers done, nothing left to paint (its flow waits for an answer
    in an async worker, so not for that one). The screen below is taken before the key: taken
    after, it was often the new screen already."""
    app = pilot.app
    first = app.screen
    await pilot.press(key)
    await until(
        pilot,
        lambda: app.screen is not first,
        f"{key!r} to open a screen",
        describe=lambda: type(app.screen).__name__,
    )
    await settled(pilot, f"the screen {key!r} opened to settle", threads_only=True)


async def select_ai_commit(pilot: Any, subject_start: str) -> None:
    app: Dashboard = pilot.app
    # the rows, and the timeline to show them in (under load the feed was read before the
    # main screen was composed: NoMatches '#timeline')
    await until(
        pilot,
        lambda: bool(app.feed.rows and app.main.query("#timeline")),
        "the timeline's rows",
        describe=lambda: (len(app.feed.rows), bool(app.main.query("#timeline"))),
    )
    row = next(
        r for r in app.visible_rows() if r.commit and r.commit.subject.startswith(subject_start)
    )
    t = app.query_one("#timeline", Timeline)
    i = t.index_of(row.key)
    assert i is not None, row.key
    t.move_to(i)
    await settle(pilot)


async def review(pilot: Any, path: str | None = None) -> ReviewScreen:
    """The review screen open, its list read and the diff of `path` (else the first) drawn."""
    app = pilot.app
    await until(pilot, lambda: app.review_watch.count is not None, "the review count")
    await open_screen(pilot, "v")
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    await until(pilot, lambda: screen.review is not None, "the review list")
    assert screen.review is not None
    if path is not None:
        at = [n.path for n in screen.review.notes].index(path)
        screen.query_one("#review-notes", DataTable).move_cursor(row=at)

    def shown() -> object:
        return screen.shown and screen.shown.note.path

    await until(
        pilot,
        lambda: screen.shown is not None and (path is None or shown() == path),
        f"the diff of {path or 'the first note'}",
        describe=shown,
    )
    app.clear_notifications()
    await settle(pilot)
    return screen
