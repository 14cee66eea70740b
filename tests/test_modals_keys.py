"""The small dialogs say their keys as their buttons do: the confirm dialog's footer read
`y Yes n No` under buttons `Revert (y)` / `Cancel (n)`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.widgets import Button

from app.ui.dashboard import Dashboard
from app.ui.dialogs.modals import ConfirmModal, HelpModal

from .conftest import screen_is, until
from .desk import footer, select_commit, timeline

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"w.md": "# W\n\n## Log\n- one\n"})


def footer_words(app: Dashboard) -> list[tuple[str, str]]:
    return [(k.key_display or k.key, k.description) for k in footer(app)]


async def test_the_confirm_footer_names_its_keys_as_its_buttons_do(
    connect: Any, vault: Path
) -> None:
    async with connect(vault) as s:
        done = await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await select_commit(pilot, app, done["commit"])
        await pilot.press("r")
        await screen_is(pilot, ConfirmModal)
        await until(  # the dialog's own footer, mounted after it (`Dashboard._keys_of`)
            pilot,
            lambda: footer_words(app) == [("y", "Revert"), ("n", "Cancel")],
            "the dialog's footer",
            describe=lambda: footer_words(app),
        )
        buttons = [str(b.label) for b in app.screen.query(Button)]
        assert buttons == ["Revert (y)", "Cancel (n)"]
        assert footer_words(app) == [("y", "Revert"), ("n", "Cancel")]
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
    # another dialog's word is its own; the class's bindings are not changed by it
    other = ConfirmModal("Mark reviewed?", "body", yes="Mark reviewed")
    assert [b.description for b in other._bindings.key_to_bindings["y"]] == ["Mark reviewed"]
    assert [b.description for b in ConfirmModal("t", "b")._bindings.key_to_bindings["y"]] == [
        "Revert"
    ]


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_help_lists_the_screens_keys_not_a_tables_inherited_ones_and_aligns_them(
    connect: Any, vault: Path, size: tuple[int, int]
) -> None:
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content="- ai line")
    app = Dashboard(vault, poll_seconds=0.1)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: bool(timeline(app).rows))
        for keys in (["question_mark"], ["escape", "v", "question_mark"]):  # timeline, review
            await pilot.press(*keys)
            help = await screen_is(pilot, HelpModal)  # composed: its keys are in it
            assert isinstance(help, HelpModal)
            listed = {what: key for key, what in help.keys}
            for generic in ("Cursor left", "Cursor right", "Page Left", "Page Right", "Select"):
                assert generic not in listed, listed
            assert listed["Up"] == "↑ / k" and listed["Down"] == "↓ / j", listed
            assert listed["Copy selected text"] == "^c / super+c"
            assert "Quit" in " ".join(listed)  # the app's keys stay
            # aligned: every meaning starts in the same column, the widest key's too, and a
            # long one wraps in that column
            lines = [str(w.render()) for w in help.query(".help-key")]
            starts = {w.region.x for w in help.query(".help-what")}
            assert {cell_len(line) for line in lines} == {
                max(cell_len(k) for k, _ in help.keys) + 2
            }
            assert len(starts) == 1, lines
            if size[0] == 80:  # the filter's long meaning wraps, in its column
                assert max(w.region.height for w in help.query(".help-what")) >= 2
        assert listed["mark this note reviewed"] == "space"  # the review screen's own
