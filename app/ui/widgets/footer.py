"""A footer that shows what fits: the keys a screen always shows, then, while there is room, the
keys it names in `more`, in that order (the timeline's footer at 120 and 200 columns showed
`⏎ / a h e r ? q` while `v t $ S H …` waited in `?` with half the line empty)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PALETTE_CELLS = 12  # `▏^p palette` docked on the right, and one cell between


class FitFooter(Footer):
    def __init__(self, more: Sequence[str] = (), *, compact: bool = True) -> None:
        super().__init__(compact=compact)
        self.more = tuple(more)  # actions, most wanted first
        self._width = 0
        self._shown: tuple[object, ...] | None = None  # the plan of the keys shown (recompose)

    def _cells(self, binding: Binding) -> int:
        """The cells a compact FooterKey takes: key, a space, description, and its margin."""
        key = cell_len(self.app.get_key_display(binding))
        return key + (1 + cell_len(binding.description) if binding.description else 0) + 1

    async def recompose(self) -> None:
        """Made again only when what it shows changed. Every change of focus or bindings asks
        for a recompose: at start a dozen in a row, each making twenty keys and styling them
        anew (a third of the first screen's time on the UI thread), for the same keys."""
        plan = self._plan() if self._bindings_ready and self.is_attached else None
        if plan is not None and plan == self._shown and self.children:
            return
        self._shown = plan
        await super().recompose()

    def _plan(self) -> tuple[object, ...]:
        """What compose shows, comparable: each key's binding, state and tooltip, the width."""
        keys, palette = self._keys()
        return (
            tuple((b.key, b.action, b.description, e, t) for _, (b, e, t, _) in keys),
            None if palette is None else (palette[1].key, palette[2]),
        )

    def _keys(
        self,
    ) -> tuple[
        list[tuple[str, tuple[Binding, bool, str, bool]]],
        tuple[object, Binding, bool, str] | None,
    ]:
        """The keys compose shows, in order, and the palette's (or None)."""
        # one key per action, as Footer shows them (end and G both go to the last row), the one
        # meant for the footer first (q, not ctrl+q, quits)
        first: dict[str, tuple[Binding, bool, str, bool]] = {}
        active = self.screen.active_bindings.values()
        for show in (True, False):
            for node, binding, enabled, tooltip in active:
                if binding.show == show and binding.action not in first:
                    first[binding.action] = (binding, enabled, tooltip, node is self.app)
        shown = [(a, v) for a, v in first.items() if v[0].show]
        room = (self.size.width or self.app.size.width) - sum(self._cells(v[0]) for _, v in shown)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            room -= PALETTE_CELLS
        extra = []
        for action in self.more:
            found = first.get(action)
            if found is None or found[0].show or not found[1]:
                continue  # not bound here, shown already, or not offered now
            if (cells := self._cells(found[0])) <= room:
                extra.append((action, found))
                room -= cells
        # the screen's keys, what fits of the rest, then the app's own (? Keys, q Quit)
        keys = [k for k in shown if not k[1][3]] + extra + [k for k in shown if k[1][3]]
        palette = None
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return keys, palette

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        keys, found_palette = self._keys()
        for action, (binding, enabled, tooltip, _) in keys:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                action,
                disabled=not enabled,
                tooltip=tooltip or binding.tooltip,
            ).data_bind(compact=Footer.compact)
        if found_palette is not None:
            _, binding, enabled, _ = found_palette
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
                disabled=not enabled,
                tooltip=binding.tooltip or binding.description,
            )

    def on_resize(self, event: Resize) -> None:
        # what fits depends on the width: chosen again when it changes
        if event.size.width != self._width:
            self._width = event.size.width
            if self._bindings_ready:
                self.call_after_refresh(self.recompose)
