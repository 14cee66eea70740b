"""The review screens under Pilot, on real vaults: AI writes through the real server, the
owner's commits between them, marks in the vault's notes ref. What is on screen is read back as
text (the compositor's lines) and the vault is checked with git."""

from __future__ import annotations

import dataclasses
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Implementation
from rich.cells import cell_len
from textual.content import Content
from textual.widgets import DataTable, Input, Static

from app.services import review_ahead
from app.services.review import mark_reviewed, summaries
from app.services.rewritten import NOTES_REF
from app.ui.dashboard import Dashboard
from app.ui.dialogs.modals import ConfirmModal
from app.ui.screens.main_screen import MainScreen
from app.ui.screens.note_screen import NoteScreen
from app.ui.screens.review_screen import OWNER_ADD, ReviewDiff, ReviewScreen
from app.ui.widgets.cells import cut_middle
from app.ui.widgets.editor import obsidian_url
from app.ui.widgets.header import HeaderFacts, ServerState, segments
from app.ui.widgets.header_fit import fit
from app.ui.widgets.lines import LinesView
from app.ui.widgets.review_notes import ReviewNotes

from .conftest import git, screen_is, until
from .desk import footer, footer_fits, screen_text
from .named_clients import as_client
from .review_desk import W, app_on, header, open_review, owner_edit, owner_move, shown
from .settling import settled

pytestmark = pytest.mark.anyio

LONG = "项目笔记/二零二六年第四季度/系统设计面试准备/关于离线同步与冲突解决的学习笔记.md"


@pytest.fixture
def vault(make_vault: Any, settings_dir: Path) -> Path:
    return make_vault(
        {
            "w.md": W,
            "a.md": "# A\n\n## Log\n",
            "b.md": "# B\n\n## Log\n",
            LONG: "# 离线同步\n\n## 日志\n",
        }
    )


def notes_listed(app: Dashboard) -> list[str]:
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    return [n.path for n in screen.review.notes] if screen.review else []


def diff_text(app: Dashboard) -> str:
    return app.screen.query_one(ReviewDiff).plain


async def press_and_confirm(pilot: Any, key: str) -> None:
    """A key whose action asks first: press it, then y in the dialog."""
    app = pilot.app
    first = app.screen
    await pilot.press(key)
    await until(pilot, lambda: app.screen is not first)
    await pilot.press("y")
    await until(pilot, lambda: app.screen is first)


async def refs_settle(pilot: Any) -> None:
    """Until the header's count was read at the refs as they are now."""
    app = pilot.app
    await until(pilot, lambda: not app.review_watch.stale() and not app.review_watch.busy)
    await settled(pilot, ignore=("poll",))  # the count's message handled: the header drawn from it


# -- the header ---------------------------------------------------------------------------------


async def test_the_header_counts_ai_changes_to_review_live(connect: Any, vault: Path) -> None:
    app = app_on(vault)
    async with app.run_test(size=(120, 30)) as pilot:
        # the header draws the count on its next refresh after the count lands
        await until(pilot, lambda: "nothing to review" in header(app))
        assert app.review_watch.count is not None
        async with connect(vault) as s:
            await s.call("append_section", path="a.md", heading="Log", content="- one")
            await until(pilot, lambda: "1 AI change to review in 1 note" in header(app))
            await s.call("append_section", path="b.md", heading="Log", content="- two")
            await s.call("append_section", path="b.md", heading="Log", content="- three")
        await until(pilot, lambda: "3 AI changes to review in 2 notes (v)" in header(app))
        # marks written elsewhere (the shell) show up: the count follows the notes ref
        mark_reviewed(vault, ["b.md"])
        await until(pilot, lambda: "1 AI change to review in 1 note" in header(app))
        mark_reviewed(vault)
        await until(pilot, lambda: "nothing to review" in header(app))


def test_the_count_keeps_both_numbers_at_80_columns(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = [{"kind": "read", "client": "claude-code/2.1"}]
    server = ServerState("up", "http://127.0.0.1:8765/mcp")
    facts = HeaderFacts(tmp_path / "笔记库", server, events, "vault.config.yaml", "10:00:00")
    wide = dataclasses.replace(facts, review=(1234, 150))
    long = dataclasses.replace(wide, root=tmp_path / "interview-notes-2026")
    indexing: list[dict[str, Any]] = [
        *events,
        {"kind": "semantic_progress", "indexed": 10, "total": 9000},
    ]
    for f, width, want in [
        (wide, 200, "1,234 AI changes to review in 150 notes (v)"),
        (long, 80, "  1,234 to review in 150 notes"),
        (dataclasses.replace(wide, events=indexing), 80, "  1,234 to review (v)  "),  # N23
    ]:
        line = fit(segments(f), width)
        assert want in line.plain and line.cell_length <= width, line.plain
    one = fit(segments(dataclasses.replace(facts, review=(1, 1))), 200).plain
    assert "1 AI change to review in 1 note (v)" in one
    assert (
        "nothing to review" in fit(segments(dataclasses.replace(facts, review=(0, 0))), 200).plain
    )
    assert "review" not in fit(segments(facts), 200).plain  # not counted yet: nothing said


# -- the list and the diff ----------------------------------------------------------------------


def at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """Commits made from here on carry this time (the server's git inherits it)."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)


async def test_the_list_newest_first_with_its_columns(
    connect: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with connect(vault) as s:
        at(monkeypatch, "2026-12-01T09:00:00")
        await s.call("append_section", path="a.md", heading="Log", content="- a1")
        at(monkeypatch, "2026-12-01T11:30:00")
        await s.call("append_section", path="a.md", heading="Log", content="- a2\n- a3")
        monkeypatch.delenv("GIT_AUTHOR_DATE")
        monkeypatch.delenv("GIT_COMMITTER_DATE")
        await s.call("append_section", path=LONG, heading="日志", content="- 周二：模拟面试")
        git(vault, "commit", "-q", "--allow-empty", "-m", "owner, nothing")
    app = app_on(vault)
    async with app.run_test(size=(200, 40)) as pilot:
        screen = await open_review(pilot)
        assert notes_listed(app) == [LONG, "a.md"]  # newest change first
        text = screen_text(app)
        assert "3 AI commits in 2 notes" in text.split("\n")[1]
        table = screen.query_one("#review-notes", DataTable)
        row = [c.plain for c in table.get_row_at(1)]
        assert row[0] == "a.md" and row[1] == "A" and row[2] == "2" and row[3] == "+3 −0"
        assert "append_section" in row[5] and "mcp" in row[5]
        assert row[4] == "12-01 09:00–11:30"  # the span, first to last (local time is UTC here)
        # the Chinese path as the other screens show a note (cells.note_label): its file name
        # first and whole, then its folder
        long_row = [c.plain for c in table.get_row_at(0)]
        folder, _, name = LONG.rpartition("/")
        assert long_row[0] == f"{name}  {folder}/"
        assert row[5] == "append_section · mcp"  # the client without its version
    async with app_on(vault).run_test(size=(80, 24)) as pilot:
        await open_review(pilot)
        # the footer is drawn after the screen: wait for its keys, not a moment
        await until(
            pilot,
            lambda: "Mark" in [k.description for k in footer(pilot.app)],
            "the review's footer",
            describe=lambda: [k.description for k in footer(pilot.app)],
        )
        assert footer_fits(pilot.app, 80)  # every key of the footer whole at 80 columns
        assert {"Mark", "Next", "Undo", "Revert", "Keys"} <= {
            k.description for k in footer(pilot.app)
        }


async def test_opening_fills_the_list_once_and_reads_the_first_diff_once(
    connect: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open is the figure the owner waits on: the list was filled a second time by the
    resize that follows mounting (same width), and the first note's diff was read two or three
    times (asked again by each highlight of the row while the first read ran)."""
    async with connect(vault) as s:
        for path in ("a.md", "b.md", LONG):
            await s.call(
                "append_section",
                path=path,
                heading="Log" if path != LONG else "日志",
                content="- x",
            )
    reads: list[str] = []
    real = review_ahead.net_diffs

    def counted(root: Path, notes: list[Any]) -> Any:
        reads.extend(n.path for n in notes)
        return real(root, notes)

    monkeypatch.setattr(review_ahead, "net_diffs", counted)
    fills = 0
    fill = ReviewNotes.fill

    def counted_fill(self: ReviewNotes, notes: Any, since: str) -> None:
        nonlocal fills
        fills += 1
        fill(self, notes, since)

    monkeypatch.setattr(ReviewNotes, "fill", counted_fill)
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        first = notes_listed(app)[0]
        await shown(pilot, first)
        await settled(
            pilot, ignore=("poll",)
        )  # every read finished and its message handled: no fill to come
        assert fills == 1
        assert reads.count(first) == 1, reads
        assert notes_listed(app)[1] in reads  # the next one was read ahead, once shown
        await pilot.resize_terminal(100, 36)
        await until(pilot, lambda: fills == 2)  # a new width shares the columns out again
        await settled(pilot, ignore=("poll",))  # and a second resize, if one came, handled
        assert fills == 2  # once, though a change of size can come as two resizes
        assert screen.shown is not None and screen.shown.note.path == first


def test_long_paths_are_cut_in_the_middle_by_cells() -> None:
    cut = cut_middle(LONG, 30)
    assert Content(cut).cell_length <= 30 and "…" in cut
    assert cut.startswith("项目") and cut.endswith(".md")
    assert cut_middle("a.md", 30) == "a.md"


async def test_the_net_diff_sets_the_owners_lines_apart(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        a1 = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        own = owner_edit(vault, "w.md", "- two\n", "- two (mine)\n")
    app = app_on(vault)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_review(pilot)
        await shown(pilot, "w.md")
        text = diff_text(app)
        lines = text.split("\n")
        mine = lines.index("+ - two (mine)")
        ai = lines.index("+ - ai four")
        assert lines[mine - 2].startswith(f"  ┌ YOU · {own[:8]}")  # above "- two", removed by you
        assert lines[ai - 1].startswith(f"  ┌ AI {a1['commit'][:8]} · append_section · ")
        assert "one diff from your last reviewed state (before " in text and ") to now" in text
        pane = app.screen.query_one(ReviewDiff)
        styles = {str(span.style) for span in pane.lines[mine].spans}
        assert OWNER_ADD in styles  # drawn apart from the AI's green lines
        assert OWNER_ADD not in {str(span.style) for span in pane.lines[ai].spans}


# -- mark, next, mark all -----------------------------------------------------------------------


async def test_mark_next_and_mark_all(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        for p in ("a.md", "b.md", "w.md"):
            await s.call("append_section", path=p, heading="Log", content=f"- in {p}")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        assert notes_listed(app) == ["w.md", "b.md", "a.md"]
        await pilot.press("n")  # the next unreviewed note
        await shown(pilot, "b.md")
        await pilot.press("space")  # b.md reviewed: exactly the commit on screen
        await until(pilot, lambda: notes_listed(app) == ["w.md", "a.md"])
        assert "b.md: 1 AI commit marked reviewed" in screen_text(app)
        assert "Reviewed: b.md" in git(vault, "notes", f"--ref={NOTES_REF}", "show", "HEAD~1")
        await until(pilot, lambda: "2 AI changes to review in 2 notes" in header(app))
        await press_and_confirm(pilot, "A")
        await until(pilot, lambda: notes_listed(app) == [])
        assert summaries(vault).notes == []
        await until(pilot, lambda: "nothing to review" in header(app))
        assert "Nothing to review" in diff_text(app)
        assert screen.query_one("#review-notes", DataTable).row_count == 0
        assert git(vault, "status", "--porcelain") == ""  # marks never touch the files


async def test_a_batch_over_three_notes_reviewed_one_at_a_time(connect: Any, vault: Path) -> None:
    ops = [
        {"tool": "append_section", "args": {"path": p, "heading": "Log", "content": f"- in {p}"}}
        for p in ("w.md", "a.md", "b.md")
    ]
    async with connect(vault) as s:
        batch = await s.call("batch", ops=ops)
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_review(pilot)
        assert sorted(notes_listed(app)) == ["a.md", "b.md", "w.md"]
        assert "1 AI change to review in 3 notes" in header(app)

        def listed(n: int) -> Callable[[], bool]:
            return lambda: len(notes_listed(app)) == n

        for left in (2, 1, 0):
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            current = screen.current()
            assert current is not None
            path = current.path
            await pilot.press("space")
            await until(pilot, listed(left))
            assert path not in notes_listed(app)
            note = git(vault, "notes", f"--ref={NOTES_REF}", "show", batch["commit"])
            assert f"Reviewed: {path}" in note
            # the commit is settled only with its last note
            assert ("Reviewed-all: yes" in note) == (left == 0)
        await until(pilot, lambda: "nothing to review" in header(app))


# -- undo a hunk, revert a note -----------------------------------------------------------------


async def test_undo_a_hunk_keeps_the_owners_lines(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        ai = await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        owner_edit(vault, "w.md", "- three\n", "- three\n- mine, beside it\n")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_review(pilot)
        await shown(pilot, "w.md")
        assert "▶ @@" in diff_text(app)  # the hunk `u` acts on is marked
        await press_and_confirm(pilot, "u")
        await until(pilot, lambda: "undid hunk 1 of w.md" in screen_text(app))
        await until(pilot, lambda: notes_listed(app) == [])
    text = (vault / "w.md").read_text()
    assert text == W.replace("- three\n", "- three\n- mine, beside it\n")
    msg = git(vault, "log", "-1", "--format=%B")
    assert "Vaultwatch-Action: undo" in msg and f"Vaultwatch-Undoes: {ai['commit']}" in msg


async def test_a_refused_undo_says_why_and_changes_nothing(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        await s.call("edit_text", path="w.md", old="- one", new="- one, by AI")
        owner_edit(vault, "w.md", "- ai four", "- ai four, fixed by me")
    head, before = git(vault, "rev-parse", "HEAD"), (vault / "w.md").read_text()
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_review(pilot)
        await shown(pilot, "w.md")
        await pilot.press("u")  # refused before any confirm: nothing to confirm
        await until(pilot, lambda: "undo refused" in screen_text(app))
        assert "changed lines the AI wrote" in screen_text(app)
        assert notes_listed(app) == ["w.md"]
    assert git(vault, "rev-parse", "HEAD") == head and (vault / "w.md").read_text() == before


async def test_an_undo_of_a_hunk_that_moved_since_it_was_shown_is_refused(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        app = app_on(vault)
        async with app.run_test(size=(120, 36)) as pilot:
            await open_review(pilot)
            await shown(pilot, "w.md")
            # a write lands between the drawing and the key: hunk 1 is not what the owner saw
            # (the screen is held from following the vault, as in the moment before it does)
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            screen._busy = True
            await s.call("edit_text", path="w.md", old="- one", new="- one, by AI")
            await until(pilot, lambda: "2 AI changes to review" in header(app))
            head = git(vault, "rev-parse", "HEAD")
            await press_and_confirm(pilot, "u")
            await until(pilot, lambda: "changed since its diff was shown" in screen_text(app))
            assert git(vault, "rev-parse", "HEAD") == head


async def test_revert_a_note_leaves_the_owners_commits(connect: Any, vault: Path) -> None:
    ops = [
        {"tool": "append_section", "args": {"path": p, "heading": "Log", "content": f"- in {p}"}}
        for p in ("w.md", "a.md")
    ]
    async with connect(vault) as s:
        await s.call("batch", ops=ops)
        owner_edit(vault, "w.md", "free text", "free text, mine")
        await s.call("append_section", path="w.md", heading="Log", content="- ai again")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await open_review(pilot)
        await shown(pilot, "w.md")
        await press_and_confirm(pilot, "R")
        await until(pilot, lambda: notes_listed(app) == ["a.md"])
        assert "reverted the AI's changes to w.md" in screen_text(app)
    assert (vault / "w.md").read_text() == W.replace("free text", "free text, mine")
    assert "- in a.md" in (vault / "a.md").read_text()


# -- periods ------------------------------------------------------------------------------------


async def test_the_period_switch(connect: Any, vault: Path) -> None:
    start = git(vault, "rev-parse", "HEAD").strip()
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        mark_reviewed(vault)
        await s.call("append_section", path="a.md", heading="Log", content="- ai in a")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        assert notes_listed(app) == ["a.md"]
        await pilot.press("p")  # today: reviewed or not
        await until(pilot, lambda: screen.since == "today" and screen.review is not None)
        assert sorted(notes_listed(app)) == ["a.md", "w.md"]  # (one second apart or less)
        text = screen_text(app)
        assert "Review · today · 2 notes changed by the AI, 1 not reviewed" in text
        table = screen.query_one("#review-notes", DataTable)
        marks = {table.get_row_at(i)[1].plain: table.get_row_at(i)[0].plain for i in range(2)}
        assert marks == {"a.md": "•", "w.md": "✓"}
        table.move_cursor(row=notes_listed(app).index("w.md"))
        await shown(pilot, "w.md")
        await pilot.press("n")  # the next unreviewed note: past the reviewed one
        await shown(pilot, "a.md")
        await pilot.press("p")
        await until(pilot, lambda: screen.since == "7d" and screen.review is not None)
        assert "the last 7 days" in screen_text(app)
        await pilot.press("p")
        await until(pilot, lambda: screen.since == "last" and screen.review is not None)
        assert notes_listed(app) == ["a.md"]
        # a commit typed in: the same view from there
        await pilot.press("d")
        box = screen.query_one("#review-since", Input)
        await until(pilot, lambda: box.has_focus)
        box.value = start[:10]
        await pilot.press("enter")
        await until(pilot, lambda: screen.since == start[:10] and screen.review is not None)
        assert sorted(notes_listed(app)) == ["a.md", "w.md"]
        assert f"since {start[:10]}" in screen_text(app)
        # a period that is none is refused in words
        await pilot.press("d")
        await until(pilot, lambda: box.has_focus)
        box.value = "last tuesday"
        await pilot.press("enter")
        await until(pilot, lambda: "'last tuesday' is not a period" in screen_text(app))


# -- the note view ------------------------------------------------------------------------------


EDITOR = """#!/bin/sh
printf '%s\\n' "$1" >> "{log}"
printf 'edited in the editor\\n' >> "$1"
"""


async def test_the_note_view_and_edit_in_editor(
    connect: Any, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai four\n- ai five")
        owner_edit(vault, "w.md", "- one\n", "- one\n- mine\n")
    log = tmp_path / "editor.log"
    script = tmp_path / "editor.sh"
    script.write_text(EDITOR.format(log=log))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(script))
    app = app_on(vault)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_review(pilot)
        await pilot.press("o")
        await until(
            pilot, lambda: isinstance(app.screen, NoteScreen) and app.screen.view is not None
        )
        text = screen_text(app)
        lines = text.split("\n")
        assert any(" AI - ai four" in ln for ln in lines)
        assert any(" AI - ai five" in ln for ln in lines)
        mine = next(ln for ln in lines if "- mine" in ln)
        assert " AI " not in mine
        total = len(W.splitlines()) + 3
        assert lines[0].strip() == "w.md"  # the path on its own line, then the figures
        assert f"the AI wrote 2 of {total} lines ({2 / total:.0%})" in lines[1]
        assert "3 commits, 1 by the AI" in lines[1]
        assert "append_section" in text and "owner edits w.md" in text and "import" in text
        await pilot.press("e")
        await until(pilot, lambda: log.exists())
        assert log.read_text() == f"{vault / 'w.md'}\n"
        # the view shows the note as the editor left it, the new line the owner's (unsaved)
        await until(pilot, lambda: "✎  edited in the editor" in screen_text(app))


ZH200 = "".join(chr(0x4E00 + (i * 37) % 2000) for i in range(200))  # 200 ideographs, no space


def note_rows(app: Dashboard) -> list[str]:
    """The note pane's rows as drawn, inside its border."""
    rows = []
    for line in screen_text(app).split("\n"):
        if line.startswith("│") and "│" in line[1:]:
            rows.append(line[1 : line.index("│", 1)])
    return rows


async def test_a_long_chinese_line_wraps_between_characters_in_the_note_view(
    make_vault: Any, settings_dir: Path
) -> None:
    root = make_vault({"n.md": f"# 标题\n\n{ZH200}\n\n用 Python 写{ZH200[:60]}\n"})
    app = app_on(root)
    async with app.run_test(size=(80, 30)) as pilot:
        app.push_screen(NoteScreen(root, "n.md"))
        await until(pilot, lambda: bool(isinstance(app.screen, NoteScreen) and app.screen.view))
        await settled(pilot, ignore=("poll",))
        await until(  # the note drawn: its third line's number is on screen
            pilot,
            lambda: any(re.match(r"\s*3\b", r) for r in note_rows(app)),
            "the note's line 3 drawn",
            describe=lambda: note_rows(app),
        )
        view = app.screen.query_one("#note-text", LinesView)
        width = view.scrollable_content_region.width
        rows = note_rows(app)
        at = next(i for i, r in enumerate(rows) if re.match(r"\s*3\b", r))
        shown = "".join(ch for r in rows[at:] for ch in r if ch in ZH200 or ch == "\n")
        assert shown.startswith(ZH200), rows  # every character, in order, none cut at the edge
        # the text starts on the line number's row and hangs under itself, not under the number
        assert ZH200[0] in rows[at]
        indent = rows[at].index(ZH200[0])
        assert all(r.index(r.strip()[0]) == indent for r in rows[at + 1 : at + 5]), rows
        # every row of the view within the text's width (measured in cells)
        for i in range(len(view.lines)):
            assert all(s.cell_length <= width for s in view._wrap(i))
        # a Latin word then Chinese: the Chinese fills the row after the word, not the next one
        mixed = next(i for i, r in enumerate(rows) if "用 Python 写" in r)
        assert cell_len(rows[mixed].rstrip()) >= width, rows  # within a cell of the edge


def test_wrap_breaks_chinese_between_characters_and_words_at_spaces() -> None:
    from app.ui.widgets.lines import wrap

    def plain(c: Content, width: int) -> list[str]:
        rows = wrap(c, width)
        assert all(r.cell_length <= width for r in rows), [(r.plain, r.cell_length) for r in rows]
        return [r.plain for r in rows]

    assert plain(Content(ZH200[:15]), 9) == [ZH200[0:4], ZH200[4:8], ZH200[8:12], ZH200[12:15]]
    # an odd width: a wide character is never split across the edge, none is lost
    assert "".join(plain(Content(ZH200), 79)) == ZH200
    assert plain(Content("one two three four"), 9) == ["one two", "three", "four"]
    assert plain(Content("see 中文的句子"), 8) == ["see 中文", "的句子"]
    url = "https://example.com/" + "x" * 30
    assert plain(Content(f"a {url} b"), 20) == ["a", url[:20], url[20:40], url[40:] + " b"]
    # no row starts with the punctuation that closes a sentence
    assert plain(Content("中文中文。好"), 8) == ["中文中", "文。好"]
    styled = Content.styled(ZH200[:10], "bold")
    assert all(r.spans for r in wrap(styled, 6))  # styles carried over to every row


# -- launch, two dashboards ---------------------------------------------------------------------


async def test_the_launch_prompt_and_one_key_to_review(connect: Any, vault: Path) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="a.md", heading="Log", content="- a")
        await s.call("append_section", path="b.md", heading="Log", content="- b")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        said = lambda: "\n".join(str(n.message) for n in app._notifications)  # noqa: E731
        await until(pilot, lambda: "Press v to review" in said())
        assert "2 AI changes to 2 notes since you last looked" in said()
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))


async def test_no_prompt_when_there_is_nothing_to_review(vault: Path) -> None:
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.review_watch.count is not None)
        await settled(
            pilot, ignore=("poll",)
        )  # the count's message handled: a prompt would be up now
        assert not any("review" in str(n.message) for n in app._notifications)


async def test_two_dashboards_share_marks_and_they_survive_a_restart(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        for p in ("w.md", "a.md", "b.md"):
            await s.call("append_section", path=p, heading="Log", content=f"- in {p}")
    one, two = app_on(vault), app_on(vault)
    async with one.run_test(size=(120, 36)) as p1, two.run_test(size=(120, 36)) as p2:
        await until(p2, lambda: "3 AI changes to review in 3 notes" in header(two))
        await open_review(p1)
        await p1.press("space")  # marked in the first dashboard
        await until(p1, lambda: len(notes_listed(one)) == 2)
        # the second one follows: its header, and its review screen once open
        await until(p2, lambda: "2 AI changes to review in 2 notes" in header(two))
        await open_review(p2)
        assert notes_listed(two) == notes_listed(one)
        await p2.press("space")  # and back the other way, live on an open screen
        await until(p1, lambda: len(notes_listed(one)) == 1)
        assert "1 AI change to review in 1 note" in header(one)
        left = notes_listed(one)
    # a restart: a new dashboard reads the same marks from the vault's git
    three = app_on(vault)
    async with three.run_test(size=(120, 36)) as p3:
        await until(p3, lambda: "1 AI change to review in 1 note" in header(three))
        await open_review(p3)
        assert notes_listed(three) == left


# -- a Chinese vault with long paths, at 80, 120 and 200 columns --------------------------------

IDEA = "想法/2026-09-01-孤立的想法.md"
PLAN = "项目/二〇二六年/第四季度/很长很长的文件夹名字/会议记录与后续行动计划.md"
CHAPTERS = [f"资料/读书笔记/第{i:02d}章-读书笔记.md" for i in range(1, 7)]
ZH_VAULT = {
    "README.md": "# 我的知识库\n\n## 新增\n",
    IDEA: "---\nstatus: open\n---\n# 一个没人链接的想法\n\n这个笔记没有链接。\n",
    PLAN: "# 会议记录与后续行动计划\n\n## 行动\n- 第一项\n",
    **{p: f"# 第{i + 1}章\n\n## 摘要\n" for i, p in enumerate(CHAPTERS)},
}


async def zh_vault(make_vault: Any) -> Path:
    """The audit's vault in small: long Chinese paths, several tools and three clients."""
    root: Path = make_vault(ZH_VAULT)

    def client(name: str, version: str) -> Any:
        return as_client(root, Implementation(name=name, version=version))

    async with client("claude-code", "9.9") as s:
        for p in [*CHAPTERS, PLAN]:
            await s.call(
                "append_section",
                path=p,
                heading="行动" if p == PLAN else "摘要",
                content="- 一行",
            )
            await s.call("update_frontmatter", path=p, set={"status": "read"})
    async with client("audit-bot", "1") as s:
        for p in CHAPTERS:
            await s.call("edit_text", path=p, old="- 一行", new="- 改过的一行")
    async with client("一个名字很长很长的中文助手客户端-assistant", "2") as s:
        await s.call("append_section", path=PLAN, heading="行动", content="- 第二项")
    async with client("claude-code", "9.9") as s:
        await s.call("update_frontmatter", path=IDEA, set={"status": "closed"})
        await s.call("append_section", path="README.md", heading="新增", content="- 统计测试")
    return root


def diff_box(app: Dashboard) -> list[str]:
    """The diff pane's rows as drawn, inside its border (the second box on the screen)."""
    rows = screen_text(app).split("\n")
    top = [i for i, r in enumerate(rows) if r.startswith("╭")][1]
    end = next(i for i in range(top + 1, len(rows)) if rows[i].startswith("╰"))
    return [r[1:-1] for r in rows[top + 1 : end]]


def cells_of(table: DataTable[Any], row: int) -> dict[str, str]:
    heads = [str(c.label) for c in table.columns.values()]
    return dict(zip(heads, (c.plain for c in table.get_row_at(row)), strict=True))


async def select(pilot: Any, path: str) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    table = screen.query_one("#review-notes", DataTable)
    table.move_cursor(row=notes_listed(pilot.app).index(path))
    await shown(pilot, path)
    await settled(pilot, ignore=("poll",))  # its diff drawn, the next note read ahead


async def test_review_at_80x24_keeps_the_diff_in_sight(make_vault: Any, settings_dir: Path) -> None:
    """The audit at 80x24: 4 notes listed over a sideways scrollbar, the diff's header took
    about 8 of its lines (0-1 diff lines left), titles cut to `我…识库`, the chapter number cut
    out of `资料/…书笔记.md`."""
    root = await zh_vault(make_vault)
    app = app_on(root)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_review(pilot)
        table = screen.query_one("#review-notes", DataTable)
        await select(pilot, IDEA)
        box = diff_box(app)
        hunk = next(i for i, r in enumerate(box) if "▶ @@" in r)
        assert hunk <= 3, box  # path and title, the figures, since when: one line each
        assert any("- status: open" in r for r in box) and any("+ status: closed" in r for r in box)
        assert len(box) - hunk >= 8, box  # the diff has most of the pane
        assert table.max_scroll_x == 0  # every column in the width: no sideways scrollbar
        assert len(table.columns) == 5 and "title" not in cells_of(table, 0)  # no 3-cell titles
        assert table.size.height - 1 >= 4  # still a few notes listed above it
        for row, path in enumerate(notes_listed(app)):
            name = path.rpartition("/")[2]
            if cell_len(name) <= 24:  # the note's column at 80: the file name whole
                assert cells_of(table, row)["note"].startswith(name), cells_of(table, row)
        chapter = cells_of(table, notes_listed(app).index(CHAPTERS[0]))
        assert chapter["note"].startswith("第01章-读书笔记.md")
        assert chapter["tools · clients"] == "append +2 · audit-bot +1"  # whole names


async def test_the_tools_and_clients_read_at_120_columns(
    make_vault: Any, settings_dir: Path
) -> None:
    """At 120 columns every row showed `append_…de-code`, `update_…de-code`; after an
    `audit-bot` write still `append_…desktop`."""
    root = await zh_vault(make_vault)
    app = app_on(root)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        table = screen.query_one("#review-notes", DataTable)
        by_path = {p: cells_of(table, i) for i, p in enumerate(notes_listed(app))}
        assert by_path["README.md"]["tools · clients"] == "append · claude-code"
        assert by_path[IDEA]["tools · clients"] == "update · claude-code"
        # short names (as Stats gives them), whole clients, how many more where they do not fit
        assert by_path[CHAPTERS[0]]["tools · clients"] == "append, edit, update · audit-bot +1"
        assert by_path[PLAN]["tools · clients"] == "append, update · claude-code +1"
        assert all("…" not in row["tools · clients"] for row in by_path.values())
        # the column as wide as its widest row: no blank cells while the title is cut
        widths = [c.width for c in table.columns.values()]
        tools = max(cell_len(r["tools · clients"]) for r in by_path.values())
        assert widths[-1] == max(tools, cell_len("tools · clients"))
        assert by_path[IDEA]["title"] == "一个没人链接的想法"  # titles whole at 120
        assert table.max_scroll_x == 0
    wide = app_on(root)
    async with wide.run_test(size=(200, 50)) as pilot:
        screen = await open_review(pilot)
        table = screen.query_one("#review-notes", DataTable)
        row = cells_of(table, notes_listed(wide).index(PLAN))
        assert (
            row["note"]
            == "会议记录与后续行动计划.md  项目/二〇二六年/第四季度/很长很长的文件夹名字/"
        )
        assert row["tools · clients"].startswith("append, update · claude-code")
        assert table.max_scroll_x == 0


async def test_the_status_line_is_cleared_on_moving_to_another_note(
    connect: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An undo refused on one note said so under every note after it."""
    async with connect(vault) as s:
        at(monkeypatch, "2026-12-01T09:00:00")
        await s.call("append_section", path="a.md", heading="Log", content="- a")
        at(monkeypatch, "2026-12-01T10:00:00")
        await s.call("append_section", path="w.md", heading="Log", content="- ai four")
        await s.call("edit_text", path="w.md", old="- one", new="- one, by AI")
        owner_edit(vault, "w.md", "- ai four", "- ai four, fixed by me")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        assert notes_listed(app) == ["w.md", "a.md"]
        await shown(pilot, "w.md")
        status = screen.query_one("#review-status", Static)
        await pilot.press("u")  # refused before any confirm
        await until(pilot, lambda: "undo refused: w.md" in str(status.content))
        await pilot.press("j")
        await shown(pilot, "a.md")
        await until(pilot, lambda: str(status.content) == "")
        # a listing read again (an AI write, the owner's mark) is not the owner moving: what
        # the action said stays
        await pilot.press("space")
        await until(pilot, lambda: notes_listed(app) == ["w.md"])
        await shown(pilot, "w.md")
        await settled(
            pilot, ignore=("poll",)
        )  # the listing's reads handled: a clearing would have happened
        assert "a.md: 1 AI commit marked reviewed" in str(status.content)


async def test_review_shows_a_moved_note_under_its_new_path(
    connect: Any, make_vault: Any, settings_dir: Path
) -> None:
    """After the owner moved a note (`m`) the list showed its old path and the diff every line
    removed; `u` then refused in a file that no longer existed."""
    root = make_vault({IDEA: ZH_VAULT[IDEA]})
    async with connect(root) as s:
        await s.call("update_frontmatter", path=IDEA, set={"status": "closed"})
    new = "归档/二〇二六年/孤立的想法.md"
    owner_move(root, IDEA, new)
    app = app_on(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_review(pilot)
        assert notes_listed(app) == [new]
        await shown(pilot, new)
        box = "\n".join(diff_box(app))
        assert f"{new} — 一个没人链接的想法" in box and "+1 −1 net" in box
        assert f"at {IDEA} when the AI changed it" in box
        assert "- status: open" in box and "+ status: closed" in box
        await press_and_confirm(pilot, "u")
        await until(pilot, lambda: notes_listed(app) == [])
        assert "undid hunk 1 of " in screen_text(app)
    assert (root / new).read_text() == ZH_VAULT[IDEA] and not (root / IDEA).exists()


# -- audit 3: N8, N14's toast, N16, N17, N20 --------------------------------------------------------


def toasts(app: Dashboard) -> list[str]:
    """The toasts on screen (the app runs with `notifications=True`: Pilot hides them by
    default): each covers the bottom right corner, the status line's end."""
    from textual.widgets._toast import Toast

    return [str(t.render()) for t in app.screen.query(Toast)]


async def test_the_revert_confirm_shows_the_lines_it_takes_back(connect: Any, vault: Path) -> None:
    """N8: `R`'s confirm listed the commits and not the diff the revert applies, while `r` and
    `u` show theirs; now the net diff of the revert, the owner's line kept."""
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai one")
        owner_edit(vault, "w.md", "free text", "free text, mine")
        await s.call("append_section", path="w.md", heading="Log", content="- ai two")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        await shown(pilot, "w.md")
        await pilot.press("R")
        await screen_is(pilot, ConfirmModal)  # its body filled on mount
        body = app.screen.query_one("#dialog-body", LinesView).plain
        assert "The revert will change:" in body, body
        lines = body.splitlines()
        assert "- - ai one" in lines and "- - ai two" in lines, body
        assert not any(line.startswith("-") and "mine" in line for line in lines), body
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen)
    assert "- ai two" in (vault / "w.md").read_text()  # the confirm wrote nothing


async def test_a_revert_that_cannot_apply_is_refused_before_the_confirm(
    connect: Any, vault: Path
) -> None:
    """N8 (planned first): an owner's commit on the AI's line makes the revert impossible; it
    was refused after y, now in the status line with no dialog."""
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai one")
    owner_edit(vault, "w.md", "- ai one", "- ai one, corrected by me")
    app = app_on(vault)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_review(pilot)
        await shown(pilot, "w.md")
        status = screen.query_one("#review-status", Static)
        await pilot.press("R")
        await until(pilot, lambda: "revert refused" in str(status.content))
        assert app.screen is screen
        assert not toasts(app)  # said once, where it stays: a toast hid the status line
    assert "corrected by me" in (vault / "w.md").read_text()


async def test_after_the_last_mark_nothing_says_hunks_or_hides_the_status(
    connect: Any, vault: Path
) -> None:
    """N16: the diff's border kept `2 hunks` over "Nothing to review"; and (N14's tail) the
    status line that says what was done was covered by a toast of the same words at 80x24."""
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai one")
        await s.call("edit_text", path="w.md", old="free text", new="free text, by AI")
    app = app_on(vault)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_review(pilot)
        await shown(pilot, "w.md")
        pane = screen.query_one(ReviewDiff)
        assert "hunk" in str(pane.border_title)
        await pilot.press("space")
        await until(pilot, lambda: "Nothing to review" in diff_text(app))
        await settled(pilot, ignore=("poll",))
        assert not pane.border_title, pane.border_title
        assert "hunk" not in screen_text(app)
        assert "w.md: 2 AI commits marked reviewed" in screen_text(app)
        assert not toasts(app), toasts(app)


def on_screen(app: Dashboard, words: str) -> Callable[[], bool]:
    return lambda: words in screen_text(app)


async def test_the_date_box_answers_in_its_own_words(connect: Any, vault: Path) -> None:
    """N17: a period typed in the review's box was answered `--since 'yesterday': not last,
    ...`: an option of the shell the screen never showed, and `last`, which the box does not
    take (p gives it)."""
    async with connect(vault) as s:
        await s.call("append_section", path="a.md", heading="Log", content="- ai in a")
    app = app_on(vault)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_review(pilot)
        box = screen.query_one("#review-since", Input)
        for typed, said in (
            ("yesterday", "'yesterday' is not a period: give today, a number of days (7d)"),
            ("2999-01-01", "'2999-01-01' is in the future"),
        ):
            await pilot.press("d")
            await until(pilot, lambda: box.has_focus)
            box.value = typed
            await pilot.press("enter")
            await until(pilot, on_screen(app, said), describe=lambda: screen_text(app))
            text = screen_text(app)
            assert "--since" not in text and "not last" not in text, text
            status = str(screen.query_one("#review-status", Static).content)
            assert status.endswith("still showing since your last review"), status
            await until(pilot, lambda: screen.since == "last" and screen.review is not None)


async def test_the_obsidian_link_is_not_covered_at_80x24(
    connect: Any, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N20: with no desktop to open it, the note view printed the obsidian:// link at the bottom
    and a toast over it; now the reason and the link in the status line, nothing on top, and
    the link copied (`o` in the review opens the note, `o` there the link)."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    async with connect(vault) as s:
        await s.call("append_section", path=LONG, heading="日志", content="- 一行")
    app = app_on(vault)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_review(pilot)
        await pilot.press("o")
        await until(
            pilot, lambda: isinstance(app.screen, NoteScreen) and app.screen.view is not None
        )
        await pilot.press("o")
        url = obsidian_url(vault, LONG)
        status = app.screen.query_one("#note-status", Static)
        await until(pilot, lambda: url in str(status.content))
        await settled(pilot, ignore=("poll",))  # a toast sent with the link would be up now
        assert not toasts(app), toasts(app)
        assert "no desktop session" in str(status.content)
        assert "open in Obsidian (copied)" in str(status.content)
        rows = screen_text(app).split("\n")
        region = status.content_region
        shown_link = "".join(rows[y].strip() for y in range(region.y, region.bottom))
        assert url in shown_link, (url, shown_link)
        assert app.clipboard == url
    assert url.startswith(f"obsidian://open?vault={vault.name}&file=")
