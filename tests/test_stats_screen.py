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
from datetime import date, datetime, time, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from app.ui.dashboard import Dashboard
from app.ui.screens.stats_screen import HEADLINE, StatsScreen, short_names
from server.core.git_log import commit_message
from server.core.state_files import state_dir
from server.write.journal import Conflict, Journal, Noop, Rejected

from .conftest import VAULTWATCH, until
from .desk import screen_text
from .settling import settled
from .stats_history import AI_WHO, OWNER_WHO, fast_import, open_stats
from .stats_history import scripted as scripted  # the fixture

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


def week_row(
    label: str, t: dict[str, Any], tools: list[str], names: dict[str, str]
) -> dict[str, str]:
    """A row of the week table as the CLI's JSON counts it (the tools under `names`)."""
    return {
        "week": label,
        "AI": n(t["ai_commits"]),
        **{names[tool]: n(t["tools"].get(tool, 0)) for tool in tools},
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
    scripted: dict[str, Any],
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
        # drawn before anything is counted: the title says so, the tables are empty, the keys
        # are there (waited for: under load the footer is drawn a frame later)
        await until(pilot, lambda: "Period" in screen_text(app).splitlines()[-1])
        assert screen.stats is None
        assert title(app).strip() == "Write statistics · counting 12 weeks…"
        assert all(t.row_count == 0 for t in screen.query(DataTable))
        assert "Period" in screen_text(app).splitlines()[-1]
        gate.set()
        await until(pilot, lambda: screen.stats is not None)
        await settled(pilot, "the figures drawn")

        # then the figures of `vaultwatch stats --since 12w --json`, table by table
        out = cli_json(root, "12w")
        total = out["total"]
        tools = ranked(total["tools"])
        busy = [w for w in reversed(out["weeks"]) if not quiet(w)]
        assert busy, out  # (the scripted writes are this week's)
        weeks = screen.query_one("#stats-weeks", DataTable)
        # the headline measures, then the tools, busiest first: at 120 columns under short
        # names (the whole table does not fit with the full ones), explained under the table
        names = short_names(tools)
        assert [c.label.plain for c in weeks.ordered_columns] == [
            *HEADLINE,
            *(names[t] for t in tools),
        ]
        assert names["update_frontmatter"] == "update"
        legend = str(screen.query_one("#stats-legend", Static).render())
        assert "update = update_frontmatter" in legend and "append = append_section" in legend
        assert cells(weeks) == [
            *(week_row(w["week"], w, tools, names) for w in busy),
            week_row("total", total, tools, names),
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
            }
        # each client's tools: their full names fit at 120 columns
        assert cells(screen.query_one("#stats-client-tools", DataTable)) == [
            {
                "client": k,
                "tools": ", ".join(f"{c['tools'][t]} {t}" for t in ranked(c["tools"])),
            }
            for k, c in total["clients"].items()
        ]
        assert title(app).strip().endswith("(12 weeks, local time)")


def ranked(counts: dict[str, int]) -> list[str]:
    return sorted(counts, key=lambda k: (-counts[k], k))


def quiet(week: dict[str, Any]) -> bool:
    return not any(
        week[k] for k in ("ai_commits", "owner_commits", "conflicts", "noops", "rejections")
    )


async def test_a_period_asked_while_counting_says_so_and_only_the_last_asked_is_shown(
    scripted: dict[str, Any],
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
        await settled(pilot, "the 12 weeks drawn")
        shown = cells(screen.query_one("#stats-weeks", DataTable))
        await pilot.press("p")
        # (its count is held at its gate: the title is what changes)
        await until(
            pilot,
            lambda: title(app).strip().startswith("Write statistics · counting 52 weeks…"),
            "the title to say it counts 52 weeks",
            describe=lambda: title(app),
        )
        assert title(app).strip() == (
            "Write statistics · counting 52 weeks…  (shown: "
            f"{screen.stats and screen.stats.weeks[0].week} – "
            f"{screen.stats and screen.stats.weeks[-1].week} (12 weeks, local time))"
        )
        assert cells(screen.query_one("#stats-weeks", DataTable)) == shown  # the last figures
        await pilot.press("p")
        await until(
            pilot,
            lambda: title(app).strip().startswith("Write statistics · counting all history…"),
            "the title to say it counts all history",
            describe=lambda: title(app),
        )
        assert title(app).strip().startswith("Write statistics · counting all history…  (shown:")
        returned.clear()
        history.set()
        await until(pilot, lambda: screen.stats is not None and screen.stats.since is None)
        await until(
            pilot,
            lambda: "all history" in title(app) and "counting" not in title(app),
            "the title to say all history",
            describe=lambda: title(app),
        )
        assert "all history" in title(app) and "counting" not in title(app)
        # the 52-week count, asked before, lands now: it is not shown
        landed = screen.landed
        returned.clear()
        weeks52.set()
        await until(pilot, returned.is_set)
        # its answer came back to the screen (and was dropped), and what that drew is drawn
        await until(
            pilot,
            lambda: screen.landed > landed,
            "the 52-week count to land",
            describe=lambda: (screen.landed, title(app)),
        )
        await pilot.pause()
        assert screen.stats is not None and screen.stats.since is None
        assert "all history" in title(app) and "counting" not in title(app)


async def test_the_loaded_history_is_left_out_of_full_collections(
    scripted: dict[str, Any],
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

        def tracked_rows() -> int:  # rows (or their commits) in the collector's generations
            tracked = {id(o) for o in gc.get_objects()}
            return sum(id(r) in tracked or id(r.commit) in tracked for r in app.feed.rows)

        # frozen when the app is told the feed changed, after it is complete (the freeze count
        # alone says nothing: what was alive at mount is frozen already, before any history)
        await until(
            pilot,
            lambda: tracked_rows() == 0,
            "the loaded history frozen",
            describe=lambda: (tracked_rows(), len(app.feed.rows), gc.get_freeze_count()),
        )
        assert gc.get_freeze_count() > len(app.feed.rows)
    assert gc.get_freeze_count() == 0


# ------------------------------------------------------------------------------------------------
# every table fits the terminal: a year of nine tools by four clients, one with a long name

TOOLS = (
    "append_section",
    "update_frontmatter",
    "replace_section",
    "create_doc",
    "edit_text",
    "batch",
    "replace_doc",
    "move_doc",
    "delete_doc",
)
LONG = "obsidian-copilot-self-hosted-assistant-bridge"  # 45 cells
CLIENTS = ("claude-code/2.1.0", f"{LONG}/3.4.5", "claude-ai/0.9.1", "笔记助手/1.0")
TODAY = date(2026, 12, 3)  # a Thursday (2026-W49); the screen counts to its noon


@pytest.fixture
def busy_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """60 weeks up to TODAY: 6 AI commits a week (every tool, every client), the owner's one,
    and each client's conflicts, rejections and no-ops in the journal this week."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "busy"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "master", str(root)], check=True)
    noon = datetime.combine(TODAY, time(11)).astimezone()
    commits = []
    lines: dict[str, list[str]] = {}
    for k in range(60):
        for i in range(7):
            at = noon - timedelta(weeks=k, hours=i)
            path = f"notes/n{i}.md"
            text = lines.setdefault(path, [])
            text += [f"line {k}.{i}.{n}\n" for n in range(3 + i)]
            if i == 6:
                commits.append((int(at.timestamp()), OWNER_WHO, "mine\n", path, "".join(text)))
                continue
            tool, client = TOOLS[(k + i) % len(TOOLS)], CLIENTS[(k + i) % len(CLIENTS)]
            msg = commit_message(
                f"{tool}: {path}", {"Vaultwatch-Tool": tool, "Vaultwatch-Client": client}
            )
            commits.append((int(at.timestamp()), AI_WHO, msg, path, "".join(text)))
    commits.sort(key=lambda c: c[0])
    fast_import(root, commits)
    journal = state_dir(root) / "events.jsonl"
    for client in CLIENTS:
        j = Journal(journal, client=client)
        j.append(Conflict("replace_doc", "notes/n1.md", "a" * 16, "b" * 16))
        j.append(Rejected("create_doc", ["x.md"], "unknown_tag", "m", "h", ""))
        j.append(Noop("update_frontmatter", ["notes/n2.md"], 10, 3))
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    for e in events:
        e["ts"] = f"{TODAY - timedelta(days=1)}T10:00:00.000Z"
    journal.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    return root


def fits(app: Dashboard, table: DataTable[Any]) -> None:
    """Every column of `table` in sight: the table within the terminal, and no sideways scroll."""
    assert table.region.right <= app.size.width, (table.id, table.region, app.size)
    wide = table.virtual_size.width
    assert wide <= table.scrollable_content_region.width, (table.id, wide, table.size)


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_every_table_fits_the_terminal(busy_vault: Path, size: tuple[int, int]) -> None:
    """The week table starts with the measures a week is read for (the tools after them,
    sideways; `→` brings the next column), the trend keeps its totals over 52 weeks and all
    history (the sparkline takes what is left), and the client tables fit, a long client name
    cut at its end where it must, as the timeline cuts it."""
    app = Dashboard(busy_vault, poll_seconds=60)
    app.today = TODAY
    async with app.run_test(size=size) as pilot:
        screen = await open_stats(app, pilot)
        weeks = screen.query_one("#stats-weeks", DataTable)
        for since in ("12w", "52w", None):

            def counted(s: str | None = since) -> bool:
                return screen.stats is not None and screen.stats.since == s

            await until(pilot, counted)
            await settled(pilot, f"the figures of {since or 'all history'} drawn")
            assert screen.stats is not None
            heads = [c.label.plain for c in weeks.ordered_columns]
            assert heads[: len(HEADLINE)] == [*HEADLINE]
            columns = weeks.ordered_columns[: len(HEADLINE)]
            headline = sum(c.get_render_width(weeks) for c in columns)
            assert headline <= weeks.scrollable_content_region.width, (since, headline, weeks.size)
            assert weeks.region.right <= size[0]
            line = _row(screen_text(app), "week")
            assert line[: len(HEADLINE)] == [*HEADLINE], (since, line)
            # a week table cut at the right says so in its heading, not by a scrollbar alone
            heading = next(ln for ln in screen_text(app).splitlines() if "per week" in ln)
            cut = weeks.max_scroll_x > 0
            assert ("more columns to the right" in heading) == cut, (size, since, heading)
            trend = screen.query_one("#stats-trend", DataTable)
            assert [c.label.plain for c in trend.ordered_columns][-1] == "total"
            totals = {r["measure"].strip(): r["total"] for r in cells(trend)}
            assert totals["AI commits"] == f"{screen.stats.total.ai_commits:,}"
            for id_ in ("#stats-trend", "#stats-clients", "#stats-client-tools"):
                fits(app, screen.query_one(id_, DataTable))
            await pilot.press("p")
        names = [r["client"] for r in cells(screen.query_one("#stats-clients", DataTable))]
        long = next(n for n in names if n.startswith("obsid"))
        # cut as the timeline cuts clients (`Distinct.clients`: at the end, `obsidian-…`), no
        # longer in the middle (`…bridge`): one rule for a client on every screen (issue 33)
        assert long == LONG or (long.endswith("…") and LONG.startswith(long[:-1])), names
        assert "笔记助手" in names and "claude-code" in names
        # sideways a column at a time, the week staying in its column
        weeks.focus()
        await pilot.pause()
        presses = 0
        while weeks.scroll_x < weeks.max_scroll_x:
            before = weeks.scroll_x
            await pilot.press("right")
            # the scroll lands on the next refresh (scroll_to), not with the key's handling
            moved = partial(lambda b: weeks.scroll_x > b, before)
            await until(
                pilot,
                moved,
                "a column scrolled",
                describe=lambda: (weeks.scroll_x, weeks.max_scroll_x),
            )
            presses += 1
            assert presses <= len(weeks.ordered_columns), "a press moves a column"
        await pilot.press("left")
        await until(
            pilot,
            lambda: weeks.scroll_x < weeks.max_scroll_x or weeks.max_scroll_x == 0,
            "a column back",
            describe=lambda: (weeks.scroll_x, weeks.max_scroll_x),
        )


def _row(text: str, first: str) -> list[str]:
    return next(ln.split() for ln in text.splitlines() if ln.split()[:1] == [first])


async def test_a_period_no_assistant_wrote_in_says_so(make_vault: Any) -> None:
    """The per-client table was headings over nothing."""
    root = make_vault({"a.md": "# A\n"})
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_stats(app, pilot)
        await until(pilot, lambda: screen.stats is not None)
        await settled(pilot, "the figures drawn")
        note = screen.query_one("#stats-no-clients", Static)
        assert note.display and "no assistant wrote" in str(note.render())
        assert not screen.query_one("#stats-clients", DataTable).display


async def test_a_recount_with_the_same_figures_keeps_the_owners_column(busy_vault: Path) -> None:
    """The history read after the first paint makes the screen count again a second after it
    opened; the figures were the same, yet the week table was filled again and jumped back to
    its first column while the owner scrolled sideways (fresh-clone run 25). Now a count that
    changes nothing leaves the table as it is."""
    app = Dashboard(busy_vault, poll_seconds=60)
    app.today = TODAY
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_stats(app, pilot)
        weeks = screen.query_one("#stats-weeks", DataTable)
        await until(pilot, lambda: screen.stats is not None and weeks.max_scroll_x > 0)
        weeks.focus()
        await pilot.press("right")
        await until(pilot, lambda: weeks.scroll_x > 0, "a column scrolled")
        at, landed = weeks.scroll_x, screen.landed
        screen.count(quietly=True)  # what the backfill's change of the feed asks for
        await until(pilot, lambda: screen.landed > landed, "the count again")
        await settled(pilot, "the count drawn")
        assert weeks.scroll_x == at, (weeks.scroll_x, at)
