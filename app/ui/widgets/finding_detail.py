"""The health screen's lines under the table: the finding under the cursor in full (where it
is, the partner note, the reason) and the keys that act on it."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from app.services.wording import plural
from server.services.health_findings import Finding

KEYS = {"open": "o open", "move": "m move", "delete": "x delete"}


class FindingDetail(Static):
    def show(self, f: Finding | None, ignored: bool) -> None:
        if f is None:
            self.update(Content.styled("a group: j/k to its findings", "$text-muted"))
            return
        where = f"{f.path}:{f.line}" if f.line else f.path
        acts = [KEYS[a] for a in f.actions if a in KEYS]
        acts.append("i bring back" if ignored else "i ignore")
        self.update(
            Content.styled(where + (f"  ↔  {f.other}" if f.other else ""), "bold")
            + Content("\n" + f.reason + "\n")
            + Content.styled(" · ".join(acts), "$text-muted")
        )

    def nothing(self, hidden: int, comparing: bool) -> None:
        """No finding listed: said so, not "a group: j/k to its findings" over a table with
        neither; `hidden` ignored findings not shown, and the key that shows them."""
        if hidden:
            them = "it" if hidden == 1 else "them"
            text = f"nothing to fix: {plural(hidden, 'ignored finding')} hidden (a shows {them})"
        else:
            text = "no findings: nothing to fix in this vault"
        if comparing:  # the near-duplicates are still being compared: one may come yet
            text += " · still comparing near-duplicates…"
        self.update(Content.styled(text, "$text-muted"))
