"""What the AI reads (issue 18): the notes it reads most, the notes it has not read in N days,
the cost per local day per client and per tool, and the get_context preview with its diff
since the owner last marked it reviewed. Real vaults in real git, the real server through the
SDK's in-memory client, journal events made by calling the real read tools (their times moved
where a test needs days to pass, as the snapshot tests pin them)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.types import Implementation
from rich.cells import cell_len

from app import cli
from app.services.context_preview import REVIEWED, load_reviewed, mark_reviewed, preview, readable
from server.core.state_files import state_dir
from server.protocol.tools import build_server
from server.services.context import context_text
from server.services.reads import (
    context_cost,
    cost_per_day,
    most_read,
    not_read,
    note_reads,
    reads_report,
    vault_notes,
)
from server.vault import Vault
from server.write.journal import estimate_tokens, parse_time, read_all

from .conftest import git

if TYPE_CHECKING:
    from app.ui.screens.reads import ReadsScreen

pytestmark = pytest.mark.anyio

CONFIG = """\
private: ["private/**"]
types:
  week: {folder: weeks, dates: [start]}
context:
  - rules
  - {title: This week, type: week, latest: 1}
  - {title: Recent, recent: 5}
"""
SECRET = "PRIVATE-SALARY-93000"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": CONFIG,
            "CLAUDE.md": "# Rules\nRead before you write.\n",
            "weeks/w1.md": "---\nstart: 2026-11-30\n---\n# Week\n\n## Log\n- Mon: mock\n",
            "study/a.md": "# A\n\nalpha notes about caching\n",
            "study/b.md": "# B\n\nbeta notes about caching\n",
            "study/c.md": "# C\n\ngamma notes\n",
            "项目笔记/二零二六年第四季度/关于离线同步与冲突解决的学习笔记.md": "# 离线同步\n\n冲突解决\n",
            "private/salary.md": f"# Salary\n\n{SECRET} caching\n",
        }
    )


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def text(self, tool: str, **args: Any) -> str:
        """The text the client received (what the journal's estimate is of)."""
        r = await self.client.call_tool(tool, args)
        assert not r.is_error, r.content
        return r.content[0].text  # type: ignore[union-attr]


@asynccontextmanager
async def client(
    root: Path, name: str = "claude-code", version: str = "1"
) -> AsyncIterator[Session]:
    vault = Vault(root)
    try:
        async with Client(
            build_server(vault),
            raise_exceptions=True,
            client_info=Implementation(name=name, version=version),
        ) as c:
            yield Session(c)
    finally:
        vault.close()


def journal(root: Path) -> Path:
    return state_dir(root) / "events.jsonl"


def reads(root: Path) -> list[dict[str, Any]]:
    return [e for e in read_all(journal(root)) if e["kind"] == "read"]


def redate(root: Path, when: dict[int, datetime]) -> None:
    """Move the journal's own timestamps of some read events (by their order among reads):
    the events stay the real tools' events, only days pass."""
    lines = journal(root).read_text(encoding="utf-8").splitlines()
    n = -1
    out = []
    for line in lines:
        e = json.loads(line)
        if e.get("kind") == "read":
            n += 1
            if n in when:
                e["ts"] = when[n].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        out.append(json.dumps(e, ensure_ascii=False))
    journal(root).write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.fixture
def tz(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The owner lives in UTC+8: a local day is not the journal's UTC day."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# -- what the server journals -------------------------------------------------------------------


async def test_every_read_tool_journals_the_notes_it_named_client_tool_and_tokens(
    vault: Path,
) -> None:
    async with client(vault, "desk") as s:
        texts = {
            "get_context": await s.text("get_context"),
            "list_docs": await s.text("list_docs", folder="study"),
            "read_doc": await s.text("read_doc", path="study/a.md"),
            "search_text": await s.text("search_text", query="caching"),
            "list_tags": await s.text("list_tags"),
        }
    events = {e["tool"]: e for e in reads(vault)}
    assert set(events) == set(texts)
    for tool, text in texts.items():
        e = events[tool]
        assert e["client"] == "desk/1"
        assert e["chars"] == len(text) and e["tokens"] == estimate_tokens(text), tool
    # the notes each result named: a listing's and a search's too (they were [] for list_docs)
    assert sorted(events["list_docs"]["paths"]) == ["study/a.md", "study/b.md", "study/c.md"]
    assert events["read_doc"]["paths"] == ["study/a.md"]
    assert sorted(events["search_text"]["paths"]) == ["study/a.md", "study/b.md"]
    assert events["list_tags"]["paths"] == []
    # get_context names its rules file, the week it shows, and the recent notes it lists
    ctx = events["get_context"]["paths"]
    assert ctx[:2] == ["CLAUDE.md", "weeks/w1.md"] and "study/c.md" in ctx
    for e in events.values():
        assert not any(p.startswith("private/") for p in e["paths"])


async def test_a_frontmatter_field_called_path_is_not_a_note_read(make_vault: Any) -> None:
    root = make_vault({"n.md": "---\npath: elsewhere/x.md\n---\n# N\n"})
    async with client(root) as s:
        await s.text("list_docs")
    assert reads(root)[0]["paths"] == ["n.md"]


# -- most read, not read ------------------------------------------------------------------------


async def test_most_read_order_counts_tokens_last_read_and_clients(vault: Path) -> None:
    got: dict[str, list[str]] = {}
    async with client(vault, "claude-code") as s:
        for path in ["study/a.md", "study/a.md", "study/b.md", "study/a.md"]:
            got.setdefault(path, []).append(await s.text("read_doc", path=path))
    async with client(vault, "claude-desktop") as s:
        for path in ["study/b.md", "study/c.md"]:
            got.setdefault(path, []).append(await s.text("read_doc", path=path))
    v = Vault(vault)
    try:
        report = reads_report(v, read_all(journal(vault)))
    finally:
        v.close()
    order = [(n.path, n.reads) for n in report.most]
    assert order == [("study/a.md", 3), ("study/b.md", 2), ("study/c.md", 1)]
    a, b = report.most[0], report.most[1]
    assert round(a.tokens) == sum(estimate_tokens(t) for t in got["study/a.md"])
    assert list(b.clients) == ["claude-code", "claude-desktop"]  # as Stats names them
    assert a.last is not None and b.last is not None and b.last > a.last
    assert a.as_json()["tools"] == ["read_doc"]


async def test_a_listings_tokens_are_shared_by_the_notes_it_named(vault: Path) -> None:
    async with client(vault) as s:
        text = await s.text("list_docs", folder="study")
    rows = note_reads(reads(vault), lambda p: False)
    assert {p: n.reads for p, n in rows.items()} == dict.fromkeys(
        ["study/a.md", "study/b.md", "study/c.md"], 1
    )
    assert round(sum(n.tokens for n in rows.values())) == estimate_tokens(text)


async def test_not_read_in_n_days_by_the_journals_own_times(vault: Path) -> None:
    async with client(vault) as s:
        await s.text("read_doc", path="study/a.md")
        await s.text("read_doc", path="study/b.md")
        await s.text("read_doc", path="CLAUDE.md")
    now = datetime.now().astimezone()
    redate(vault, {0: now - timedelta(days=10), 1: now - timedelta(days=2)})
    events = read_all(journal(vault))
    v = Vault(vault)
    try:
        in7 = [u.path for u in reads_report(v, events, days=7, now=now).unread]
        in14 = reads_report(v, events, days=14, now=now).unread
    finally:
        v.close()
    never = [
        "study/c.md",
        "weeks/w1.md",
        "项目笔记/二零二六年第四季度/关于离线同步与冲突解决的学习笔记.md",
    ]
    # never read first, then the longest unread; b (2 days) and the rules (today) are read
    assert sorted(in7[:3]) == sorted(never) and in7[3:] == ["study/a.md"]
    assert sorted(u.path for u in in14) == sorted(never)
    assert all(u.last is None for u in in14)
    a = next(u for u in reads_report_of(vault, 7, now).unread if u.path == "study/a.md")
    assert a.last is not None and (now - a.last).days == 10


async def test_a_moved_note_keeps_its_reads_under_its_new_name(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Moving a note in the dashboard made it 'never read' and dropped it from the most read.
    A note made at the old name afterwards is a new note: the old reads are not its."""
    from app.services.move_action import apply_move, plan_move

    async with client(vault) as s:
        await s.text("read_doc", path="study/a.md")
        await s.text("read_doc", path="study/a.md")
    # git's commit times have whole seconds, and a move in a read's second counts as after it:
    # the moves are dated in the second of the last read (explicitly, however long they take)
    read_at = parse_time(read_all(state_dir(vault) / "events.jsonl", kinds={"read"})[-1]["ts"])
    assert read_at is not None
    second = int(read_at.timestamp())
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{second} +0000")
    monkeypatch.setenv("GIT_AUTHOR_DATE", f"@{second} +0000")
    apply_move(vault, plan_move(vault, "study/a.md", "archive/a-moved.md"))
    apply_move(vault, plan_move(vault, "archive/a-moved.md", "archive/a-again.md"))
    (vault / "study/a.md").write_text("# A new note at the old name\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "a new a.md")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    # the read of the new note must fall in a later second than the moves (the server stamps
    # it with its clock): the one wait left is for the clock to pass that second, bounded
    deadline = time.monotonic() + 5
    while time.time() < second + 1:
        assert time.monotonic() < deadline, f"the clock did not pass {second}: {time.time()}"
        time.sleep(0.05)
    async with client(vault) as s:
        await s.text("read_doc", path="study/a.md")  # the new one, read once
    now = datetime.now().astimezone()
    report = reads_report_of(vault, 7, now)
    most = {n.path: n.reads for n in report.most}
    assert most["archive/a-again.md"] == 2 and most["study/a.md"] == 1, most
    assert "archive/a-again.md" not in [u.path for u in report.unread]


def reads_report_of(root: Path, days: int, now: datetime) -> Any:
    v = Vault(root)
    try:
        return reads_report(v, read_all(journal(root)), days=days, now=now)
    finally:
        v.close()


# -- cost per day ---------------------------------------------------------------------------------


async def test_per_day_per_client_and_per_tool_sums_are_the_reads_tokens(
    vault: Path, tz: None
) -> None:
    async with client(vault, "claude-code") as s:
        code = [await s.text("read_doc", path="study/a.md"), await s.text("get_context")]
    async with client(vault, "claude-desktop") as s:
        desk = [
            await s.text("search_text", query="caching"),
            await s.text("read_doc", path="study/b.md"),
        ]
    # the first two days ago (local time), the rest today
    ago = datetime.now().astimezone() - timedelta(days=2)
    redate(vault, {0: ago, 1: ago})
    per = cost_per_day(read_all(journal(vault)))
    assert len(per.days) == 30 and per.days[-1] == datetime.now().astimezone().date()
    tok = [estimate_tokens(t) for t in code + desk]
    assert per.tokens[-3] == tok[0] + tok[1] and per.tokens[-1] == tok[2] + tok[3]
    assert sum(per.tokens) == sum(tok)
    assert per.calls[-3] == 2 and per.calls[-1] == 2
    assert per.clients["claude-code"][-3] == tok[0] + tok[1]
    assert per.clients["claude-desktop"][-1] == tok[2] + tok[3]
    assert sum(per.tools["read_doc"]) == tok[0] + tok[3]
    assert sum(per.tools["get_context"]) == tok[1]
    assert sum(per.tools["search_text"]) == tok[2]
    # biggest first
    assert next(iter(per.tools)) == max(per.tools, key=lambda k: sum(per.tools[k]))


async def test_a_write_result_costs_too_but_an_owner_snapshot_does_not(vault: Path) -> None:
    """Context cost is every result the model received; the per-tool breakdown tells reads
    from writes (the Cost screen's rule, kept)."""
    async with client(vault) as s:
        read = await s.text("read_doc", path="study/a.md")
        (vault / "study/a.md").write_text("# A\n\nalpha, and the owner typed\n")
        wrote = await s.text("append_section", path="study/a.md", heading="Log", content="- x")
    events = read_all(journal(vault))
    assert any(e["kind"] == "commit" for e in events)
    per = cost_per_day(events)
    assert sum(per.tokens) == estimate_tokens(read) + estimate_tokens(wrote)
    assert set(per.tools) == {"read_doc", "append_section"}
    # reads of notes: read events only
    assert set(note_reads(events, lambda p: False)) == {"study/a.md"}


async def test_the_local_day_boundary(vault: Path, tz: None) -> None:
    async with client(vault) as s:
        first = await s.text("read_doc", path="study/a.md")
        second = await s.text("read_doc", path="study/b.md")
    # 23:59:59 and 00:00:01 in Shanghai, both on the same UTC day (15:59:59Z and 16:00:01Z)
    today = datetime.now().astimezone().date()
    y = today - timedelta(days=1)
    late = datetime(y.year, y.month, y.day, 23, 59, 59).astimezone()
    early = datetime(today.year, today.month, today.day, 0, 0, 1).astimezone()
    assert late.astimezone(UTC).date() == early.astimezone(UTC).date()
    redate(vault, {0: late, 1: early})
    events = read_all(journal(vault))
    per = cost_per_day(events, today)
    assert per.tokens[-2:] == [estimate_tokens(first), estimate_tokens(second)]
    assert context_cost(events, today)["tokens"] == estimate_tokens(second)


def test_old_events_stay_readable() -> None:
    """Events from before reads journaled tokens, or paths for a listing, or at all."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    old = [
        {
            "v": 1,
            "ts": now,
            "pid": 1,
            "client": "old/1",
            "kind": "read",
            "tool": "list_docs",
            "paths": [],
            "chars": 400,
        },
        {
            "v": 1,
            "ts": now,
            "pid": 1,
            "kind": "read",
            "tool": "read_doc",
            "paths": ["a.md"],
            "chars": 40,
        },
        {
            "v": 1,
            "ts": "not a time",
            "pid": 1,
            "kind": "read",
            "tool": "read_doc",
            "paths": "a.md",
            "chars": 40,
        },
        {"v": 1, "pid": 1, "kind": "read"},
    ]
    per = cost_per_day(old)
    # named as Stats names them: without version, "unknown" when the event has none
    assert per.tokens[-1] == 100 + 10 and per.clients == {
        "old": per.clients["old"],
        "unknown": per.clients["unknown"],
    }
    rows = most_read(note_reads(old, lambda p: False))
    assert [(n.path, n.reads, round(n.tokens)) for n in rows] == [("a.md", 1, 10)]
    assert (
        not_read(note_reads(old, lambda p: False), {"b.md": datetime.now().astimezone()}, 7)[0].path
        == "b.md"
    )


# -- the get_context preview ----------------------------------------------------------------------


async def test_the_preview_is_the_get_context_result_exactly(vault: Path) -> None:
    async with client(vault) as s:
        sent = await s.text("get_context")
    p = preview(vault)
    assert p.text == sent
    assert p.tokens == estimate_tokens(sent) and p.chars == len(sent)
    v = Vault(vault)
    try:
        assert context_text(v) == sent
    finally:
        v.close()
    # the readable form holds the notes' text line by line
    assert "    content: |" in p.lines and "          - Mon: mock" in p.lines


async def test_the_preview_is_exact_when_get_context_is_trimmed(make_vault: Any) -> None:
    root = make_vault(
        {
            "vault.config.yaml": CONFIG + "limits: {result_chars: 3000}\n",
            "CLAUDE.md": "# Rules\n" + "rule line\n" * 200,
            "weeks/w1.md": "---\nstart: 2026-11-30\n---\n# Week\n" + "- 日志条目\n" * 400,
        }
    )
    async with client(root) as s:
        sent = await s.text("get_context")
    assert len(sent) <= 3000 and "left_out" in sent
    assert preview(root).text == sent


async def test_the_preview_diff_after_a_change_and_after_marking_reviewed(vault: Path) -> None:
    first = preview(vault)
    assert first.reviewed is None and first.changed
    assert all(line.startswith(("+", "@@")) for line in first.diff())  # all new
    mark_reviewed(vault, first.text)
    stored = state_dir(vault) / REVIEWED
    assert stored.stat().st_mode & 0o777 == 0o600
    assert load_reviewed(vault)[0] == first.text
    same = preview(vault)
    assert not same.changed and same.diff() == [] and same.reviewed_at is not None
    # the AI appends to this week's note: the preview says what changed, and only that
    async with client(vault) as s:
        await s.text("append_section", path="weeks/w1.md", heading="Log", content="- Tue: 架构图")
    changed = preview(vault)
    assert changed.changed
    added = [ln for ln in changed.diff() if ln.startswith("+")]
    removed = [ln for ln in changed.diff() if ln.startswith("-")]
    assert "+          - Tue: 架构图" in added
    # what went is the note's old hash and its old place in the recent list, no line of text
    assert not any("Mon: mock" in ln or "Read before" in ln for ln in removed), removed
    mark_reviewed(vault, changed.text)
    assert preview(vault).diff() == []
    # the owner edits the rules: one line
    (vault / "CLAUDE.md").write_text("# Rules\nRead before you write.\nNever guess.\n")
    diff = preview(vault).diff()
    assert "+      Never guess." in diff
    assert not any(ln.startswith("-") and "Read before" in ln for ln in diff), diff


async def test_an_unreadable_reviewed_copy_shows_everything_as_new(vault: Path) -> None:
    (state_dir(vault)).mkdir(parents=True, exist_ok=True)
    (state_dir(vault) / REVIEWED).write_text("{not json")
    p = preview(vault)
    assert p.reviewed is None and p.changed and p.diff()


def test_readable_keeps_every_line_and_value() -> None:
    text = json.dumps(
        {"blocks": [{"title": "R", "content": "a\n\nb", "docs": [], "n": 3}], "trimmed": []},
        separators=(",", ":"),
    )
    assert readable(text) == [
        "blocks:",
        "  - title: R",
        "    content: |",
        "      a",
        "",
        "      b",
        "    docs: []",
        "    n: 3",
        "trimmed: []",
    ]


# -- private notes ----------------------------------------------------------------------------------


async def test_no_private_note_in_the_preview_or_any_list(vault: Path) -> None:
    # private/ is excluded from the recent block, the listing and the search by the server
    async with client(vault) as s:
        await s.text("get_context")
        await s.text("list_docs")
        await s.text("search_text", query="caching")
    p = preview(vault)
    assert "private/" not in p.text and SECRET not in p.text
    # a note the AI read before the owner made its folder private: gone from every list
    async with client(vault) as s:
        await s.text("read_doc", path="study/c.md")
    (vault / "vault.config.yaml").write_text(
        CONFIG.replace('["private/**"]', '["private/**", "study/"]')
    )
    report = reads_report_of(vault, 30, datetime.now().astimezone())
    listed = [n.path for n in report.most] + [u.path for u in report.unread]
    assert listed and not any(p.startswith(("private/", "study/")) for p in listed), listed
    v = Vault(vault)
    try:
        assert not any(p.startswith(("private/", "study/")) for p in vault_notes(v))
    finally:
        v.close()
    out = preview(vault).text
    assert "study/" not in out and "private/" not in out
    # today's biggest results count the read (its cost is real) but do not name the note
    events = read_all(vault / ".git/vaultwatch/events.jsonl")
    v = Vault(vault)
    try:
        big = context_cost(events, private=v.policy.is_private)["biggest"]
    finally:
        v.close()
    assert any(b.hidden for b in big) and not any(
        p.startswith(("private/", "study/")) for b in big for p in b.paths
    ), big
    # without the rules (the vault not read yet) no biggest result is listed at all
    assert context_cost(events)["biggest"] == []


async def test_the_reads_screen_never_names_a_note_that_is_private_now(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A note the AI read before its folder became private: counted in today's biggest results
    as "1 private", never named, in any tab of the Reads screen."""
    from textual.widgets import DataTable

    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    async with client(vault) as s:
        await s.text("read_doc", path="study/c.md")
        await s.text("read_doc", path="study/a.md")
    (vault / "vault.config.yaml").write_text(
        CONFIG.replace('["private/**"]', '["private/**", "study/c.md"]')
    )
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_reads(app, pilot, events=2)
        table = screen.query_one("#biggest", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        cells = [str(c) for r in range(table.row_count) for c in table.get_row_at(r)]
        assert "1 private" in cells and any("a.md" in c for c in cells), cells
        seen = " ".join(cells)
        for key in ("2", "3", "4"):
            seen += await show_tab(pilot, app, key)
        assert "c.md" not in seen and SECRET not in seen, seen


# -- the shell ------------------------------------------------------------------------------------------


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        cli.run(argv)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


async def test_the_cli_json(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with client(vault) as s:
        await s.text("read_doc", path="study/a.md")
        await s.text("read_doc", path="study/a.md")
        await s.text("search_text", query="alpha")
    code, out, _ = run_cli(["reads", str(vault), "--days", "7", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["days"] == 7 and data["notes"] == 6
    assert data["most_read"][0]["path"] == "study/a.md" and data["most_read"][0]["reads"] == 3
    assert sorted(data["most_read"][0]["tools"]) == ["read_doc", "search_text"]
    assert data["most_read"][0]["clients"] == ["claude-code"]  # as `vaultwatch stats` names it
    unread = [u["path"] for u in data["not_read"]]
    assert "study/b.md" in unread and "study/a.md" not in unread and len(unread) == 5
    assert not any("private" in p for p in unread)
    assert len(data["per_day"]["days"]) == 30 and sum(data["per_day"]["tokens"]) > 0
    async with client(vault) as s:
        sent = await s.text("get_context")
    code, out, _ = run_cli(["context", str(vault), "--json"], capsys)
    ctx = json.loads(out)
    assert code == 0 and ctx["text"] == sent and ctx["reviewed_at"] is None and ctx["changed"]
    code, out, _ = run_cli(["context", str(vault), "--mark-reviewed", "--json"], capsys)
    assert code == 0 and json.loads(out)["marked"] is True
    code, out, _ = run_cli(["context", str(vault), "--diff"], capsys)
    assert code == 0 and "unchanged" in out and len(out.strip().splitlines()) == 1
    code, out, err = run_cli(["reads", str(vault / "nope")], capsys)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["reads", str(vault), "--days", "0"], capsys)
    assert code == 1 and "--days" in err


def test_days_are_dates() -> None:
    assert cost_per_day([], date(2026, 1, 20)).days[-1] == date(2026, 1, 20)


# -- the screen -----------------------------------------------------------------------------------

LONG = "项目笔记/二零二六年第四季度/关于离线同步与冲突解决的学习笔记.md"


# what each list tab says once drawn with its figures (its caption, the context's first line),
# at its start, where no width wraps it
TAB_SAYS = {
    "2": ("read, most first", "No note of the vault has been read"),
    "3": ("not read in", "was read in the last"),
    "4": ("What a new conversation receives now",),
}


async def show_tab(pilot: Any, app: Any, key: str) -> str:
    """Press a tab's key and wait until the tab shows its figures (the cost tab: its first
    table laid out in sight again); what the screen shows then."""
    from textual.widgets import DataTable

    from .conftest import until

    def shown() -> bool:
        if key == "1":
            return app.screen.query_one("#by-tool", DataTable).region.width > 0
        return any(words in screen_text(app) for words in TAB_SAYS[key])

    await pilot.press(key)
    await until(pilot, shown, f"tab {key} drawn", describe=lambda: screen_text(app))
    return screen_text(app)


def screen_text(app: Any) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_the_reads_screen_tabs_live_reads_and_review_mark(
    vault: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from app.ui.dashboard import Dashboard

    from .conftest import until
    from .desk import footer, footer_fits

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    async with client(vault) as s:
        await s.text("read_doc", path=LONG)
        await s.text("read_doc", path=LONG)
        await s.text("read_doc", path="study/a.md")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        screen = await open_reads(app, pilot, events=3)
        # the footer is drawn after the screen: wait for its keys, not a moment
        await until(
            pilot,
            lambda: "Keys" in [k.description for k in footer(app)],
            describe=lambda: [k.description for k in footer(app)],
        )
        assert footer_fits(app, size[0])
        text = await show_tab(pilot, app, "2")
        # the Chinese name at a long path: shortened in the middle at 80 columns, never cut to
        # nothing; whole with its folder where there is room
        assert "关于离线" in text and "笔记.md" in text, text
        if size[0] >= 200:
            assert f"{LONG.rsplit('/', 1)[1]}  {LONG.rsplit('/', 1)[0]}/" in text, text
        assert [n.path for n in screen.report.most] == [LONG, "study/a.md"]  # type: ignore[union-attr]
        # a read arrives while the screen is open: the list follows
        async with client(vault, "late-client") as s:
            await s.text("read_doc", path="study/a.md")
            await s.text("read_doc", path="study/a.md")
        await until(
            pilot,
            lambda: screen.report is not None and screen.report.most[0].path == "study/a.md",
        )
        await until(pilot, lambda: "late-client" in screen.cost["clients"])
        await show_tab(pilot, app, "3")
        assert "study/c.md" in screen_text(app) or "c.md" in screen_text(app)
        assert "not read in 30 days" in screen_text(app)
        await pilot.press("plus")
        await until(pilot, lambda: screen.report is not None and screen.report.days == 60)
        text = await show_tab(pilot, app, "4")
        assert "What a new conversation receives now" in text and "never marked" in text
        assert "private/" not in text and SECRET not in text
        await pilot.press("m")
        await until(pilot, lambda: load_reviewed(vault)[0] is not None)
        assert load_reviewed(vault)[0] == screen.preview.text  # type: ignore[union-attr]
        await until(pilot, lambda: "unchanged" in screen_text(app))


async def test_a_rules_file_that_does_not_exist_is_not_a_most_read_note(
    make_vault: Any,
) -> None:
    root = make_vault({"vault.config.yaml": CONFIG, "study/a.md": "# A\n"})
    async with client(root) as s:
        await s.text("get_context")
    report = reads_report_of(root, 30, datetime.now().astimezone())
    assert [n.path for n in report.most] == ["study/a.md"]


async def test_a_tab_is_made_when_first_shown_with_the_rows_of_the_report(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The Reads screen opens with the cost tab only; the Most read, Not read and Context tabs
    are made when first shown, with the same rows the report has, in its order (the note
    label every row had before), kept current once made; a private note named by a read in
    the journal appears in none of them."""
    from textual.widgets import DataTable

    from app.ui.dashboard import Dashboard
    from app.ui.widgets.cells import note_label

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    async with client(vault) as s:
        await s.text("read_doc", path=LONG)
        await s.text("read_doc", path=LONG)
        await s.text("read_doc", path="study/a.md")
    line = {
        "v": 1,
        "ts": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "pid": 1,
        "client": "forged/1",
        "kind": "read",
        "tool": "read_doc",
        "paths": ["private/salary.md"],
        "chars": 90,
        "tokens": 30,
    }
    with (state_dir(vault) / "events.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")

    def rows(screen: ReadsScreen, id_: str) -> list[str]:
        table = screen.query_one(f"#{id_}", DataTable)
        return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]

    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_reads(app, pilot, events=4)
        assert screen.built == {"cost"}
        for id_ in ("#most", "#unread", "#context-body"):
            assert not screen.query(id_), id_  # not made before it is shown
        report = screen.report
        assert report is not None

        await pilot.press("2")
        await until(pilot, lambda: bool(screen.query("#most")) and len(rows(screen, "most")) > 0)
        width = screen.widths["most"]
        assert rows(screen, "most") == [note_label(n.path, width).plain for n in report.most]
        assert [n.path for n in report.most] == [LONG, "study/a.md"]
        # the list takes the focus once drawn (after a refresh): waited for, not assumed
        await until(pilot, lambda: screen.focused is screen.query_one("#most", DataTable))

        await pilot.press("3")
        await until(pilot, lambda: bool(screen.query("#unread")))
        width = screen.widths["unread"]
        unread = [note_label(u.path, width).plain for u in report.unread]
        assert unread and rows(screen, "unread") == unread
        assert "study/c.md" in [u.path for u in report.unread]

        # a read while another tab shows: the Most read tab, once made, follows it
        async with client(vault, "late-client") as s:
            for _ in range(3):
                await s.text("read_doc", path="study/a.md")
        await until(
            pilot,
            lambda: screen.report is not None and screen.report.most[0].path == "study/a.md",
        )
        await pilot.press("2")
        await until(pilot, lambda: rows(screen, "most")[:1] == ["a.md  study/"])

        assert "What a new conversation receives now" in await show_tab(pilot, app, "4")
        for tab in ("2", "3", "4"):  # (the cost tab lists the journal's reads as they were)
            text = await show_tab(pilot, app, tab)
            assert "private/" not in text and "salary" not in text and SECRET not in text
        assert not any("private/" in r for t in ("most", "unread") for r in rows(screen, t))


async def open_reads(app: Any, pilot: Any, events: int) -> ReadsScreen:
    """The Reads screen (`$`) once the dashboard has `events` journal events, with its report
    and context preview counted."""
    from app.ui.screens.reads import ReadsScreen

    from .conftest import until

    await until(pilot, lambda: len(app.feed.events) >= events)
    await pilot.press("dollar_sign")
    await until(pilot, lambda: isinstance(app.screen, ReadsScreen))
    screen = app.screen
    assert isinstance(screen, ReadsScreen)
    await until(pilot, lambda: screen.report is not None and screen.preview is not None)
    return screen


@asynccontextmanager
async def reads_without_vault(
    tmp_path: Path, events: list[dict[str, Any]]
) -> AsyncIterator[tuple[Any, Any, ReadsScreen]]:
    """The Reads screen alone in an app, over `events`, for a vault that is gone: what it
    draws from the events, once its load has failed."""
    from textual.app import App

    from app.ui.screens.reads import ReadsScreen

    from .conftest import until

    screen = ReadsScreen(tmp_path / "gone", events)

    class Host(App[None]):
        """A bare app that hands the screen a Vault as the dashboard does (app.ui.navigation)."""

        def vault(self) -> Vault:
            return Vault(tmp_path / "gone")

        def on_mount(self) -> None:
            self.push_screen(screen)

    app = Host()
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(screen.failure))
        yield app, pilot, screen


async def test_the_cost_tab_is_drawn_from_the_events_alone_and_names_no_note_unread_rules(
    tmp_path: Path,
) -> None:
    """Today's cost and the last 30 days' sparklines come from the dashboard's events, in the
    screen's first frame, without the vault. When the vault cannot be read, its private rules
    are unknown: today's biggest results name no note (one may be private), and the tabs that
    need the vault say what broke."""
    from textual.widgets import DataTable

    from .conftest import until

    now = datetime.now(UTC)
    events = [
        {
            "v": 1,
            "ts": (now - timedelta(days=back)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "pid": 1,
            "client": "claude-code/2",
            "kind": "read",
            "tool": tool,
            "paths": ["private/salary.md"],
            "chars": 3_000,
            "tokens": 1_000,
        }
        for back, tool in ((0, "read_doc"), (0, "search_text"), (3, "read_doc"), (9, "recall"))
    ]
    async with reads_without_vault(tmp_path, events) as (app, pilot, screen):
        text = screen_text(app)
        assert "cost today" in text and "2,000 tokens" in text, text
        days = screen.query_one("#tool-days", DataTable)
        assert days.row_count == 3  # read_doc, recall, search_text: one sparkline each
        tokens = {str(days.get_row_at(r)[0]): str(days.get_row_at(r)[2]).strip() for r in range(3)}
        assert tokens == {"read_doc": "2,000", "recall": "1,000", "search_text": "1,000"}, tokens
        biggest = screen.query_one("#biggest", DataTable)
        assert biggest.row_count == 0 and "salary" not in text
        await pilot.press("2")
        await until(pilot, lambda: "could not read the vault" in screen_text(app))


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_every_reads_table_fits_the_terminal_with_long_names(
    vault: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A client with a long name and a note at a long Chinese path: every table of the Reads
    screen stays inside the terminal, the notes and the client cut in the middle, so that no
    column (the client's, last) is cut off by the screen's edge. At 80 columns today's biggest
    results leave out their chars."""
    from textual.widgets import DataTable

    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    client_name = "an-editor-plugin-with-a-very-long-client-name"
    async with client(vault, client_name) as s:
        await s.text("read_doc", path=LONG)
        await s.text("search_text", query="caching")
    async with client(vault) as s:
        await s.text("read_doc", path=LONG)
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        screen = await open_reads(app, pilot, events=3)
        await until(pilot, lambda: bool(screen.cost["biggest"]))
        for key in ("2", "3", "1"):
            await show_tab(pilot, app, key)
        await pilot.pause()  # the tables measure themselves once idle
        tables = list(screen.query(DataTable))
        assert {t.id for t in tables} >= {"biggest", "most", "unread", "tool-days", "by-day"}
        for table in tables:
            if table.display and table.row_count:
                right = table.region.x + table.virtual_size.width
                assert right <= size[0] - 2, (table.id, right)  # the scrollbar's 2 cells
        biggest = screen.query_one("#biggest", DataTable)
        headings = [str(c.label) for c in biggest.columns.values()]
        assert ("chars" in headings) == (size[0] >= 100), headings
        clients = {str(biggest.get_row_at(r)[-1]) for r in range(biggest.row_count)}
        assert any(c.startswith("an-") and "…" in c for c in clients), clients
        most = screen.query_one("#most", DataTable)
        names = [str(most.get_row_at(r)[0]) for r in range(most.row_count)]
        assert names and names[0].startswith("关于离线"), names


# -- clients, columns, order ----------------------------------------------------------------------


async def test_a_client_is_named_as_stats_names_it_whatever_its_version(vault: Path) -> None:
    """Claude Code 2.0.9 and 2.1.0 are one assistant: the journal keeps the version, but the
    cost today, the last 30 days and the most read name the client as Stats does (one
    function says how), so an upgrade does not start a new row."""
    from app.services import stats
    from server.core.clients import client_name

    assert stats.client_name is client_name  # one home for a client's display name
    for version in ("2.0.9", "2.1.0"):
        async with client(vault, "claude-code", version) as s:
            await s.text("read_doc", path="study/a.md")
            await s.text("append_section", path="study/b.md", heading="Log", content="- x")
    events = read_all(journal(vault))
    assert {e["client"] for e in reads(vault)} == {"claude-code/2.0.9", "claude-code/2.1.0"}
    assert list(context_cost(events)["clients"]) == ["claude-code"]
    assert list(context_cost(events)["client_tokens"]) == ["claude-code"]
    assert list(cost_per_day(events).clients) == ["claude-code"]
    assert list(note_reads(events, lambda p: False)["study/a.md"].clients) == ["claude-code"]
    # Stats counts the same two versions' commits under the same name
    assert list(stats.compute(vault, "4w", events=events).clients) == ["claude-code"]


def table_rows(screen: Any, id_: str) -> list[list[str]]:
    from textual.widgets import DataTable

    table = screen.query_one(f"#{id_}", DataTable)
    return [[str(c) for c in table.get_row_at(r)] for r in range(table.row_count)]


def table_headings(screen: Any, id_: str) -> list[str]:
    from textual.widgets import DataTable

    return [str(c.label) for c in screen.query_one(f"#{id_}", DataTable).columns.values()]


async def reads_of_two_versions_and_a_long_client(vault: Path) -> None:
    """Claude Code in two versions and an editor plugin with a long Chinese name: a Chinese
    note (few chars, many tokens), a listing (many chars, fewer tokens) and a write whose
    tool name is the longest there is."""
    for version in ("2.0.9", "2.1.0"):
        async with client(vault, "claude-code", version) as s:
            await s.text("read_doc", path=LONG)
            await s.text("list_docs")
    async with client(vault, "一个编辑器插件-with-long-name-b") as s:
        await s.text("read_doc", path="study/a.md")
        await s.text("update_frontmatter", path="study/c.md", add_tags=["sync"])


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_the_reads_screen_names_clients_as_stats_does(
    vault: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    await reads_of_two_versions_and_a_long_client(vault)
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        screen = await open_reads(app, pilot, events=6)
        await until(pilot, lambda: bool(screen.cost["biggest"]))
        names = [r[0] for r in table_rows(screen, "by-client")]
        assert names[0] == "claude-code" and len(names) == 2, names
        days = [r[0] for r in table_rows(screen, "client-days")]
        assert days[0] == "claude-code" and len(days) == 2, days
        await pilot.press("2")
        await until(pilot, lambda: bool(screen.query("#most")) and bool(table_rows(screen, "most")))
        clients = {r[-1] for r in table_rows(screen, "most")}
        assert "claude-code" in clients and not any("/" in c for c in clients), clients


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_biggest_today_fits_keeps_the_client_readable_and_is_sorted_as_shown(
    vault: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Today's biggest results at every size: the table ends inside the terminal (its
    heading `client` whole), the client cut (at its end) to no fewer than 8 cells, and the
    rows in the order of the tokens column (below 100 columns the chars are not shown, so
    an order by chars looked random). Counts are right-aligned, as Stats has them."""
    from textual.widgets import DataTable

    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    await reads_of_two_versions_and_a_long_client(vault)
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        screen = await open_reads(app, pilot, events=6)
        await until(pilot, lambda: bool(screen.cost["biggest"]))
        for _ in range(5):  # the owner's way down to it: focus moves table by table
            await pilot.press("tab")
        biggest = screen.query_one("#biggest", DataTable)
        await until(pilot, lambda: screen.focused is biggest, "the focus on the biggest results")
        # scrolled into sight with its heading
        await until(pilot, lambda: "biggest today" in screen_text(app), "the heading in sight")
        assert biggest.region.right <= size[0] - 2, biggest.region  # the scrollbar's 2 cells
        right = biggest.region.x + biggest.virtual_size.width
        assert right <= size[0] - 2, right
        headings = table_headings(screen, "biggest")
        assert headings[-1] == "client"
        widths = [c.get_render_width(biggest) - 2 for c in biggest.columns.values()]
        assert widths[-1] >= 8, widths
        # what is on screen: the heading whole, and a client that reads
        text = screen_text(app)
        line = next(x for x in text.splitlines() if "biggest today" in x)
        assert line.rstrip().endswith("client"), line
        rows = table_rows(screen, "biggest")
        clients = {r[-1].strip() for r in rows}
        # cut at the end as every screen cuts clients (`Distinct.clients`, issue 33): a wide
        # character that does not fit leaves the column's last cell blank (`一个编…`, 7 of 8)
        cut = [c for c in clients if c.endswith("…")]
        assert all(cell_len(c) >= widths[-1] - 1 for c in cut), (widths, clients)
        assert not any("/" in c for c in clients), clients  # named without version
        if size[0] >= 120:
            assert "claude-code" in clients, clients
        else:  # where it is cut, at its end as the timeline cuts it: its start reads
            assert all(c.startswith(("cla", "一")) for c in clients), clients
        tokens = [int(r[headings.index("≈ tokens")].replace(",", "")) for r in rows]
        assert tokens == sorted(tokens, reverse=True), tokens
        # numbers right-aligned under their headings: padded on the left
        col = headings.index("≈ tokens")
        cells = [r[col] for r in rows]
        assert len({len(c) for c in cells}) == 1 and any(c.startswith(" ") for c in cells), cells


async def test_biggest_today_uses_the_free_width_before_cutting_a_note(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """At 120 columns the client column was as wide as the longest client (30 cells, blank
    beside `claude-code`) while the Chinese note was cut to its name: where not both fit
    whole, the note comes first and the client keeps a share, and the table takes every
    cell the terminal gives it, none left blank at the right."""
    from textual.widgets import DataTable

    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    await reads_of_two_versions_and_a_long_client(vault)
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_reads(app, pilot, events=6)
        await until(pilot, lambda: bool(screen.cost["biggest"]))
        await pilot.pause()  # the table measures itself once idle
        headings = table_headings(screen, "biggest")
        rows = table_rows(screen, "biggest")
        folder, _, name = LONG.rpartition("/")
        notes = [r[headings.index("notes")] for r in rows]
        assert any(n.startswith(f"{name}  {folder[0]}") for n in notes), notes
        # stripped: the client cell is padded to its column (a wide character cut at the end
        # leaves a cell blank that the column keeps)
        clients = {r[-1].strip() for r in rows}
        assert "claude-code" in clients and any("…" in c for c in clients), clients
        biggest = screen.query_one("#biggest", DataTable)
        # the table's right margin and the scrollbar: 2 cells each
        assert biggest.region.x + biggest.virtual_size.width == 120 - 4


async def test_counts_on_the_reads_screen_say_one_or_many(tmp_path: Path) -> None:
    """One call of one char costs `1 char ≈ 1 token`, not `1 chars ≈ 1 tokens`."""

    now = datetime.now(UTC)
    event = {
        "v": 1,
        "ts": now.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "pid": 1,
        "client": "claude-code/2.1.0",
        "kind": "read",
        "tool": "read_doc",
        "paths": [],
        "chars": 1,
        "tokens": 1,
    }
    async with reads_without_vault(tmp_path, [event]) as (app, _, _):
        text = screen_text(app)
        assert "1 char ≈ 1 token" in text and "1 chars" not in text, text


async def test_the_context_tab_notices_a_note_it_includes_changing_on_disk(
    vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`m` marks the preview reviewed (`unchanged`); the owner then edits CLAUDE.md in
    another program. No journal event comes, yet the tab shows `changed since` and the new
    line within seconds: it watches the files the preview includes while it is shown."""
    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    async with client(vault) as s:
        await s.text("get_context")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_reads(app, pilot, events=1)
        await pilot.press("4")
        await until(pilot, lambda: "What a new conversation receives now" in screen_text(app))
        await pilot.press("m")
        await until(pilot, lambda: "unchanged" in screen_text(app))
        seen = len(app.feed.events)
        with (vault / "CLAUDE.md").open("a", encoding="utf-8") as fh:
            fh.write("- a rule the owner added by hand\n")
        await until(pilot, lambda: "changed since" in screen_text(app), timeout=8)
        assert "a rule the owner added by hand" in screen_text(app)
        assert len(app.feed.events) == seen  # no journal event told it


async def test_a_vault_no_assistant_has_read_says_how_to_connect(vault: Path) -> None:
    """The cost tab said 'the days before are below' over empty headings: nothing had read the
    vault yet, and nothing said so or what to do."""
    from textual.widgets import DataTable, Static

    from app.ui.dashboard import Dashboard

    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_reads(app, pilot, events=0)
        caption = str(screen.query_one("#cost-caption", Static).render())
        assert "no assistant has read this vault" in caption and "then c" in caption, caption
        for id_ in ("#by-tool", "#tool-days", "#client-days", "#by-day"):
            assert not screen.query_one(id_, DataTable).display, id_
