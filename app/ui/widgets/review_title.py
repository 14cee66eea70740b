"""The review screen's title line: the period, how many AI commits in how many notes (or how
many notes changed and how many not reviewed, for a period), and why marks could not be read."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from app.services.review import Review
from app.ui.widgets.cells import plural


def period_words(since: str) -> str:
    return {
        "last": "since your last review",
        "today": "today",
        "7d": "the last 7 days",
    }.get(since, f"since {since}")


class ReviewTitle(Static):
    def show(self, r: Review | None, since: str, text: str = "") -> None:
        what = period_words(since)
        if r is None:
            body = f" Review · {what} · reading…"
        elif since == "last":
            body = (
                f" Review · {what} · {plural(r.unreviewed_commits, 'AI commit')} in "
                f"{plural(len(r.notes), 'note')}"
                if r.notes
                else f" Review · {what} · nothing to review"
            )
        else:
            open_ = sum(1 for n in r.notes if not n.reviewed)
            body = f" Review · {what} · {plural(len(r.notes), 'note')} changed by the AI, {open_:,} not reviewed"
        if r is not None and r.warning:  # marks unreadable: everything shows, and why
            text = f" · ! {r.warning}{text}"
        self.update(Content.styled(body, "bold") + Content(text))
