"""The dashboard under Pilot: real git repos, writes through real MCP clients, a real server
child, revert from the keyboard."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from textual.binding import Binding
from textual.command import CommandList, CommandPalette
from textual.widgets import DataTable, Footer, Input, Static

from app.services.owner_flows import move_preview
from app.services.supervisor import ServerSupervisor
from app.ui.dashboard import Dashboard, exit_words, stopped_reason
from app.ui.dialogs.file_dialogs import DestinationPrompt, FileFinder
from app.ui.dialogs.modals import ConfirmModal, HelpModal
from app.ui.dialogs.revert_dialog import BlockersModal
from app.ui.screens.insights import TagsScreen
from app.ui.screens.main_screen import DiffPane, MainScreen
from app.ui.screens.reads import ReadsScreen
from app.ui.widgets.lines import LinesView
from app.ui.widgets.timeline import Timeline, when
from server.core.state_files import state_dir
from server.write.journal import Journal, ServerStarted, ServerStopped

from .conftest import diff_shown, git, screen_is, until, workers_done
from .desk import footer, footer_fits
from .settling import settled

pytestmark = pytest.mark.anyio


def kinds(app: Dashboard) -> list[str]:
    """The kinds of the rows the timeline shows: the widget's, not the feed's (a test that
    waited on the feed then pressed a key or read a row met a timeline not yet filled with
    them: runs 12 and 14 of Dec 5)."""
    return [r.kind for r in app.main.query_one("#timeline", Timeline).rows]


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml, unknown: reject}\n",
            "tags.yaml": "- crdt\n",
            "w.md": "# W\n\n## Log\n- one\n",
        }
    )


@pytest.mark.slow
async def test_ai_writes_rejections_and_conflicts_show_up_live(vault: Path) -> None:
    sup = ServerSupervisor(vault)
    url = sup.start()
    app = Dashboard(vault, supervisor=sup, poll_seconds=0.1)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(pilot, lambda: "import" in kinds(app))
            headers = {"Authorization": f"Bearer {sup.token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(
                    streamable_http_client(url, http_client=http),
                    client_info=Implementation(name="pilot-ai", version="1"),
                ) as c,
            ):
                read = (await c.call_tool("read_doc", {"path": "w.md"})).structured_content
                await c.call_tool(
                    "append_section", {"path": "w.md", "heading": "Log", "content": "- two"}
                )
                await c.call_tool(
                    "replace_doc", {"path": "w.md", "content": "# x\n", "hash": read["hash"]}
                )
                await c.call_tool("create_doc", {"path": "n.md", "body": "# N\n", "tags": ["nope"]})
            await until(pilot, lambda: kinds(app)[:3] == ["rejected", "conflict", "ai"])
            ai = next(r for r in app.visible_rows() if r.kind == "ai")
            assert ai.who.startswith("pilot-ai") and ai.paths == ("w.md",)
            assert "clients: pilot-ai" in str(app.query_one("#header", Static).render())
            await pilot.press("e")  # conflicts and rejections only
            assert kinds(app) == ["rejected", "conflict"]
            await pilot.press("e", "a")
            assert kinds(app) == ["ai"]
            await pilot.press("a")
            await open_filter(pilot)
            await pilot.press("n", "full_stop", "m", "d", "enter")
            assert kinds(app) == ["rejected"]
            await pilot.press("slash", "escape")
            assert "import" in kinds(app)
    finally:
        sup.stop()


@pytest.mark.slow
async def test_the_server_child_is_restarted_when_it_dies(vault: Path) -> None:
    sup = ServerSupervisor(vault)  # not started: the app starts it after its first paint
    app = Dashboard(vault, supervisor=sup, poll_seconds=0.1)

    def header() -> str:
        return str(app.query_one("#header", Static).render())

    try:
        async with app.run_test(size=(120, 30)) as pilot:
            assert "starting server…" in header()  # drawn before the server is up
            # a server start took over 30 s at a load of 30 on 2 cores
            await until(pilot, lambda: "● serving http://" in header(), timeout=90, describe=header)
            await until(pilot, lambda: bool(app.feed.rows))
            assert sup.proc is not None
            os.kill(sup.proc.pid, signal.SIGKILL)
            await until(pilot, lambda: sup.restarts == 1 and sup.alive)
            await until(pilot, lambda: "restarted 1×, last: killed by SIGKILL" in header())
            assert f"● serving {sup.url}" in header()  # the URL clients use stays in sight
    finally:
        sup.stop()


async def open_filter(pilot: Any) -> None:
    """`/`, then the filter box has the focus. The focus moves on a later turn of the loop: a
    key typed before it went to the timeline (under load the z of "zebra" was lost)."""
    await pilot.press("slash")
    box = pilot.app.query_one("#filter", Input)
    await until(pilot, lambda: box.has_focus, "the filter box", describe=lambda: pilot.app.focused)


async def _select(pilot: Any, app: Dashboard, key: str) -> None:
    t = app.query_one("#timeline", Timeline)
    await until(pilot, lambda: t.index_of(key) is not None)
    i = t.index_of(key)
    assert i is not None
    t.move_to(i)
    await diff_shown(pilot, t.rows[i])


async def test_revert_from_the_keyboard(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    (vault / "w.md").write_text(
        (vault / "w.md").read_text().replace("# W\n", "# W, mine\n")
    )  # pending
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        await _select(pilot, app, f"c:{res['commit']}")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: "revert" in kinds(app))
    text = (vault / "w.md").read_text()
    assert "ai line" not in text and "# W, mine" in text
    assert (
        git(vault, "log", "-1", "--format=%(trailers:key=Vaultwatch-Action,valueonly)").strip()
        == "revert"
    )


async def test_revert_right_after_a_move_acts_on_the_row_the_cursor_is_on(
    connect: Any, vault: Path
) -> None:
    # `j r` typed fast: r ran before the timeline's Highlighted message for j was handled
    async with connect(vault) as s:
        older = await s.call("append_section", path="w.md", heading="Log", content="- first")
        newer = await s.call("create_doc", path="n.md", body="# N\n")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        await _select(pilot, app, f"c:{newer['commit']}")
        t = app.query_one("#timeline", Timeline)
        at = t.index_of(f"c:{older['commit']}")
        assert at is not None
        t.move_to(at)  # and r at once, before the message loop runs again
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.action_revert()
        modal = await screen_is(pilot, ConfirmModal)  # mounted: n goes to it, not the timeline
        assert isinstance(modal, ConfirmModal)
        assert older["commit"][:8] in modal.title_text, modal.title_text
        await pilot.press("n")
        await until(
            pilot, lambda: app.screen is screen, "the dialog gone", describe=lambda: app.screen
        )


async def test_conflicting_revert_leaves_the_vault_unchanged(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        first = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.call("edit_text", path="w.md", old="- ai line", new="- ai line, edited")
    before = (vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(140, 40)) as pilot:
        await _select(pilot, app, f"c:{first['commit']}")
        await pilot.press("r")  # the later commit is in the way: named before anything is done
        await until(pilot, lambda: isinstance(app.screen, BlockersModal))
        assert ((vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")) == before
        modal = app.screen
        await pilot.press("n")  # decline reverting the later commit too
        await until(pilot, lambda: not isinstance(app.screen, BlockersModal), "the dialog gone")
        # its ticks' check, still running in its thread when `n` closed it, answers into a
        # dialog that is gone: nothing to say (it raised NoMatches under load, once)
        assert isinstance(modal, BlockersModal)
        modal._said("the revert would conflict")
        assert modal.ticked() == []
        await settled(pilot, ignore=("poll",))  # the revert's worker ended, having reverted nothing
    assert ((vault / "w.md").read_text(), git(vault, "rev-parse", "HEAD")) == before


async def test_keys_screens_and_theme(connect: Any, vault: Path, settings_dir: Path) -> None:
    async with connect(vault) as s:
        await s.call("update_frontmatter", path="w.md", add_tags=["crdt"])
    app = Dashboard(vault, poll_seconds=0.1, theme="vaultwatch-light")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: bool(app.feed.rows))
        assert app.theme == "vaultwatch-light"
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))
        tags = app.screen
        assert isinstance(tags, TagsScreen)
        assert [r["tag"] for r in tags.rows] == ["crdt"]
        await pilot.press("escape", "dollar_sign")
        await until(pilot, lambda: isinstance(app.screen, ReadsScreen))
        reads = app.screen
        assert isinstance(reads, ReadsScreen)
        assert reads.cost["tools"]["update_frontmatter"] > 0
        await pilot.press("escape", "c")
        await until(pilot, lambda: type(app.screen).__name__ == "ConnectModal")
        await pilot.press("escape", "question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpModal")
    assert (
        '"theme": "vaultwatch-light"' in (settings_dir / "vaultwatch" / "settings.json").read_text()
    )


async def test_each_screen_owns_its_keys(connect: Any, vault: Path) -> None:
    """On Tags the main screen's keys do nothing to the hidden timeline (x, r, j, a)."""
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.call("append_section", path="w.md", heading="Log", content="- ai line 2")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: kinds(app)[:2] == ["ai", "ai"])
        t = app.query_one("#timeline", Timeline)
        t.move_to(0)
        await diff_shown(pilot, t.rows[0])
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))
        await pilot.press("x", "r", "j", "j", "a", "m")
        await settled(
            pilot, ignore=("poll",)
        )  # a key the main screen took would have a worker or a dialog
        assert isinstance(app.screen, TagsScreen) and len(app.screen_stack) == 2
        assert t.cursor == 0 and not app.main.filters.groups
        footer = app.screen.query_one(Footer)
        shown = {
            b.binding.description for b in app.screen.active_bindings.values() if b.binding.show
        }
        assert footer is not None and "Revert" not in shown and "Delete" not in shown


async def test_the_footer_fits_80_columns_and_follows_the_focus_and_the_screen(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "ai" in kinds(app))

        def shows(wanted: set[str]) -> Callable[[], bool]:
            return lambda: wanted <= {k.description for k in footer(app)} and footer_fits(app, 80)

        await until(
            pilot,
            shows({"Diff", "Filter", "AI", "You", "Errors", "Revert", "Keys", "Quit"}),
        )
        await pilot.press("enter")  # the diff's keys while it has focus
        await until(pilot, lambda: isinstance(app.focused, DiffPane))
        await until(pilot, shows({"Hunk", "File", "Find", "Back", "Keys", "Quit"}))
        assert "AI" not in [k.description for k in footer(app)]
        await pilot.press("escape", "c")  # a dialog shows its own keys, not the main screen's
        await until(pilot, lambda: type(app.screen).__name__ == "ConnectModal")
        await until(pilot, lambda: "Close" in [k.description for k in footer(app)])
        said = [k.description for k in footer(app)]
        assert "Revert" not in said and "Filter" not in said


async def test_help_lists_the_focused_panes_keys_from_their_bindings(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: "ai" in kinds(app))
        await settled(pilot, ignore=("poll",))
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpModal))
        listed = {what: keys for keys, what in app.screen.keys}  # type: ignore[attr-defined]
        hidden = {"config_errors", "abort_git"}  # shown only while there is one, or git is mid-op
        bindings = [b for b in MainScreen.BINDINGS if isinstance(b, Binding)]
        assert len(bindings) == len(MainScreen.BINDINGS)  # a tuple would list no tooltip
        own = {b.tooltip or b.description for b in bindings if b.action not in hidden}
        assert own <= set(listed), own - set(listed)
        assert (
            listed["revert the selected AI commit (or your own move, create, delete or revert)"]
            == "r"
        )
        assert "↓ / j" in {k for k in listed.values()} or "j / ↓" in set(listed.values())
        await pilot.press("escape", "enter", "question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpModal))
        listed = {what: keys for keys, what in app.screen.keys}  # type: ignore[attr-defined]
        assert listed["next hunk"] == "]" and listed["next line with the / text"] == "n"
        assert not any("rows on/off" in w for w in listed)  # the timeline's filters: not here
        await pilot.press("escape", "escape", "t", "question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpModal))
        listed = {what: keys for keys, what in app.screen.keys}  # type: ignore[attr-defined]
        assert not any("revert" in w for w in listed)


def notes_with_hunks(make_vault: Any) -> Path:
    """Two notes of 60 lines; one human commit changes lines 5 and 50 of each."""
    body = "".join(f"line {i}\n" for i in range(60))
    root = make_vault({"a.md": body, "b.md": body})
    for name in ("a.md", "b.md"):
        text = (root / name).read_text().replace("line 5\n", "line five\n")
        (root / name).write_text(text.replace("line 50\n", "line fifty\n"))
    git(root, "commit", "-qam", "edit both")
    return root


async def test_enter_focuses_the_diff_where_keys_move_by_line_hunk_and_file(
    make_vault: Any,
) -> None:
    root = notes_with_hunks(make_vault)
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: len(kinds(app)) == 2)
        t = app.query_one("#timeline", Timeline)
        pane = app.query_one("#detail", DiffPane)
        await until(pilot, lambda: "a.md" in pane.plain)
        cursor = t.cursor
        await pilot.press("enter")
        assert app.focused is pane

        def top() -> str:
            return pane.lines[pane._top_line()].plain

        await pilot.press("j", "j")
        assert pane.scroll_y == 2 and t.cursor == cursor  # the diff moved, not the timeline
        await pilot.press("right_square_bracket")
        assert top().startswith("@@ -3,")  # the first hunk (line 5, with 3 lines of context)
        await pilot.press("right_square_bracket")
        assert top().startswith("@@ -48,")
        await pilot.press("right_curly_bracket")
        assert "b.md" in top()
        await pilot.press("left_curly_bracket")
        assert "a.md" in top()
        before = pane.scroll_y
        await pilot.press("ctrl+d")
        assert pane.scroll_y > before
        await pilot.press("escape")
        assert app.focused is t and t.cursor == cursor


async def test_filter_as_you_type_matches_changed_text_and_says_no_matches(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        hit = await s.call("append_section", path="w.md", heading="Log", content="- zebra crossing")
        for i in range(3):
            await s.call("append_section", path="w.md", heading="Log", content=f"- later {i}")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: kinds(app)[:4] == ["ai"] * 4)
        t = app.query_one("#timeline", Timeline)
        t.move_to(t.row_count - 1)  # far down: the match must come into view and be selected
        await open_filter(pilot)
        await pilot.press(*"zebra")  # no enter: it filters while typing
        await until(pilot, lambda: [r.key for r in t.rows] == [f"c:{hit['commit']}"])
        assert t.cursor == 0 and t.scroll_y == 0
        assert "/zebra" in str(t.border_title)
        pane = app.query_one("#detail", DiffPane)
        await until(pilot, lambda: "zebra crossing" in pane.plain)
        await pilot.press("enter", "enter", "n")  # apply, focus the diff, find the text in it
        assert app.focused is pane
        assert pane.found is not None and "zebra crossing" in pane.lines[pane.found].plain
        await open_filter(pilot)  # back in the box, the text kept
        await pilot.press("q")  # "zebraq": nothing has it
        await until(pilot, lambda: t.row_count == 0)
        assert "no matches" in str(t.border_title)
        assert "No rows match" in app.query_one("#detail", DiffPane).plain
        await pilot.press("escape")
        await until(pilot, lambda: t.row_count >= 5)
        assert t.border_title is None and not app.main.filters.active


async def test_keys_typed_right_after_the_slash_go_into_the_filter(vault: Path) -> None:
    """A typist's `/zeb` arrives as keys already queued when `/` is handled: the box had the
    focus only on a later turn of the loop, so the z went to the timeline and was lost."""
    from textual import events

    app = Dashboard(vault, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(kinds(app)), "the timeline's rows")
        await workers_done(app)
        typed = [("slash", "/"), *((c, c) for c in "zeb"), ("slash", "/"), ("x", "x")]
        for key, char in typed:  # all queued before the first is handled
            app.post_message(events.Key(key, char))
        box = app.query_one("#filter", Input)
        # in the box a slash is text (a folder in a path)
        await until(
            pilot, lambda: box.value == "zeb/x", "zeb/x in the box", describe=lambda: box.value
        )


async def test_filters_combine_and_stay_in_sight(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
        await s.error("create_doc", path="n.md", body="# N\n", tags=["nope"])  # rejected
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: {"ai", "rejected", "import"} <= set(kinds(app)))
        await pilot.press("a", "e")
        assert set(kinds(app)) == {"ai", "rejected"}
        t = app.query_one("#timeline", Timeline)
        # the filters stay in sight once every toast has gone: gone now, as their timeouts
        # would take them (the launch's "To review" stays 8 s), and the app settled after
        app.clear_notifications()
        await settled(pilot, "the toasts gone")
        assert not app._notifications
        assert "AI + Errors" in str(t.border_title)
        await pilot.press("escape")
        assert "import" in kinds(app) and t.border_title is None


async def test_launch_selects_the_newest_ai_write_and_folds_server_sessions(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    journal = Journal(state_dir(vault) / "events.jsonl")
    journal.append(
        ServerStarted(
            transport="http", read_only=False, version="0", vault=str(vault), config_errors=[]
        )
    )
    journal.append(ServerStopped(transport="http", reason="signal"))
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: "server" in kinds(app))
        t = app.query_one("#timeline", Timeline)
        # the feed has the rows before the timeline is filled from it
        await until(pilot, lambda: t.current is not None)
        assert t.current is not None and t.current.key == f"c:{res['commit']}"
        servers = [r for r in t.rows if r.kind == "server"]
        assert len(servers) == 1 and "started" in servers[0].summary
        assert "stopped" in servers[0].summary and "signal" in servers[0].summary


async def test_launch_with_no_ai_write_selects_the_newest_row_then_the_first_ai_write(
    connect: Any, vault: Path
) -> None:
    """A demo launch: the import and the server's start, no AI write yet. The cursor is on the
    newest row (it was on the import, whose diff is every file of the vault), and the first AI
    write that lands is selected, as one that was there at launch would have been."""
    Journal(state_dir(vault) / "events.jsonl").append(
        ServerStarted(
            transport="http", read_only=False, version="0", vault=str(vault), config_errors=[]
        )
    )
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: "server" in kinds(app) and "import" in kinds(app))
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.current is not None and t.current.kind == "server")
        assert t.cursor == 0
        async with connect(vault) as s:
            res = await s.call("append_section", path="w.md", heading="Log", content="- ai")
        await until(pilot, lambda: t.current is not None and t.current.kind == "ai")
        assert t.current is not None and t.current.key == f"c:{res['commit']}"
        # once placed, a newer AI write does not take the cursor from the one being read
        async with connect(vault) as s:
            await s.call("append_section", path="w.md", heading="Log", content="- ai 2")
        await until(pilot, lambda: sum(k == "ai" for k in kinds(app)) == 2)
        await until(  # the timeline filled with it: where its cursor goes is decided
            pilot,
            lambda: sum(r.kind == "ai" for r in t.rows) == 2,
            "the timeline to show both AI writes",
            describe=lambda: [r.kind for r in t.rows],
        )
        await settled(pilot, ignore=("poll",))
        assert t.current is not None and t.current.key == f"c:{res['commit']}"


async def test_an_ai_write_does_not_take_the_cursor_the_owner_moved(
    connect: Any, vault: Path
) -> None:
    git(vault, "commit", "-q", "--allow-empty", "-m", "owner, before the AI")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: kinds(app).count("import") == 1 and len(kinds(app)) >= 2)
        t = app.query_one("#timeline", Timeline)
        # the timeline showing it too (the feed's rows reach the widget on its next fill: End
        # pressed before took the cursor to the last row then, and there it stayed)
        await until(
            pilot,
            lambda: bool(t.rows) and t.rows[-1].kind == "import",
            "the timeline to show the import last",
            describe=lambda: [r.kind for r in t.rows],
        )
        t.focus()
        await pilot.press("end")  # the owner looks at the oldest row, the import
        await until(
            pilot,
            lambda: t.current is not None and t.current.kind == "import",
            "the cursor on the import",
            describe=lambda: (t.current, [r.kind for r in t.rows]),
        )
        async with connect(vault) as s:
            await s.call("append_section", path="w.md", heading="Log", content="- ai")
        await until(pilot, lambda: "ai" in kinds(app))
        await until(  # the timeline filled with it: where its cursor goes is decided
            pilot,
            lambda: any(r.kind == "ai" for r in t.rows),
            "the timeline to show the AI write",
            describe=lambda: [r.kind for r in t.rows],
        )
        await settled(pilot, ignore=("poll",))
        assert t.current is not None and t.current.kind == "import"


async def test_an_owner_action_selects_its_commit_and_a_move_names_the_moved_file(
    make_vault: Any,
) -> None:
    root = make_vault({"inbox/idea.md": "# Idea\n", "index.md": "- [i](inbox/idea.md)\n"})
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(kinds(app)))
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, FileFinder))
        await pilot.press(*"inbox idea", "enter")
        await until(pilot, lambda: isinstance(app.screen, DestinationPrompt))
        await pilot.press("ctrl+u", *"ideas/idea.md", "enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        t = app.query_one("#timeline", Timeline)
        await until(pilot, lambda: t.current is not None and t.current.kind == "move")
        assert t.current is not None and t.current.paths[0] == "ideas/idea.md"


async def test_the_palette_offers_the_screens_commands(connect: Any, vault: Path) -> None:
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(kinds(app)))
        titles = [c.title for c in app.get_system_commands(app.screen)]
        wanted = [
            "Tag trends",
            "What the AI reads: cost, most read, context",
            "AI rows on/off (a, h and e combine)",
        ]
        for title in [*wanted, "Connect a client (copy a snippet)", "Theme"]:
            assert title in titles
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"tag trends")
        options = app.screen.query_one(CommandList)
        await until(pilot, lambda: options.option_count > 0 and options.highlighted is not None)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))


async def test_resizing_keeps_the_selected_row_on_screen(make_vault: Any) -> None:
    root = make_vault({"a.md": "0\n"})
    for i in range(60):
        (root / "a.md").write_text(f"{i + 1}\n")
        git(root, "commit", "-qam", f"edit {i}")
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(200, 50)) as pilot:
        # 61 commits, and a server event when one comes
        await until(pilot, lambda: len(kinds(app)) >= 61, "61 rows", describe=lambda: kinds(app))
        t = app.query_one("#timeline", Timeline)
        t.move_to(40)
        await diff_shown(pilot, t.rows[40])
        await pilot.resize_terminal(80, 24)

        def in_view() -> bool:
            shown = t.scrollable_content_region.height - 1  # below the column headings
            return shown < 30 and t.scroll_y <= t.cursor < t.scroll_y + shown

        await until(pilot, in_view)
        assert t.cursor == 40


async def test_a_config_error_shows_whole_or_names_its_key(make_vault: Any) -> None:
    root = make_vault({"vault.config.yaml": "tags:\n  unknown: rejekt\n", "a.md": "# A\n"})
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        header = app.query_one("#header", Static)
        await until(pilot, lambda: "config error" in str(header.render()))
        assert "config error (! shows it)" in str(header.render())
        await pilot.press("exclamation_mark")
        await until(pilot, lambda: any("tags.unknown" in n.message for n in app._notifications))
        await pilot.resize_terminal(200, 24)
        await until(pilot, lambda: "tags.unknown" in str(header.render()))


def test_the_time_column_shows_the_date_for_any_other_day() -> None:
    local = datetime.now().astimezone()
    midnight = local.replace(hour=0, minute=5, second=0, microsecond=0)
    late = local.replace(hour=23, minute=55, second=0, microsecond=0)
    assert when(midnight, late) == "00:05:00"  # same day, almost 24 h apart
    yesterday = midnight - timedelta(minutes=10)  # 23:55 the day before, 10 minutes earlier
    assert when(yesterday, midnight) == yesterday.strftime("%m-%d %H:%M")


async def test_a_theme_switch_repaints_the_open_diff(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    app = Dashboard(vault, poll_seconds=0.1, theme="vaultwatch-dark")
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.query_one("#detail", DiffPane)
        await until(pilot, lambda: "+ - ai line" in pane.plain)
        await settled(pilot, ignore=("poll",))  # no other read of the diff is on its way
        row = next(i for i, line in enumerate(pane.lines) if line.plain.startswith("+ - ai"))

        def added() -> Any:
            return list(pane.render_line(row))

        dark = [seg.style for seg in added()]
        app.theme = "vaultwatch-light"
        await until(pilot, lambda: [seg.style for seg in added()] != dark)


def test_server_sessions_fold_to_one_row_per_process() -> None:
    from app.services.feed import event_row
    from app.services.view_rows import fold_sessions

    events = [
        {"kind": "server_started", "pid": 1, "ts": "2026-01-15T10:00:00Z", "transport": "http"},
        {"kind": "conflict", "pid": 9, "ts": "2026-01-15T10:01:00Z", "path": "a.md"},
        {"kind": "server_stopped", "pid": 1, "ts": "2026-01-15T10:02:00Z", "reason": "exit"},
        {"kind": "server_started", "pid": 2, "ts": "2026-01-15T10:03:00Z", "transport": "stdio"},
    ]
    rows = [r for n, e in enumerate(events) if (r := event_row(e, n)) is not None][::-1]
    folded = fold_sessions(rows)
    # pid 2 started after pid 1 stopped, nothing between: one row for both, said as the newest
    assert [r.kind for r in folded] == ["server", "conflict"]
    assert folded[0].summary.startswith("2 server sessions since 01-15 ")
    assert "pid 2 (stdio): started" in folded[0].summary and "stopped" not in folded[0].summary
    assert folded[0].key == rows[0].key  # the newest session's row: its detail is shown
    # with a row between them, each session is its own row
    between = {"kind": "rejected", "pid": 9, "ts": "2026-01-15T10:02:30Z", "code": "x"}
    events.insert(3, between)
    rows = [r for n, e in enumerate(events) if (r := event_row(e, n)) is not None][::-1]
    folded = fold_sessions(rows)
    assert [r.kind for r in folded] == ["server", "rejected", "server", "conflict"]
    assert "pid 2 (stdio): started" in folded[0].summary and "stopped" not in folded[0].summary
    assert "pid 1 (http): started" in folded[2].summary and "stopped" in folded[2].summary


async def test_move_dialogs_edit_at_the_end_pick_nothing_unasked_and_warn_about_setup_files(
    make_vault: Any,
) -> None:
    root = make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml}\n",
            "tags.yaml": "- crdt\n",
            "CLAUDE.md": "# Rules\n",
            "notes/a.md": "# A\n",
        }
    )
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(kinds(app)))
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, FileFinder))
        await pilot.press("ctrl+u", "enter")  # an empty query picks nothing
        # the enter is handled when press returns, and a pick dismisses the finder at once (a
        # settled() would wait on the move's worker, which waits on this very dialog)
        await pilot.pause()
        assert isinstance(app.screen, FileFinder)
        await pilot.press(*"claude", "enter")
        await until(pilot, lambda: isinstance(app.screen, DestinationPrompt))
        await pilot.press("backspace")  # edits the end of the path, not all of it
        assert app.screen.query_one("#dest", Input).value == "CLAUDE.m"
        await pilot.press("ctrl+u", *"docs/CLAUDE.md", "enter")
        await screen_is(pilot, ConfirmModal)  # its body filled on mount
        body = app.screen.query_one("#dialog-body", LinesView).plain
        assert "⚠ CLAUDE.md is the rules file" in body
    _, preview = move_preview(root, "tags.yaml", "config/tags.yaml")
    assert any("tags.yaml is the tag vocabulary" in line.text for line in preview.lines)
    _, preview = move_preview(root, "notes/a.md", "notes/b.md")
    assert not any("⚠" in line.text for line in preview.lines)


async def test_tags_follow_the_vault_live_and_enter_shows_a_tags_notes(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(
        {
            "vault.config.yaml": "tags: {vocabulary: tags.yaml}\n",
            "tags.yaml": "- crdt\n- caching\n",
            "w.md": "---\ntags: [crdt]\n---\n# W\n",
            "x.md": "# X\n",
        }
    )
    app = Dashboard(root, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: bool(kinds(app)))
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TagsScreen))
        tags = app.screen
        assert [r["tag"] for r in tags.rows] == ["crdt"]  # type: ignore[attr-defined]
        async with connect(root) as s:
            res = await s.call("update_frontmatter", path="x.md", add_tags=["caching"])
        await until(pilot, lambda: {r["tag"] for r in tags.rows} == {"crdt", "caching"})  # type: ignore[attr-defined]
        table = tags.query_one("#tags", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        table.move_cursor(row=[r["tag"] for r in tags.rows].index("caching"))  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        t = app.query_one("#timeline", Timeline)
        assert t.current is not None and t.current.key == f"c:{res['commit']}"
        assert all("x.md" in r.paths for r in t.rows) and "#caching" in str(t.border_title)
        await pilot.press("escape")
        assert not app.main.filters.active


def test_a_restart_says_why_the_server_stopped() -> None:
    events = [{"kind": "server_stopped", "pid": 41, "reason": "signal"}]
    assert exit_words(-9) == "killed by SIGKILL"
    # SIGTERM is caught: the server journals why and exits 0
    assert exit_words(0, stopped_reason(events, 41)) == "stopped by a signal"
    assert exit_words(0, stopped_reason(events, 42)) == "exit 0"
    assert exit_words(3) == "exit 3"
