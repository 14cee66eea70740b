"""The stats screen (`S`) while it counts: drawn at once with its counting state, then the
figures `vaultwatch stats --json` gives for the same period; a period changed while a count
runs says so, and a count that lands after a later one was asked is not shown. And the
dashboard's history, once loaded, is out of the garbage collector's walks (what made the
screen slow to open on a long history).

The counts are held back through the screen's own `events` input (the journal as the
dashboard has read it): a callable that waits for the test before it returns the events."""

from __future__ import annotations

import gc
import json
import subprocess
import threading
from collections.abc import Callable
from typing import Any

import pytest
from textual.widgets import DataTable

from app.ui.dashboard import Dashboard
from app.ui.stats_screen import StatsScreen

from .test_dashboard import until
from .test_screens import screen_text
from .test_stats import VAULTWATCH, scripted  # noqa: F401 (a fixture)

pytestmark = pytest.mark.anyio


def held(app: Dashboard, gates: list[threading.Event]) -> Callable[[], list[dict[str, Any]]]:
    """The dashboard's events, each call waiting for its own gate (the first call the first
    gate, ...): a count stays under way until the test opens its gate."""
    calls = iter(gates)

    def events() -> list[dict[str, Any]]:
        gate = next(calls)
        assert gate.wait(30), "the test never opened this count's gate"
        return list(app.feed.events)

    return events


def cells(table: DataTable[Any]) -> list[dict[str, str]]:
    """Each row of a table as {heading: the text shown}."""
    heads = [c.label.plain for c in table.ordered_columns]
    return [
        dict(zip(heads, (str(c).strip() for c in table.get_row_at(i)), strict=True))
        for i in range(table.row_count)
    ]


def n(v: int) -> str:
    return f"{v:,}"


def week_row(label: str, t: dict[str, Any], tools: list[str]) -> dict[str, str]:
    """A row of the week table as the CLI's JSON counts it."""
    return {
        "week": label,
        "AI": n(t["ai_commits"]),
        **{tool: n(t["tools"].get(tool, 0)) for tool in tools},
        "yours": n(t["owner_commits"]),
        "reverts": n(t["reverts"]),
        "+lines": n(t["added"]),
        "−lines": n(t["removed"]),
        "conflicts": n(t["conflicts"]),
        "rejected": n(sum(t["rejections"].values())),
        "no-ops": n(t["noops"]),
    }


def cli_json(root: Any, since: str) -> dict[str, Any]:
    r = subprocess.run(
        [VAULTWATCH, "stats", str(root), "--since", since, "--json"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def title(app: Dashboard) -> str:
    return screen_text(app).splitlines()[0]


async def test_the_screen_draws_counting_then_the_figures_of_stats_json(
    scripted: dict[str, Any],  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = scripted["root"]
    app = Dashboard(root, poll_seconds=60)
    gate = threading.Event()
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(app.feed.rows))
        screen = StatsScreen(root, events=held(app, [gate]))
        await app.push_screen(screen)
        await pilot.pause(0.2)
        # drawn before anything is counted: the title says so, the tables are empty, the keys
        # are there
        assert screen.stats is None
        assert title(app).strip() == "Write statistics · counting 12 weeks…"
        assert all(t.row_count == 0 for t in screen.query(DataTable))
        assert "Period" in screen_text(app).splitlines()[-1]
        gate.set()
        await until(pilot, lambda: screen.stats is not None)
        await pilot.pause(0.1)

        # then the figures of `vaultwatch stats --since 12w --json`, table by table
        out = cli_json(root, "12w")
        total = out["total"]
        tools = ranked(total["tools"])
        busy = [w for w in reversed(out["weeks"]) if not quiet(w)]
        assert busy, out  # (the scripted writes are this week's)
        assert cells(screen.query_one("#stats-weeks", DataTable)) == [
            *(week_row(w["week"], w, tools) for w in busy),
            week_row("total", total, tools),
        ]
        trend = {
            r["measure"].strip(): r["total"]
            for r in cells(screen.query_one("#stats-trend", DataTable))
        }
        for label, count in (
            ("AI commits", total["ai_commits"]),
            ("your commits", total["owner_commits"]),
            ("reverts", total["reverts"]),
            ("lines added", total["added"]),
            ("lines removed", total["removed"]),
            ("conflicts", total["conflicts"]),
            ("rejections", sum(total["rejections"].values())),
            ("no-ops", total["noops"]),
            *total["rejections"].items(),
        ):
            assert trend[label] == n(count), (label, trend)
        clients = cells(screen.query_one("#stats-clients", DataTable))
        assert [c["client"] for c in clients] == list(total["clients"])
        for row in clients:
            c = total["clients"][row["client"]]
            assert row == {
                "client": row["client"],
                "AI": n(c["ai_commits"]),
                "+lines": n(c["added"]),
                "−lines": n(c["removed"]),
                "conflicts": n(c["conflicts"]),
                "rejected": n(sum(c["rejections"].values())),
                "no-ops": n(c["noops"]),
                "taken back": n(c["reverts"]),
                "tools": ", ".join(f"{c['tools'][k]} {k}" for k in ranked(c["tools"])),
            }
        assert title(app).strip().endswith("(12 weeks, local time)")


def ranked(counts: dict[str, int]) -> list[str]:
    return sorted(counts, key=lambda k: (-counts[k], k))


def quiet(week: dict[str, Any]) -> bool:
    return not any(
        week[k] for k in ("ai_commits", "owner_commits", "conflicts", "noops", "rejections")
    )


async def test_a_period_asked_while_counting_says_so_and_only_the_last_asked_is_shown(
    scripted: dict[str, Any],  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    """`p` twice while the counts run: the title names the period being counted and the
    period the figures below are of; when the all-history count lands first and the 52-week
    one after it, the screen stays on all history (the slower count used to overwrite it)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = scripted["root"]
    app = Dashboard(root, poll_seconds=60)
    first, weeks52, history = threading.Event(), threading.Event(), threading.Event()
    returned = threading.Event()
    events = held(app, [first, weeks52, history])

    def counted() -> list[dict[str, Any]]:
        try:
            return events()
        finally:
            returned.set()

    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(app.feed.rows))
        screen = StatsScreen(root, events=counted)
        await app.push_screen(screen)
        first.set()
        await until(pilot, lambda: screen.stats is not None)
        await pilot.pause(0.1)
        shown = cells(screen.query_one("#stats-weeks", DataTable))
        await pilot.press("p")
        await pilot.pause(0.1)
        assert title(app).strip() == (
            "Write statistics · counting 52 weeks…  (shown: "
            f"{screen.stats and screen.stats.weeks[0].week} – "
            f"{screen.stats and screen.stats.weeks[-1].week} (12 weeks, local time))"
        )
        assert cells(screen.query_one("#stats-weeks", DataTable)) == shown  # the last figures
        await pilot.press("p")
        await pilot.pause(0.1)
        assert title(app).strip().startswith("Write statistics · counting all history…  (shown:")
        returned.clear()
        history.set()
        await until(pilot, lambda: screen.stats is not None and screen.stats.since is None)
        await pilot.pause(0.1)
        assert "all history" in title(app) and "counting" not in title(app)
        # the 52-week count, asked before, lands now: it is not shown
        returned.clear()
        weeks52.set()
        await until(pilot, returned.is_set)
        await pilot.pause(0.5)  # (it counts a few commits: far less than this)
        assert screen.stats is not None and screen.stats.since is None
        assert "all history" in title(app) and "counting" not in title(app)


async def test_the_loaded_history_is_left_out_of_full_collections(
    scripted: dict[str, Any],  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    """Once the feed holds the whole history, its objects are frozen (`gc.freeze`): Python's
    full collections, which came with nearly every screen opened, no longer walk them. They
    are unfrozen when the app exits."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert gc.get_freeze_count() == 0
    app = Dashboard(scripted["root"], poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(app.feed.rows) and app.feed.complete)
        await pilot.pause(0.1)
        assert gc.get_freeze_count() > len(app.feed.rows)
        tracked = {id(o) for o in gc.get_objects()}  # the collector's generations, not frozen
        assert not any(id(r) in tracked or id(r.commit) in tracked for r in app.feed.rows)
    assert gc.get_freeze_count() == 0
