"""The connect dialog never soft-wraps a snippet: the `claude mcp add` line wrapped at 80 and
120 columns, and under tmux (where the clipboard may not receive it) the owner copies it by
hand, newlines and all, and it ran as two commands. It is broken with line continuations
instead, so the visible text pastes as the one command; the copy key still sends it whole."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

from app.ui.dashboard import Dashboard
from app.ui.dialogs.modals import ConnectModal, Snippet, SnippetScroll, shell_lines, shell_words
from server.protocol.connect import claude_mcp_add_http

from .conftest import screen_is, until
from .desk import screen_text

pytestmark = pytest.mark.anyio

CLAUDE = "Claude Code (HTTP, this server)"


def argv(script: str) -> list[str]:
    """The words bash hands `claude` when `script` is pasted (the command itself is a stub)."""
    stub = 'claude() { printf "%s\\n" "$@"; }\n'
    out = subprocess.run(["bash", "-c", stub + script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.parametrize("folder", ["v", "很长很长的文件夹名字/我的 知识库"])
def test_the_folded_command_runs_as_the_one_line_does(tmp_path: Path, folder: str) -> None:
    token = tmp_path / folder / ".git" / "vaultwatch" / "token"
    token.parent.mkdir(parents=True)
    token.write_text("s3cret")
    command = claude_mcp_add_http("http://127.0.0.1:36331/mcp", token)
    whole = argv(command)
    assert whole[-1] == "Authorization: Bearer s3cret"
    for width in range(20, 200, 7):
        lines = shell_lines(command, width)
        assert all(line.endswith(" \\") for line in lines[:-1])
        for line in lines:  # too wide only where one word is (a quoted path)
            one_word = len(shell_words(line.removesuffix(" \\"))) == 1
            assert cell_len(line) <= width or one_word, line
        assert argv("\n".join(lines)) == whole, lines
    assert shell_lines(command, 400) == [command]


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_connect_dialog_shows_the_command_unwrapped_and_copies_it_whole(
    make_vault: Any, size: tuple[int, int]
) -> None:
    vault = make_vault({"a.md": "# A\n"})
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        await pilot.press("c")
        modal = await screen_is(pilot, ConnectModal)
        view = modal.query(Snippet).first()
        await until(  # laid out: the command folded for the room it was given
            pilot,
            lambda: view.room > 0 and view.size.height == len(view.lines()),
            "the snippet laid out",
            describe=lambda: (view.room, view.size, view.lines()),
        )
        await pilot.pause()  # and drawn
        assert isinstance(modal, ConnectModal)
        command = dict(modal.snippets)[CLAUDE]
        assert "\n" not in command and command.startswith("claude mcp add")
        scroll = modal.query(SnippetScroll).first()
        room = scroll.scrollable_content_region.width
        shown = view.lines()
        # drawn as folded for the width it has: one screen line per line, none wrapped
        assert shown == shell_lines(command, room) and view.size.height == len(shown)
        assert len(shown) > 1 and shown[0].endswith(" \\")
        text = screen_text(app)
        assert shown[0] in text and shown[1][:30] in text, text  # a long path: scrolled to
        # every snippet is drawn as many lines as it has: JSON's lines are not wrapped either
        for s in modal.query(Snippet):
            assert s.size.height == len(s.lines())
        # the copy key sends the one-line command, exactly
        await pilot.press("1")
        assert app.clipboard == command
