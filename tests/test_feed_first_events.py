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
    # the newest lines only: the older ones' JSON was ~40 ms of the first screen
    assert len(f.events) == 300
    held = f.events  # the Reads screen holds the feed's list: it must fill in place
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
    assert f.events is held and f.events == whole.events  # every event (the cost screens)
    assert event_keys(f) == event_keys(whole)
    assert len(event_keys(f)) == shown == len(set(event_keys(f)))
    assert [r.key for r in f.rows] == [r.key for r in whole.rows]
    assert event_keys(f)[: len(first)] == first  # the first screen's rows stay on top
    assert not f.backfill()  # nothing more to make


def _append(root: Path, lines: list[str]) -> None:
    with (root / ".git/vaultwatch/events.jsonl").open("a") as fh:
        fh.writelines(line + "\n" for line in lines)


def _event(i: int) -> str:
    return json.dumps(
        {
            "v": 1,
            "ts": f"2031-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
            "pid": 2,
            "client": "late/1",
            "kind": "rejected",
            "tool": "create_doc",
            "paths": [],
            "code": f"late{i}",
            "message": "no",
        }
    )


def test_events_that_arrive_before_the_older_ones_are_read_keep_their_rows_and_keys(
    long_journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the first read (the newest lines) and the read of the older ones, the journal
    grows: no event is lost or read twice, each row keeps its key (the cursor is kept by key),
    and the rows end as those of a feed that read the journal at once."""
    monkeypatch.setattr(feed_mod, "FIRST_EVENTS", 300)
    f = Feed(long_journal)
    f.poll()
    _append(long_journal, [_event(i) for i in range(3)])
    assert f.poll()
    before = {r.key: r for r in f.rows if r.event is not None}
    assert f.rows[0].event is not None and f.rows[0].event["code"] == "late2"
    assert f.backfill() and f.complete
    after = {r.key: r for r in f.rows if r.event is not None}
    assert all(after.get(k) == r for k, r in before.items())  # same keys, same rows
    monkeypatch.setattr(feed_mod, "FIRST_EVENTS", 10**9)
    whole = Feed(long_journal)
    whole.poll()
    assert f.events == whole.events and len(f.events) == EVENTS + 3
    assert [r.key for r in f.rows] == [r.key for r in whole.rows]


def test_damaged_older_lines_leave_no_row_lost_and_no_key_repeated(
    long_journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys number events in journal order; the older lines are counted before they are
    parsed. Damaged ones (a torn write, a blank line) are no events: the numbers then leave a
    gap, and every row is still there once, in the order of a feed that read it all at once."""
    j = long_journal / ".git/vaultwatch/events.jsonl"
    lines = j.read_text().splitlines()
    lines[10] = lines[10][:25]  # torn
    lines[20] = '{"no": "version"}'
    j.write_text("\n".join([*lines[:30], "", *lines[30:]]) + "\n")  # and a blank line
    monkeypatch.setattr(feed_mod, "FIRST_EVENTS", 300)
    f = Feed(long_journal)
    f.poll()
    first = {r.key: r for r in f.rows if r.event is not None}
    f.backfill()
    _append(long_journal, [_event(0)])
    f.poll()
    keys = [r.key for r in f.rows]
    assert len(keys) == len(set(keys))
    assert all({r.key: r for r in f.rows}.get(k) == r for k, r in first.items())
    monkeypatch.setattr(feed_mod, "FIRST_EVENTS", 10**9)
    whole = Feed(long_journal)
    whole.poll()
    assert f.events == whole.events and len(f.events) == EVENTS - 2 + 1
    assert [(r.time, r.summary) for r in f.rows] == [(r.time, r.summary) for r in whole.rows]
