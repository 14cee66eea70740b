"""Note paths one to a row, each cut to the row's width by the one rule every list uses
(`Distinct`: in the middle, and where two would print alike, where they differ). The Tags
screen's notes were a Static of whole paths that folded at its edge: at 80 columns a Chinese
note's path took three rows, and rows of different notes read the same (`消息队列与事件驱动/`)."""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget

from app.ui.widgets.cells import Distinct


class PathList(Widget):
    DEFAULT_CSS = "PathList { height: auto; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paths: list[str] = []
        self._cuts = Distinct(())

    def show(self, paths: list[str]) -> None:
        self.paths = list(paths)
        self._cuts = Distinct(self.paths)
        self.refresh(layout=True)

    def rows(self, width: int) -> list[str]:
        """The paths as this list prints them in `width` cells: one row each."""
        return [self._cuts(p, max(2, width)) for p in self.paths]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.paths)

    def render(self) -> Content:
        return Content("\n".join(self.rows(self.content_region.width)))
