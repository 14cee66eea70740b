"""The keys every list and pane answers, as lazygit and tig taught their users: `j`/`k` a line,
`g`/Home the top, `G`/End the bottom, ctrl+d/ctrl+u a page. One home for them: each screen's
lists are a `Table`, its scrolling panes a `Pane` (or a `LinesView`, which binds the same)."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable

LIST_KEYS: list[BindingType] = [
    Binding("j", "cursor_down", "Down", show=False),
    Binding("k", "cursor_up", "Up", show=False),
    Binding("g,home", "scroll_top", "Top", show=False),
    Binding("G,end", "scroll_bottom", "Bottom", show=False),
    Binding("ctrl+d", "page_down", "Page down", show=False),
    Binding("ctrl+u", "page_up", "Page up", show=False),
]

PANE_KEYS: list[BindingType] = [
    Binding("j", "scroll_down", "Down", show=False),
    Binding("k", "scroll_up", "Up", show=False),
    Binding("g,home", "scroll_home", "Top", show=False),
    Binding("G,end", "scroll_end", "Bottom", show=False),
    Binding("ctrl+d", "page_down", "Page down", show=False),
    Binding("ctrl+u", "page_up", "Page up", show=False),
]


class Table(DataTable[Any]):
    """A DataTable of rows with the list keys (Home/End went to the first and last column,
    which a row cursor does not have: they did nothing in the review list)."""

    BINDINGS = LIST_KEYS


class Pane(VerticalScroll):
    """A scrolling body (Stats, the Reads cost tab) with the pane keys."""

    BINDINGS = PANE_KEYS
