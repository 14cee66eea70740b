"""Every screen readable, under Pilot on real vaults: what is on screen is read back as text
(the compositor's own lines) at small and large terminal sizes, with Chinese names and long
paths, so a cut name or a hidden button fails here."""

from __future__ import annotations

import json
import socket
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select

from app.services.supervisor import ServerSupervisor, connect_notes, remembered_port, snippets
from app.ui.dashboard import Dashboard
from app.ui.dialogs.file_dialogs import NewNoteForm
from app.ui.dialogs.modals import ConfirmModal, ConnectModal, HelpModal
from app.ui.screens.insights import TagsScreen
from app.ui.screens.main_screen import MainScreen
from app.ui.screens.reads import ReadsScreen
from app.ui.widgets.lines import LinesView
from app.ui.widgets.timeline import Timeline
from server.core.state_files import state_dir
from server.write.journal import Journal, ServerStarted, estimate_tokens, read_all

from .conftest import git, stop_residents, until, workers_done
from .desk import screen_text

pytestmark = pytest.mark.anyio

TODAY = date(2026, 12, 3)


def note(day: date, tags: list[str], title: str, body: str = "") -> str:
    return f"---\ndate: {day.isoformat()}\ntags: [{', '.join(tags)}]\n---\n# {title}\n\n{body}"


@pytest.fixture
def tagged_vault(make_vault: Any, settings_dir: Path) -> Path:
    files = {
        "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
        "tags.yaml": "- system-design\n- 面试\n- crdt\n- networking\n",
        "study/离线同步与冲突解决.md": note(
            TODAY, ["面试", "crdt"], "离线同步", "离线同步与冲突解决。" * 40
        ),
        "old/net.md": note(TODAY - timedelta(days=70), ["networking"], "Net"),
    }
    for n in range(3):
        files[f"study/sd-{n}.md"] = note(TODAY - timedelta(days=n), ["system-design"], f"SD {n}")
    return make_vault(files)


TAG_WORDS = ("system-design", "面试", "crdt", "networking", "rising", "quiet")


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_tag_names_and_trend_words_are_whole_at_every_size(
    tagged_vault: Path, size: tuple[int, int]
) -> None:
    app = Dashboard(tagged_vault, poll_seconds=0.1)
    app.today = TODAY
    async with app.run_test(size=size) as pilot:
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))
        await until(
            pilot,
            lambda: all(w in screen_text(app) for w in TAG_WORDS),
            "the tags and their trend words drawn",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
    for word in TAG_WORDS:
        assert word in text, f"{word!r} not on the tags screen at {size}:\n{text}"


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_cost_names_whole_local_day_earlier_days_and_chinese_tokens(
    connect: Any, tagged_vault: Path, size: tuple[int, int]
) -> None:
    async with connect(tagged_vault) as s:
        await s.call("read_doc", path="study/离线同步与冲突解决.md")
        await s.call("list_docs")
    # a read from two days ago, journaled before events carried a token estimate
    earlier = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    with (state_dir(tagged_vault) / "events.jsonl").open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "v": 1,
                    "ts": earlier,
                    "pid": 1,
                    "client": "old/1",
                    "kind": "read",
                    "tool": "search_text",
                    "paths": [],
                    "chars": 4000,
                }
            )
            + "\n"
        )
    app = Dashboard(tagged_vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: len(app.feed.events) >= 3)
        await pilot.press("dollar_sign")
        await until(pilot, lambda: isinstance(app.screen, ReadsScreen))
        reads = app.screen
        assert isinstance(reads, ReadsScreen)
        # the whole read in (the cost first, then the lists), and the tools' names drawn
        await until(
            pilot,
            lambda: (
                reads.report is not None
                and all(w in screen_text(app) for w in ("read_doc", "list_docs", "Chinese"))
            ),
            "the reads counted and drawn",
            describe=lambda: (reads.report is not None, screen_text(app)),
        )
        text = screen_text(app)
        cost = reads.cost
    assert "read_doc" in text and "list_docs" in text, text
    assert "Chinese" in text, text  # the screen says how it estimates
    if size[1] >= 50:
        assert "离线同步与冲突解决.md  study/" in text, text
        # the days before today are listed, with what they cost
        assert f"{date.today() - timedelta(days=2):%a %m-%d}" in text and "4,000" in text, text
    # today is the owner's local day; the old read is not in it
    assert cost["day"] == datetime.now().astimezone().date()
    assert "search_text" not in cost["tools"]
    # a Chinese read costs about a token a character, not a quarter of one
    assert cost["tool_tokens"]["read_doc"] > cost["tools"]["read_doc"] // 2


def test_token_estimate_counts_chinese_and_latin_differently() -> None:
    assert estimate_tokens("a" * 400) == 100
    assert estimate_tokens("离" * 400) == 400
    assert estimate_tokens("ab离线") == 1 + 2


def name(n: int) -> str:
    return f"notes/{n:02d}-离线同步-a-rather-long-note-name.md"


@pytest.fixture
def batch_vault(make_vault: Any, settings_dir: Path) -> Path:
    return make_vault({name(n): f"# N{n}\n\n- x\n" for n in range(12)})


async def _batch(connect: Any, root: Path) -> str:
    ops = [
        {"tool": "append_section", "args": {"path": name(n), "heading": f"N{n}", "content": "- y"}}
        for n in range(12)
    ]
    async with connect(root) as s:
        res = await s.call("batch", ops=ops, message="tidy twelve notes")
    return str(res["commit"])


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_tall_revert_dialog_keeps_its_buttons_and_scrolls(
    connect: Any, batch_vault: Path, size: tuple[int, int]
) -> None:
    sha = await _batch(connect, batch_vault)
    app = Dashboard(batch_vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.index_of(f"c:{sha}") is not None)
        t.move_to(t.index_of(f"c:{sha}"))  # type: ignore[arg-type]
        await until(pilot, lambda: app.main._selected == f"c:{sha}", "the batch selected")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await until(
            pilot,
            lambda: "Revert (y)" in screen_text(app) and "Cancel (n)" in screen_text(app),
            "the dialog's buttons drawn",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert "Revert (y)" in text and "Cancel (n)" in text, text
        assert "11-离线同步" not in text  # the last file is below the fold ...
        await pilot.press("end")
        await until(
            pilot,
            lambda: "11-离线同步" in screen_text(app),
            "the last file scrolled into sight",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert "11-离线同步" in text, text  # ... and the keyboard brings it up
        assert "Revert (y)" in text, text
        await pilot.press("n")


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_connect_and_help_fit_and_scroll(batch_vault: Path, size: tuple[int, int]) -> None:
    app = Dashboard(batch_vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConnectModal))
        await until(
            pilot,
            lambda: "esc closes" in screen_text(app),
            "the connect dialog drawn",
            describe=lambda: screen_text(app),
        )
        assert "esc closes" in screen_text(app)
        await pilot.press("end")
        await until(
            pilot,
            lambda: "Claude Desktop" in screen_text(app) and "esc closes" in screen_text(app),
            "the connect dialog scrolled to its end",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert "Claude Desktop" in text and "esc closes" in text, text
        await pilot.press("escape", "question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpModal))
        await pilot.press("end")
        await until(
            pilot,
            lambda: "quit" in screen_text(app).casefold() and "closes" in screen_text(app),
            "the help scrolled to its end",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert "quit" in text.casefold() and "closes" in text, text


def test_connect_says_how_to_export_the_token_and_copy_under_tmux(make_vault: Any) -> None:
    root = make_vault({"a.md": "# A\n"})
    out = snippets(root, "http://127.0.0.1:8765/mcp")
    export = out["Export the token for the .mcp.json entry (shell)"]
    assert export == f'export VAULTWATCH_TOKEN="$(cat {root}/.git/vaultwatch/token)"'
    notes = " ".join(connect_notes(root, "http://127.0.0.1:8765/mcp"))
    assert "8765 is kept for this vault" in notes and "tmux" in notes and "OSC 52" in notes
    (root / "vault.config.yaml").write_text("http: {port: 8765}\n")
    assert "set by http.port" in connect_notes(root, "http://127.0.0.1:8765/mcp")[0]


@pytest.mark.slow
def test_the_port_is_the_same_across_launches_unless_taken(make_vault: Any, tmp_path: Path) -> None:
    root = make_vault({"a.md": "# A\n"})
    first = ServerSupervisor(root)
    try:
        url = first.start()
    finally:
        first.stop()
    # the resident outlives a dashboard for its quiet period: the next launch is after it
    assert stop_residents(tmp_path)
    again = ServerSupervisor(root)
    try:
        assert again.start() == url  # a `claude mcp add` line copied once keeps working
    finally:
        again.stop()
    assert stop_residents(tmp_path)
    # another program took the port meanwhile: a new one, remembered from then on
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", first.port))
        busy.listen()
        third = ServerSupervisor(root)
        try:
            moved = third.start()
        finally:
            third.stop()
    assert moved != url and remembered_port(root) == third.port


NOTE_TYPES = """types:
  application:
    folder: applications
    filename: "{company}-{role}.md"
    required: [company, role, status, applied]
    dates: [applied]
    values: {status: [researching, applied, waiting]}
"""


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_new_note_form_tab_defaults_pickers_path_and_visible_errors(
    make_vault: Any, settings_dir: Path, size: tuple[int, int]
) -> None:
    root = make_vault({"vault.config.yaml": NOTE_TYPES, "a.md": "# A\n"})
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NewNoteForm))
        # the type's fields built (the path it will create is shown once they are)
        await until(
            pilot,
            lambda: "creates applications/{company}-{role}.md" in screen_text(app),
            "the form's fields",
            describe=lambda: screen_text(app),
        )
        form = app.screen
        assert isinstance(form, NewNoteForm)
        # the first Tab after the type picker lands in the title: what is typed is kept
        await pilot.press("tab", *"Staff role")
        assert form.query_one("#f-title", Input).value == "Staff role"
        # a date defaults to today; a field with allowed values is a picker of them
        assert form.field("applied").value == date.today().isoformat()
        status = form.field("status")
        assert isinstance(status, Select)
        assert [str(o[0]) for o in status._options if o[1] != Select.NULL] == [
            "researching",
            "applied",
            "waiting",
        ]
        # the path the note will get shows before anything is written
        assert "creates applications/{company}-{role}.md" in screen_text(app)
        form.field("company").value = "北京字节"
        form.field("role").value = "backend"
        # company and role are all the file name needs
        await until(
            pilot,
            lambda: "creates applications/北京字节-backend.md" in screen_text(app),
            "the path with the company and role",
            describe=lambda: screen_text(app),
        )
        assert "creates applications/北京字节-backend.md" in screen_text(app)
        status.value = "waiting"
        form.field("applied").value = "2026-02-30"
        await pilot.pause()  # the two changes' messages handled
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: "not a date" in screen_text(app),
            "the bad date said",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert isinstance(app.screen, NewNoteForm)
        assert "not a date" in text, text  # on screen, not below the fold
        form.field("applied").value = "2026-12-01"
        await until(
            pilot,
            lambda: "creates applications/北京字节-backend.md" in screen_text(app),
            "the path again",
            describe=lambda: screen_text(app),
        )
        text = screen_text(app)
        assert "creates applications/北京字节-backend.md" in text, text
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, NewNoteForm))
        # the new note's flow writes it in a thread, then selects it in the timeline: the app
        # is not closed under it (under load it was, and the flow found no timeline)
        await workers_done(app)
    created = [p for p in (root / "applications").iterdir()]
    assert len(created) == 1 and created[0].name.endswith("-backend.md")
    assert "status: waiting" in created[0].read_text()


def test_timeline_columns_never_narrower_on_a_wider_timeline() -> None:
    from app.ui.widgets.timeline import widths

    for total in range(30, 260):
        assert all(a >= b for a, b in zip(widths(total), widths(total - 1), strict=True)), total
        assert sum(widths(total)) + len(widths(total)) - 1 <= max(total, 50)


@pytest.mark.parametrize("size", [(100, 30), (120, 36), (160, 40), (200, 50)])
async def test_timeline_rows_tell_two_edits_apart(
    connect: Any, make_vault: Any, settings_dir: Path, size: tuple[int, int]
) -> None:
    a, b = "study/system-design/idempotency-keys.md", "study/system-design/离线同步与冲突解决.md"
    root = make_vault({a: "# A\n\nold line\n", b: "# B\n\nold line\n"})
    async with connect(root) as s:
        await s.call("edit_text", path=a, old="old line", new="new line\nand one more")
        await s.call("edit_text", path=b, old="old line", new="new line")
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: sum(r.kind == "ai" for r in t.rows) == 2)
        await until(pilot, lambda: "+2 −1" in screen_text(app), timeout=5)
        lines = screen_text(app).splitlines()
    rows = [line.split("│")[1] for line in lines if " ai " in line]  # the timeline pane only
    assert len(rows) == 2, "\n".join(lines)
    first, second = sorted(rows, key=lambda r: "idempotency" in r)
    # the file name whole, the client, the +/- counts: the two rows read differently
    assert "离线同步与冲突解决.md" in first and "+1 −1" in first, first
    assert "idempotency-keys.md" in second and "+2 −1" in second, second
    assert all(r.count("edit_text") == 1 and "mcp" in r for r in rows), rows


@pytest.fixture
def strict_vault(make_vault: Any, settings_dir: Path) -> Path:
    return make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- crdt\n",
            "w.md": "# W\n\n## Log\n- one\n",
        }
    )


async def _detail_of(app: Dashboard, pilot: Any, pick: Any) -> str:
    t = app.query_one("#timeline", Timeline)
    await until(pilot, lambda: any(pick(r) for r in t.rows))
    row = next(r for r in t.rows if pick(r))
    t.move_to(t.index_of(row.key))  # type: ignore[arg-type]
    await until(pilot, lambda: app.main._selected == row.key)
    await workers_done(app)  # a commit's diff is read in a worker; an event's detail at once
    return app.query_one("#detail", LinesView).plain


async def test_every_rejection_shows_what_the_ai_tried(connect: Any, strict_vault: Path) -> None:
    async with connect(strict_vault) as s:
        body = "# Idea\n\nmerge on read\n"
        await s.error("create_doc", path="inbox/idea.md", body=body, tags=["made-up-tag"])
        await s.error("update_frontmatter", path="w.md", add_tags=["totally-new-tag"])
    events = read_all(state_dir(strict_vault) / "events.jsonl")
    rejected = [e for e in events if e["kind"] == "rejected"]
    assert len(rejected) == 2 and all(e["diff"] for e in rejected), rejected
    app = Dashboard(strict_vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        create = await _detail_of(app, pilot, lambda r: "made-up" in r.summary)
        tags = await _detail_of(app, pilot, lambda r: "totally" in r.summary)
    assert "+merge on read" in create and "tags: [made-up-tag]" in create, create
    assert "add_tags: [totally-new-tag]" in tags, tags


async def test_conflict_noop_and_server_details_in_words(connect: Any, strict_vault: Path) -> None:
    async with connect(strict_vault) as s:
        read = await s.call("read_doc", path="w.md")
        (strict_vault / "w.md").write_text("# W\n\n## Log\n- one\n- the owner's line\n")
        git(strict_vault, "commit", "-qam", "my own note")
        await s.error("replace_doc", path="w.md", content="# stale\n", hash=read["hash"])
        await s.call("update_frontmatter", path="w.md", add_tags=["crdt"])
        await s.call("update_frontmatter", path="w.md", add_tags=["crdt"])  # again: a no-op
    Journal(state_dir(strict_vault) / "events.jsonl").append(
        ServerStarted(
            transport="http",
            read_only=False,
            version="9.9",
            vault=str(strict_vault),
            config_errors=[],
        )
    )
    app = Dashboard(strict_vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        conflict = await _detail_of(app, pilot, lambda r: r.kind == "conflict")
        noop = await _detail_of(app, pilot, lambda r: r.kind == "noop")
        server = await _detail_of(app, pilot, lambda r: r.kind == "server")
    # the commit that came between the AI's read and its write, and its diff; no hashes
    assert "changed since the AI's read by" in conflict and "my own note" in conflict, conflict
    assert "+ - the owner's line" in conflict and read["hash"] not in conflict, conflict
    assert "already says" in noop and "{" not in noop and "[" not in noop, noop
    assert "started over http (read and write, version 9.9)" in server, server


async def test_a_snapshot_row_says_why_it_is_there(connect: Any, strict_vault: Path) -> None:
    (strict_vault / "w.md").write_text("# W\n\n## Log\n- one\n- mine, not committed\n")
    async with connect(strict_vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- the AI's")
    app = Dashboard(strict_vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: any(r.kind == "snapshot" for r in t.rows))
        row = next(r for r in t.rows if r.kind == "snapshot")
        t.move_to(t.index_of(row.key))  # type: ignore[arg-type]
        view = app.query_one("#detail", LinesView)
        await until(pilot, lambda: "uncommitted edits" in view.plain)
        assert "+ - mine, not committed" in view.plain


async def test_side_by_side_is_laid_out_again_for_a_new_width(
    connect: Any, make_vault: Any, settings_dir: Path
) -> None:
    root = make_vault({"n.md": "# N\n\ntags: [system-design, 面试]\n" + "prose words " * 30 + "\n"})
    async with connect(root) as s:
        res = await s.call("edit_text", path="n.md", old="面试]", new="面试, crdt]")
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(200, 50)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.index_of(f"c:{res['commit']}") is not None)
        t.move_to(t.index_of(f"c:{res['commit']}"))  # type: ignore[arg-type]
        await pilot.press("s")
        view = app.query_one("#detail", LinesView)
        await until(pilot, lambda: "│" in view.plain)
        before = [line.plain for line in view.lines]
        await pilot.resize_terminal(100, 30)  # stacked: the diff pane gets wider
        await until(pilot, lambda: [line.plain for line in view.lines] != before)

        def laid_out() -> tuple[int, list[int]]:
            rows = [line.cell_length for line in view.lines if "│" in line.plain]
            return view.scrollable_content_region.width, rows

        # laid out again for the new width (a resize comes as more than one event)
        old = max(len(b) for b in before if "│" in b)
        await until(
            pilot,
            lambda: (
                bool(laid_out()[1])
                and max(laid_out()[1]) <= laid_out()[0]
                and max(laid_out()[1]) > old
            ),
            "the side by side laid out for the new width",
            describe=laid_out,
        )
        rows = [line for line in view.lines if "│" in line.plain]
        width = view.scrollable_content_region.width
        assert rows and all(r.cell_length <= width for r in rows), (width, [r.plain for r in rows])
        # and the wider pane is used: the old side by side was narrower
        assert max(r.cell_length for r in rows) > max(len(b) for b in before if "│" in b)


async def test_the_cursor_row_is_in_sight_after_a_resize_under_another_screen(
    make_vault: Any, settings_dir: Path
) -> None:
    root = make_vault({"a.md": "# A\n"})
    for i in range(40):  # 40 owner commits: rows enough to scroll at 80x24
        (root / "a.md").write_text(f"# A\n\n{i}\n")
        git(root, "commit", "-qam", f"edit {i}")
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(200, 50)) as pilot:
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.row_count >= 40)
        t.move_to(30)
        await until(pilot, lambda: app.main._selected == t.rows[30].key, "row 30 selected")
        await pilot.press("S")  # Stats on top while the terminal shrinks
        await until(pilot, lambda: type(app.screen).__name__ == "StatsScreen")
        await pilot.resize_terminal(80, 24)
        await until(
            pilot, lambda: app.screen.size == (80, 24), "Stats resized", describe=lambda: app.size
        )
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))

        def sight() -> tuple[int, float, int]:
            return t.cursor, t.scroll_y, t.scrollable_content_region.height - 1

        # the main screen laid out at the new size, the cursor's row brought into sight
        await until(
            pilot,
            lambda: t.size.height < 24 and t.scroll_y <= 30 < t.scroll_y + sight()[2],
            "the cursor's row in sight at 80x24",
            describe=sight,
        )
        seen = t.scrollable_content_region.height - 1  # the header line
        assert t.cursor == 30
        assert t.scroll_y <= 30 < t.scroll_y + seen, (t.scroll_y, seen)
