"""The health screen's table of findings: grouped by kind under a heading row that counts them
and names what can be done, the note's label and what is wrong side by side, columns measured in
cells. The cursor moves over findings only (a heading row is passed over), keeps the finding it
was on when the table is filled again, and takes the next one when that finding is gone."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from rich.cells import cell_len
from textual.content import Content
from textual.widgets import DataTable

from app.ui.widgets.cells import Cell, Distinct, cut_middle, note_label
from server.services.health_findings import TITLES, Finding, Report


def detail_text(f: Finding) -> str:
    """What the second column says about a finding: the link, the problem, the partner note."""
    if f.kind == "broken_link":
        return f"line {f.line}  {f.link}"
    if f.kind == "problem":
        return f.reason
    if f.kind in ("duplicate", "same_subject"):
        return f"{f.score:.2f}  {f.other}"
    if f.kind == "orphan":
        return f"no links in or out · {f.days} days unchanged"
    return f.reason


def heading(report: Report | None, kind: str, n: int) -> str:
    """A group's title and count; near-duplicates beyond the listed ones are counted too
    (the warning above says how many are not listed)."""
    more = report.duplicates_unlisted if report and kind == "duplicate" else 0
    return f"{TITLES[kind]} ({n:,} of {n + more:,})" if more else f"{TITLES[kind]} ({n})"


class FindingsTable(DataTable[Any]):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.by_id: Mapping[str, Finding] = {}  # the findings of the report shown, by row key
        self._placed: str | None = None  # the row `fill` put the cursor on (not the owner)

    def fill(
        self,
        report: Report,
        shown: list[Finding],
        ignored: set[str],
        width: int,
        gone: int | None = None,
    ) -> None:
        """The table from the report, grouped by kind, the cursor kept on the same finding;
        `gone` is the row of a finding just moved or deleted: its neighbour takes the cursor."""
        self.by_id = {f.id: f for f in report.findings}
        keep = self.current_key()
        # a cursor the owner has not moved goes to the first finding again: near-duplicates,
        # which come after the rest, are listed above where it was put
        if keep == self._placed:
            keep = None
        # measured in cells: the path column takes what its widest cell needs, up to half
        inner = max(24, width - 6)  # cell padding of two columns and the scrollbar
        path_w = min(max((cell_len(f.path) for f in shown), default=10) + 2, inner // 2)
        headings = [heading(report, k, n) for k in TITLES if (n := sum(f.kind == k for f in shown))]
        path_w = max(path_w, min(max(map(cell_len, headings), default=24), inner // 2))
        detail_w = max(8, inner - path_w)
        self.clear(columns=True)
        self.add_column("note", width=path_w, key="note")
        self.add_column("finding", width=detail_w, key="finding")
        if not shown:
            self.add_row(Content.styled("nothing to look at", "$text-muted"), "", key="none")
        names = Distinct.notes(f.path for f in shown)  # two notes never alike
        for kind in TITLES:
            group = [f for f in shown if f.kind == kind]
            if not group:
                continue
            self.add_row(
                Content.styled(
                    cut_middle(heading(report, kind, len(group)), path_w), "bold $text-accent"
                ),
                Content.styled(cut_middle(" · ".join(group[0].actions), detail_w), "$text-muted"),
                key=f"group:{kind}",
            )
            for f in group:
                # prose is cut at its end (a path in the middle: its file name matters)
                detail = Content(detail_text(f)).truncate(detail_w, ellipsis=True)
                if f.id in ignored:
                    detail = Content.styled("ignored · " + detail_text(f), "$text-muted").truncate(
                        detail_w, ellipsis=True
                    )
                label = note_label(f.path, path_w, cuts=names)
                self.add_row(Cell.of(label), Cell.of(detail), key=f.id)
        keys = self.keys()
        if keep in keys:
            self.move_cursor(row=keys.index(keep))
        elif gone is not None and keep is not None and any(k in self.by_id for k in keys):
            # the finding the owner acted on is gone: stay where it was, on the next one
            rows = [i for i, k in enumerate(keys) if k in self.by_id]
            self.move_cursor(row=next((i for i in rows if i >= gone), rows[-1]))
        else:
            first = next((i for i, k in enumerate(keys) if k in self.by_id), 0)
            self.move_cursor(row=first)
            self._placed = keys[first] if keys else None

    def keys(self) -> list[str]:
        return [str(k.value) for k in self.rows]

    def current_key(self) -> str | None:
        if not self.row_count:
            return None
        with contextlib.suppress(Exception):
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        return None

    def selected(self) -> Finding | None:
        key = self.current_key()
        return self.by_id.get(key) if key else None

    def need(self, action: str) -> Finding | None:
        """The finding under the cursor when it offers `action`; else None, and why said."""
        f = self.selected()
        if f is None:
            self.notify("pick a finding first (j/k)", timeout=3)
            return None
        if action not in f.actions:
            what = TITLES[f.kind].lower()
            self.notify(f"{action} is not offered for {what}", severity="warning", timeout=4)
            return None
        return f

    # -- the cursor, over findings only -----------------------------------------------------------

    def step(self, delta: int) -> None:
        """j/k: to the next finding, over the group rows between."""
        keys = self.keys()
        row = self.cursor_row + delta
        while 0 <= row < len(keys) and keys[row] not in self.by_id:
            row += delta
        if 0 <= row < len(keys):
            self.move_cursor(row=row)

    def page(self, direction: int) -> None:
        """ctrl+d/ctrl+u: half a screen of findings on, as in every other list."""
        keys = self.keys()
        row = max(
            0, min(len(keys) - 1, self.cursor_row + direction * max(1, self.size.height // 2))
        )
        while 0 <= row < len(keys) and keys[row] not in self.by_id:
            row += direction
        if 0 <= row < len(keys):
            self.move_cursor(row=row)
        else:
            self.edge(direction)

    def edge(self, end: int) -> None:
        """Home/End (g/G): the first or last finding, past the group rows."""
        rows = [i for i, k in enumerate(self.keys()) if k in self.by_id]
        if rows:
            self.move_cursor(row=rows[-1] if end > 0 else rows[0])

    def group(self, delta: int) -> None:
        """]/[: the first finding of the next or previous group."""
        keys = self.keys()
        heads = [i for i, k in enumerate(keys) if k.startswith("group:")]
        here = self.cursor_row
        current = max((h for h in heads if h <= here), default=-1)
        if delta > 0:
            target = next((h for h in heads if h > here), None)
        else:
            before = [h for h in heads if h < current]
            target = before[-1] if before else (current if current >= 0 else None)
        if target is not None and target + 1 < len(keys):
            self.move_cursor(row=target + 1)

    def move_past(self, key: str) -> None:
        """Off this finding (just ignored) to the next one, or the one before at the end."""
        keys = self.keys()
        if key in keys:
            after = [k for k in keys[keys.index(key) + 1 :] if k in self.by_id]
            before = [k for k in keys[: keys.index(key)] if k in self.by_id]
            nxt = after or before[-1:]
            if nxt:
                self.move_cursor(row=keys.index(nxt[0]))
