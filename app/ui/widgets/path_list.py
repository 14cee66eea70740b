"""Note paths one to a row, each cut to the row's width by the one rule every list uses
(`note_label`, `Distinct.notes`: the file name first, its folder after; two never alike). The
Tags screen's notes were a Static of whole paths that folded at its edge: at 80 columns a
Chinese note's path took three rows, and rows of different notes read the same
(`消息队列与事件驱动/`); then whole paths cut in their middle (`sessions/202…nd-screen.md`),
where every other list shows the file name first."""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget

from app.ui.widgets.cells import Distinct, note_label


class PathList(Widget):
    DEFAULT_CSS = "PathList { height: auto; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paths: list[str] = []
        self._cuts = Distinct.notes(())

    def show(self, paths: list[str]) -> None:
        self.paths = list(paths)
        self._cuts = Distinct.notes(self.paths)
        self.refresh(layout=True)

    def labels(self, width: int) -> list[Content]:
        """The paths as this list prints them in `width` cells, one row each, as every list
        names notes (`note_label`): the file name first, its folder after, muted."""
        return [note_label(p, width, cuts=self._cuts) for p in self.paths]

    def rows(self, width: int) -> list[str]:
        """The rows' text in `width` cells."""
        return [label.plain for label in self.labels(width)]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.paths)

    def render(self) -> Content:
        return Content("\n").join(self.labels(self.content_region.width))
