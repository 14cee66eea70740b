"""The health screen's title line: how many notes and findings, how many ignored (and the key
that shows them), and that near-duplicates are still being compared, or why the check failed."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from server.services.health_findings import Report


class HealthTitle(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content.styled(" Library health · checking…", "bold"), id=id)

    def show(
        self, report: Report, shown: int, ignored: int, show_ignored: bool, partial: bool
    ) -> None:
        title = f" Library health · {report.notes:,} notes · {shown} findings"
        if ignored and not show_ignored:
            title += f" · {ignored} ignored (a shows them)"
        elif ignored:
            title += f" · {ignored} ignored shown"
        if partial:
            title += " · looking for near-duplicates…"
        self.update(Content.styled(title, "bold"))

    def failed(self, why: str) -> None:
        self.update(
            Content.styled(f" Library health · the check failed: {why}", "bold $text-error")
        )
