"""Write statistics (`app.services.stats`, `vaultwatch stats`, the stats screen) on scripted vaults whose
counts are known: AI writes by two clients through the real server (the SDK's in-memory client),
the owner's own commit, a revert and an undo, a hash conflict, rejections with two codes and
no-ops; and the interview-prep owner's week (52 append_section, 47 batch, 25 edit_text,
23 create_doc, 15 update_frontmatter, 3 replace_doc) as real git commits with the server's own
trailers."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.services.actions import ActionError
from app.services.stats import compute, period_start, week_of
from app.ui.dashboard import Dashboard
from app.ui.screens.stats_screen import HEADLINE, StatsScreen, short_names
from server.core.git_log import commit_message

from .conftest import VAULTWATCH, git, until
from .desk import screen_text
from .named_clients import as_client
from .settling import settled
from .stats_history import (
    AI_WHO,
    DESKTOP,
    OWNERS_WEEK,
    POLL,
    fast_import,
    numstat,
    open_stats,
    owners_history,
)
from .stats_history import scripted as scripted  # the fixture

pytestmark = pytest.mark.anyio


def _ai_lines(root: Path, shas: list[str]) -> tuple[int, int]:
    counts = [numstat(root, s) for s in shas]
    return sum(a for a, _ in counts), sum(r for _, r in counts)


def check_scripted(out: dict[str, Any], done: dict[str, Any]) -> None:
    """The JSON of the scripted vault against what the script did."""
    root = done["root"]
    total = out["total"]
    assert total["ai_commits"] == 6
    assert total["tools"] == {
        "append_section": 2,
        "create_doc": 1,
        "edit_text": 1,
        "batch": 1,
        "update_frontmatter": 1,
    }
    # the import, the owner's own commit, the revert, the undo
    assert total["owner_commits"] == 4
    assert total["reverts"] == 2
    undone = Counter(total["reverted"])
    # the undo takes back the lines of the batch's append (the hunk it is in) or the
    # frontmatter change: whichever commits wrote hunk 0, named in its Vaultwatch-Undoes
    undo_sha = git(root, "log", "-1", "--format=%H", "--grep=Vaultwatch-Action: undo").strip()
    targets = git(
        root, "log", "-1", "--format=%(trailers:key=Vaultwatch-Undoes,valueonly)", undo_sha
    )
    undo_tools = Counter(done["ai"][t][1] for t in targets.split())
    assert undone == Counter({"append_section": 1}) + undo_tools
    assert (total["added"], total["removed"]) == _ai_lines(root, list(done["ai"]))
    assert total["conflicts"] == 1
    assert total["rejections"] == {"unknown_tag": 2, "no_match": 1}
    assert total["noops"] == 2
    code, desktop = total["clients"]["claude-code"], total["clients"]["claude-ai"]
    assert (code["ai_commits"], desktop["ai_commits"]) == (4, 2)
    assert code["rejections"] == {"unknown_tag": 1, "no_match": 1}
    assert desktop["rejections"] == {"unknown_tag": 1}
    assert (code["conflicts"], desktop["conflicts"]) == (0, 1)
    assert (code["noops"], desktop["noops"]) == (1, 1)
    assert code["reverts"] == 1  # its append, reverted
    assert desktop["reverts"] == sum(undo_tools.values())  # what the undo took back
    mine = [s for s, (c, _) in done["ai"].items() if c == "claude-code"]
    assert (code["added"], code["removed"]) == _ai_lines(root, mine)
    # every week's counts add up to the total, and this week holds them (all made now)
    assert out["weeks"][-1]["week"] == week_of(datetime.now().astimezone())[0]
    for key in ("ai_commits", "owner_commits", "reverts", "conflicts", "noops", "added"):
        assert sum(w[key] for w in out["weeks"]) == total[key]


def test_the_scripted_vaults_counts(scripted: dict[str, Any]) -> None:
    check_scripted(compute(scripted["root"]).as_json(), scripted)


def test_cli_json_is_the_same(scripted: dict[str, Any]) -> None:
    r = subprocess.run(
        [VAULTWATCH, "stats", str(scripted["root"]), "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    check_scripted(out, scripted)
    week = out["weeks"][-1]
    assert week["week"] == week_of(datetime.now().astimezone())[0]
    keys = {"ai_commits", "owner_commits", "reverts", "tools", "added", "removed", "conflicts"}
    keys |= {"rejections", "noops", "clients"}
    assert keys <= set(week) and keys <= set(out["total"])
    assert isinstance(week["tools"]["batch"], int) and week["rejections"]["no_match"] == 1


def test_cli_table(scripted: dict[str, Any]) -> None:
    r = subprocess.run([VAULTWATCH, "stats"], cwd=scripted["root"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Write statistics · ") and "all history" in lines[0]
    head = next(ln for ln in lines if ln.split()[:2] == ["week", "AI"])
    total = next(ln for ln in lines if ln.split()[:1] == ["total"])
    heads, cells = head.split(), total.split()
    assert dict(zip(heads, cells, strict=True))["AI"] == "6"
    assert dict(zip(heads, cells, strict=True))["rejected"] == "3"
    assert dict(zip(heads, cells, strict=True))["append_section"] == "2"
    # the numbers stand under their headings: right-aligned to the heading's end
    end = head.index("conflicts") + len("conflicts")
    assert total[end - 1] == "1" and total[end] == " "
    # the trend: each rejection code under "rejections", with its sparkline (one week: full)
    assert next(ln for ln in lines if ln.split()[:1] == ["unknown_tag"]).split() == [
        "unknown_tag",
        "█",
        "2",
    ]
    client = next(ln for ln in lines if ln.split()[:1] == ["claude-ai"])
    assert "1 batch" in client and "1 update_frontmatter" in client


def test_cli_refusals(tmp_path: Path, scripted: dict[str, Any]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for args, why in (
        ([str(plain)], "is not a vault"),
        ([str(tmp_path / "nowhere")], "is not a folder"),
        ([str(scripted["root"]), "--since", "yesterdayish"], "--since 'yesterdayish'"),
        ([str(scripted["root"]), "--since", "2026-02-30"], "is not a date"),
        ([str(scripted["root"]), "--since", "0w"], "1 or more"),
    ):
        r = subprocess.run([VAULTWATCH, "stats", *args], capture_output=True, text=True)
        assert r.returncode == 1, (args, r.stdout)
        assert len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr
        assert r.stdout == ""


# ------------------------------------------------------------------------------------------------
# --since, and the weeks of a history with dates


@pytest.fixture
def owners_vault(tmp_path: Path) -> Path:
    root = tmp_path / "prep"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "master", str(root)], check=True)
    owners_history(root)
    return root


NOW = datetime(2026, 12, 3, 18, 0).astimezone()  # Thursday of 2026-W49


def test_the_owners_seventeen_days(owners_vault: Path) -> None:
    stats = compute(owners_vault, now=NOW)
    assert [w.week for w in stats.weeks] == ["2026-W47", "2026-W48", "2026-W49"]
    assert stats.total.ai_commits == 272 and stats.total.owner_commits == 3
    assert (stats.total.added, stats.total.removed) == (3908, 153)
    assert stats.total.conflicts == 0 and stats.total.rejected == 0
    w48 = stats.weeks[1].tally
    assert dict(w48.tools) == OWNERS_WEEK
    assert w48.ai_commits == 165
    assert list(stats.clients) == ["claude-ai"]


def test_since_forms(owners_vault: Path) -> None:
    # a week count: this week and the ones before it, from Monday 00:00 local
    assert [w.week for w in compute(owners_vault, "2w", now=NOW).weeks] == ["2026-W48", "2026-W49"]
    assert compute(owners_vault, "1w", now=NOW).total.ai_commits == 53
    assert compute(owners_vault, "2w", now=NOW).total.ai_commits == 165 + 53
    # a date, days, today
    assert compute(owners_vault, "2026-11-23", now=NOW).total.ai_commits == 165 + 53
    assert period_start(owners_vault, "7d", NOW) == NOW - timedelta(days=7)
    assert period_start(owners_vault, "today", NOW) == NOW.replace(hour=0, minute=0)
    # a commit: the period starts after it
    last_w47 = git(
        owners_vault,
        "rev-list",
        "-1",
        f"--before={int(datetime(2026, 11, 23).astimezone().timestamp())}",
        "HEAD",
    ).strip()
    after = compute(owners_vault, last_w47, now=NOW)
    assert after.total.ai_commits == 165 + 53
    assert after.total.owner_commits == 2
    with pytest.raises(ActionError, match="not today"):
        compute(owners_vault, "lastweek", now=NOW)
    # quiet weeks stay in the time line (zeros), so a sparkline is true to time
    long = compute(owners_vault, "6w", now=NOW)
    assert [w.tally.ai_commits for w in long.weeks] == [0, 0, 0, 54, 165, 53]
    assert long.weeks[0].monday == date(2026, 10, 26)


def test_an_empty_repo_and_an_empty_journal(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    stats = compute(root, now=NOW)
    assert [w.week for w in stats.weeks] == ["2026-W49"] and stats.total.ai_commits == 0
    r = subprocess.run([VAULTWATCH, "stats", str(root), "--json"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["total"]["ai_commits"] == 0


def test_cli_since(owners_vault: Path) -> None:
    def total(*since: str) -> dict[str, Any]:
        r = subprocess.run(
            [VAULTWATCH, "stats", str(owners_vault), "--json", *since],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        out: dict[str, Any] = json.loads(r.stdout)
        return out

    out = total("--since", "2026-11-23")
    assert out["total"]["ai_commits"] == 165 + 53 and out["weeks"][0]["week"] == "2026-W48"
    assert out["weeks"][0]["tools"] == OWNERS_WEEK
    assert total()["total"]["ai_commits"] == 272
    first_owner = git(owners_vault, "log", "--reverse", "--format=%H", "--author=Owner").split()[0]
    assert total("--since", first_owner)["total"]["owner_commits"] == 2


# ------------------------------------------------------------------------------------------------
# the screen (S), under Pilot


def _row(text: str, first: str) -> list[str]:
    """The screen line whose first word is `first`, as words."""
    return next(ln.split() for ln in text.splitlines() if ln.split()[:1] == [first])


def _from(text: str, word: str, n: int) -> list[str]:
    """`n` words from `word` on, in the first line that has it (tables may sit side by side)."""
    words = next(ln.split() for ln in text.splitlines() if word in ln.split())
    return words[words.index(word) : words.index(word) + n]


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_the_screen_shows_the_owners_week(
    owners_vault: Path, settings_dir: Path, size: tuple[int, int]
) -> None:
    app = Dashboard(owners_vault, poll_seconds=0.1)
    app.today = NOW.date()
    async with app.run_test(size=size) as pilot:
        await open_stats(app, pilot)
        text = screen_text(app)
        heads = _row(text, "week")
        # the measures a week is read for come first, in sight from 80 columns: then the tools
        assert heads[:9] == [*HEADLINE], text
        w48 = dict(zip(heads, _row(text, "2026-W48"), strict=False))
        assert (w48["AI"], w48["yours"], w48["−lines"]) == ("165", "1", "119")
        total = dict(zip(heads, _row(text, "total"), strict=False))
        assert (total["+lines"], total["−lines"], total["yours"]) == ("3,908", "153", "3")
        # his week per tool: under the tools' names where the whole table fits (200 columns),
        # else under short ones the line below the table explains; `→` brings the next column
        # into sight, the week staying in its column
        names = short_names(list(OWNERS_WEEK))
        full = size[0] >= 200
        legend = " ".join(ln.strip() for ln in text.splitlines() if "=" in ln)
        if full:
            assert set(OWNERS_WEEK) <= set(heads), text
        else:
            assert "append = append_section" in legend and "update = update_frontmatter" in legend
        seen: dict[str, str] = {}
        for _ in range(len(HEADLINE) + len(OWNERS_WEEK)):
            moved = screen_text(app)
            heads = _row(moved, "week")
            row = _row(moved, "2026-W48")
            assert heads[0] == "week" and row[0] == "2026-W48", moved
            seen.update(zip(heads[1 : len(row)], row[1:], strict=False))
            await pilot.press("right")
            await settled(pilot, "the next column in sight", ignore=POLL)
        for tool, n in OWNERS_WEEK.items():
            assert seen[tool if full else names[tool]] == str(n), (tool, seen)
        # each measure's sparkline over 12 weeks, with its total
        await pilot.press("tab")
        await settled(pilot, "the trend table in sight", ignore=POLL)
        text = screen_text(app)
        assert re.search(r"AI commits +▃█▃ +272 ", text), text
        assert re.search(r"  update_frontmatter +█ +15 ", text), text


async def test_the_screen_counts_the_scripted_vault_and_follows_it(
    scripted: dict[str, Any], settings_dir: Path
) -> None:
    root = scripted["root"]
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await open_stats(app, pilot)
        text = screen_text(app)
        total = dict(zip(_row(text, "week"), _row(text, "total"), strict=True))
        assert total["AI"] == "6" and total["yours"] == "4" and total["reverts"] == "2"
        assert (total["conflicts"], total["rejected"], total["no-ops"]) == ("1", "3", "2")
        assert _from(text, "unknown_tag", 3) == ["unknown_tag", "█", "2"]
        assert _from(text, "no_match", 3) == ["no_match", "█", "1"]
        code = _from(text, "claude-code", 9)
        assert code[:8] == [
            "claude-code",
            "4",
            *_counts(root, scripted, "claude-code"),
            "0",
            "2",
            "1",
            "1",
        ]
        assert _from(text, "claude-ai", 2) == ["claude-ai", "2"]
        # a new rejection through the real server: the open screen counts it
        async with as_client(root, DESKTOP) as s:
            await s.error("create_doc", path="notes/g.md", body="# G\n", tags=["still-no"])
        await until(pilot, lambda: screen.stats is not None and screen.stats.total.rejected == 4)
        await settled(pilot, "the new figures drawn", ignore=POLL)
        assert _from(screen_text(app), "unknown_tag", 3) == ["unknown_tag", "█", "3"]
        # the period goes round: 52 weeks, all history, 12 weeks
        await pilot.press("p")
        await until(pilot, lambda: screen.stats is not None and screen.stats.since == "52w")
        await pilot.press("p")
        await until(pilot, lambda: screen.stats is not None and screen.stats.since is None)
        assert "all history" in screen_text(app).splitlines()[0]
        await pilot.press("escape")
        assert not isinstance(app.screen, StatsScreen)


def _counts(root: Path, done: dict[str, Any], client: str) -> list[str]:
    added, removed = _ai_lines(root, [s for s, (c, _) in done["ai"].items() if c == client])
    return [f"{added:,}", f"{removed:,}"]


def test_the_journal_read_of_some_kinds(tmp_path: Path) -> None:
    """`read_all(path, kinds)`: exactly the events of those kinds, in order; a line that only
    mentions a kind (a path named "conflict") and a torn last line are not events of it."""
    from server.write.journal import Conflict, Journal, Noop, Read, Rejected, read_all

    path = tmp_path / "events.jsonl"
    j = Journal(path, client="c/1")
    j.append(Read(tool="read_doc", paths=["conflict.md"], chars=3, tokens=1))
    j.append(Conflict(tool="replace_doc", path="a.md", expected="x", actual="y"))
    j.append(Noop(tool="edit_text", paths=["b.md"], chars=10, tokens=3))
    j.append(
        Rejected(
            tool="create_doc", paths=["noop.md"], code="unknown_tag", message="m", hint="h", diff=""
        )
    )
    with path.open("ab") as fh:
        fh.write(b'{"v": 1, "kind": "conflict", "ts": "2026')  # a writer mid-line
    got = read_all(path, ("conflict", "noop"))
    assert [e["kind"] for e in got] == ["conflict", "noop"]
    assert [e["kind"] for e in read_all(path)] == ["read", "conflict", "noop", "rejected"]


def test_a_commit_authored_before_the_period_still_counts(owners_vault: Path) -> None:
    """A commit after the --since commit whose author date is older (a cherry-pick, a rebase)
    is counted in its week, never dropped from the totals."""
    head = git(owners_vault, "rev-parse", "HEAD").strip()
    old = int(datetime(2026, 10, 28, 12).astimezone().timestamp())
    msg = commit_message(
        "append_section: old.md", {"Vaultwatch-Tool": "append_section", "Vaultwatch-Client": "x/1"}
    )
    fast_import(owners_vault, [(old, AI_WHO, msg, "old.md", "- a\n")], parent=head)
    stats = compute(owners_vault, head, now=NOW)
    assert stats.total.ai_commits == 1
    assert [w.week for w in stats.weeks if not w.quiet] == ["2026-W44"]


def test_line_counts_are_kept_per_commit(owners_vault: Path) -> None:
    """The AI's line counts are asked of git once per commit and kept in the state folder
    (0600, shas and numbers only); a later run counts the same, and a commit made since is
    diffed and added. A damaged or foreign file is ignored and rewritten, never trusted."""
    from app.services.stats import LINES_FILE

    kept = owners_vault / ".git" / "vaultwatch" / LINES_FILE
    first = compute(owners_vault, now=NOW).as_json()
    assert (first["total"]["added"], first["total"]["removed"]) == (3908, 153)
    assert kept.stat().st_mode & 0o777 == 0o600
    data = json.loads(kept.read_text())
    ai = git(owners_vault, "log", "--format=%H", "--grep=Vaultwatch-Tool").split()
    assert len(ai) == 272 and sorted(data["lines"]) == sorted(ai)  # every AI commit, only them
    assert all(re.fullmatch(r"[0-9a-f]{40}", s) for s in data["lines"])
    assert compute(owners_vault, now=NOW).as_json() == first

    # a commit since: diffed once, counted with the kept ones
    head = git(owners_vault, "rev-parse", "HEAD").strip()
    msg = commit_message(
        "append_section: new.md", {"Vaultwatch-Tool": "append_section", "Vaultwatch-Client": "x/1"}
    )
    at = int(NOW.timestamp()) - 60
    fast_import(owners_vault, [(at, AI_WHO, msg, "new.md", "- a\n- b\n")], parent=head)
    after = compute(owners_vault, now=NOW).as_json()
    assert (after["total"]["added"], after["total"]["removed"]) == (3910, 153)
    assert len(json.loads(kept.read_text())["lines"]) == 273

    # the file is what is read: a count put there is used (git is not asked again) ...
    data = json.loads(kept.read_text())
    new = git(owners_vault, "rev-parse", "HEAD").strip()
    data["lines"][new] = [1000, 0]
    kept.write_text(json.dumps(data))
    assert compute(owners_vault, now=NOW).total.added == 3908 + 1000
    # ... but a damaged, foreign or malformed one is not: git counts again and it is rewritten
    for bad in (
        "{not json",
        json.dumps({"v": 999, "lines": {new: [5, 5]}}),
        json.dumps({"v": 1, "lines": {new: ["5", -1]}}),
        json.dumps([1, 2]),
    ):
        kept.write_text(bad)
        assert compute(owners_vault, now=NOW).as_json() == after
        assert json.loads(kept.read_text())["lines"][new] == [2, 0]


def test_line_counts_of_a_rewritten_history_are_dropped(owners_vault: Path) -> None:
    """Counts of commits no longer in the history (a rewritten branch) leave the kept file on
    the next whole-history count; a count over part of it keeps them."""
    from app.services.stats import LINES_FILE

    kept = owners_vault / ".git" / "vaultwatch" / LINES_FILE
    compute(owners_vault, now=NOW)
    data = json.loads(kept.read_text())
    gone = "0" * 40
    data["lines"][gone] = [1, 1]
    kept.write_text(json.dumps(data))
    head = git(owners_vault, "rev-parse", "HEAD").strip()
    msg = commit_message("edit_text: z.md", {"Vaultwatch-Tool": "edit_text"})
    fast_import(owners_vault, [(int(NOW.timestamp()) - 60, AI_WHO, msg, "z.md", "z\n")], head)
    compute(owners_vault, "today", now=NOW)
    assert gone in json.loads(kept.read_text())["lines"]
    compute(owners_vault, now=NOW)
    lines = json.loads(kept.read_text())["lines"]
    assert gone not in lines and len(lines) == 273
