"""A label wrapped by terminal cells with the line breaking of `app.services.cell_wrap` (through
`app.ui.widgets.lines.wrap`): between Chinese characters and at spaces, never inside a word.
Textual's own wrapping folds a line with no spaces at the width, wherever that falls: a dialog's
title `…技术文档写作.md:19` came out as `…写作.md:1` over `9`."""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget

from app.ui.widgets.lines import wrap


class Wrapped(Widget):
    DEFAULT_CSS = "Wrapped { height: auto; }"

    def __init__(
        self, content: Content | str = "", *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.content = content if isinstance(content, Content) else Content(content)

    def update(self, content: Content | str) -> None:
        self.content = content if isinstance(content, Content) else Content(content)
        self.refresh(layout=True)

    def rows(self, width: int) -> list[Content]:
        """The text as the rows it takes in `width` cells."""
        width = max(2, width)
        return [
            row
            for line in self.content.split("\n", allow_blank=True)
            for row in (wrap(line, width) if line.cell_length > width else [line])
        ]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.rows(width))

    def render(self) -> Content:
        return Content("\n").join(self.rows(self.content_region.width))
