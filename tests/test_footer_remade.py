"""The footer is made again only when what it shows changes (issue 33, the 0.5 s opening on the
bench's 10,000-commit vault): every change of focus or bindings asked it to recompose, and at
start a dozen recomposes made some 150 keys, each styled anew, for the same twenty keys. Its
keys still follow a change (a wider terminal shows more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets._footer import FooterKey

from app.ui.dashboard import Dashboard
from app.ui.widgets.footer import FitFooter

from .conftest import until
from .settling import settled

pytestmark = pytest.mark.anyio


async def test_the_footer_keeps_its_keys_when_nothing_changed(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    made: list[str] = []  # every footer key made (counted, not changed)
    init = FooterKey.__init__

    def counted(self: FooterKey, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self.key)

    monkeypatch.setattr(FooterKey, "__init__", counted)
    root = make_vault({"a.md": "# A\n", "b.md": "# B\n"})
    app = Dashboard(root, poll_seconds=60)
    async with app.run_test(size=(120, 36)) as pilot:
        footer = app.screen.query_one(FitFooter)
        await until(pilot, lambda: bool(footer.query(FooterKey)), "the footer's keys")
        await settled(pilot, "the first screen drawn")
        before = list(footer.query(FooterKey))
        # made once, or twice where the first screen's bindings changed as it came up
        assert len(made) <= 2 * len(before), (len(made), len(before))
        for _ in range(3):  # as focus moves and screens refresh their bindings at start
            app.screen.refresh_bindings()
            await settled(pilot, "the bindings refreshed")
        after = list(footer.query(FooterKey))
        assert [k.key for k in after] == [k.key for k in before]
        assert all(a is b for a, b in zip(after, before, strict=True)), "the footer was remade"

        await pilot.resize_terminal(200, 50)  # room for more keys: made again, with them
        await until(
            pilot,
            lambda: len(footer.query(FooterKey)) > len(before),
            "more keys at 200 columns",
            describe=lambda: [k.key for k in footer.query(FooterKey)],
        )
