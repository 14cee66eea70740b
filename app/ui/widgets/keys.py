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
    which a row cursor does not have: they did nothing in the review list). Every table sized
    by its content (`height: auto`: Stats, Reads, the blockers) gets a new box when its
    content's size changes."""

    BINDINGS = LIST_KEYS

    def watch_virtual_size(self) -> None:
        """A new content size is a new box. Textual caches a widget's box model under its
        layout count, which `refresh(layout=True)` bumps only when no layout is pending yet;
        DataTable measures its rows (its virtual size, what `auto` reads) later, when idle.
        With a layout already pending on the table, a reflow run in between (another
        widget's layout: it clears and bumps the ancestors) cached the box of the empty
        table under that count, and the rows' size, set after it, left the count as it was:
        the stats per-client table stayed 0x0 under its heading, filled, for good (a redraw
        measures the same size and changes nothing). `test_snapshots_stats.py::
        test_the_client_table_filled_while_a_reflow_waits_is_laid_out` forces that order."""
        self._layout_updates += 1  # the cache key (Widget._get_box_model); private, pinned


class Pane(VerticalScroll):
    """A scrolling body (Stats, the Reads cost tab) with the pane keys."""

    BINDINGS = PANE_KEYS
