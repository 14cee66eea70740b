"""What the owner sees of a dashboard under Pilot: the screen's text and its footer keys. A
helper module, not a test module: test modules import from here, never from each other."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from app.ui.dialogs.file_dialogs import FileFinder
from app.ui.widgets.timeline import Timeline

from .conftest import diff_shown, screen_is, until


def screen_text(app: Any) -> str:
    """The terminal as the owner sees it, one line per row (toasts and dialogs included)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text for strip in strips)


def footer(app: App[Any]) -> list[FooterKey]:
    return list(app.screen.query_one(Footer).query(FooterKey))


def footer_fits(app: App[Any], width: int) -> bool:
    """Every key of the footer whole on screen and clear of the palette key on the right."""
    keys = footer(app)
    palette = [k for k in keys if k.action.endswith("command_palette")]
    right = palette[0].region.x if palette else width
    return all(k.region.right <= right for k in keys if k not in palette)


def timeline(app: Any) -> Timeline:
    """The main screen's timeline of commits."""
    return app.main.query_one("#timeline", Timeline)


async def select_commit(pilot: Any, app: Any, sha: str) -> None:
    """The timeline's cursor on commit `sha`, once it is listed, and its diff shown."""
    t = timeline(app)
    await until(pilot, lambda: t.index_of(f"c:{sha}") is not None)
    i = t.index_of(f"c:{sha}")
    assert i is not None
    t.move_to(i)
    await diff_shown(pilot, t.rows[i])


async def find(pilot: Any, key: str, query: str) -> None:
    """Press `key` (m, x), type `query` into the file finder and pick the best match."""
    await pilot.press(key)
    await screen_is(pilot, FileFinder)
    await pilot.press("ctrl+u", *query, "enter")
