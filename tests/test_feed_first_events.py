"""A long journal's newest events are rows on the first screen and the older ones follow with
the rest of the history (issue 33: every screen opens in 0.5 s on the bench's 10,000-commit vault;
rows for its 5,000 events took ~100 ms of the first screen's ~250 before the timeline could
be filled). Once the rest is in, the rows are those of a feed that made them all at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.services import feed as feed_mod
from app.services.feed import Feed

from .conftest import git

EVENTS = 2_500


@pytest.fixture
def long_journal(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    git(root, "init", "-q", "-b", "master")
    (root / "a.md").write_text("# A\n")
    git(root, "add", "a.md")
    git(root, "commit", "-q", "-m", "owner edit")
    j = root / ".git/vaultwatch/events.jsonl"
    j.parent.mkdir(parents=True)
    with j.open("w") as fh:
        for i in range(EVENTS):
            kind = ("rejected", "read", "noop")[i % 3]  # reads are no rows
            e = {
                "v": 1,
                "ts": f"2030-01-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00.000Z",
                "pid": 1,
                "client": "c/1",
                "kind": kind,
                "tool": "create_doc",
                "paths": [f"n{i}.md"],
                "code": f"code{i}",
                "message": "no",
                "hint": "",
            }
            fh.write(json.dumps(e) + "\n")
    return root


def event_keys(f: Feed) -> list[str]:
    return [r.key for r in f.rows if r.event is not None]


def test_the_newest_events_first_then_the_rest_as_one_read_makes_them(
    long_journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed_mod, "FIRST_EVENTS", 300)
    f = Feed(long_journal)
    assert f.poll()
    assert len(f.events) == EVENTS  # every event read (the cost screens count them all)
    first = event_keys(f)
    shown = sum(1 for i in range(EVENTS) if i % 3 != 1)
    assert 0 < len(first) <= 300 < shown, len(first)
    assert f.rows[0].event is not None and f.rows[0].event["code"] == f"code{EVENTS - 1}"
    assert not f.complete  # the older rows are still to come: the dashboard backfills

    assert f.backfill() and f.complete
    monkeypatch.setattr(feed_mod, "FIRST_EVENTS", 10**9)
    whole = Feed(long_journal)
    whole.poll()
    assert whole.complete
    assert event_keys(f) == event_keys(whole)
    assert len(event_keys(f)) == shown == len(set(event_keys(f)))
    assert [r.key for r in f.rows] == [r.key for r in whole.rows]
    assert event_keys(f)[: len(first)] == first  # the first screen's rows stay on top
    assert not f.backfill()  # nothing more to make
