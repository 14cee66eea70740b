"""The dialog for a revert that later commits are in the way of: each one with its author, time,
tool and diff, and a tick box. AI commits and dashboard actions start ticked; the owner's own
edits start unticked and are reverted only if the owner ticks them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rich.cells import cell_len
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Static

from app.services.history import Commit
from app.services.owner_flows import Blocked, Blocker, why_ticks_fail
from app.ui.widgets.cells import cut_middle
from app.ui.widgets.diffview import render_lines
from server.core.clients import client_name

TONES = {"": "", "bold": "bold", "warning": "bold $text-warning"}


def blocker_label(c: Commit, width: int | None = None) -> Content:
    """A later commit in `width` cells: its sha, who made it (the AI and its client, or the
    owner by name) and when, then its subject (the tool and the note's path) cut in the middle.
    Who made it decides the tick, so it comes before the long path, which used to push it off
    the line."""
    who = f"AI · {client_name(c.client) if c.client else '?'}" if c.is_ai else f"you ({c.author})"
    head = Content.assemble(
        (c.short, "$text-muted"),
        "  ",
        (cut_middle(who, 30), "bold" if c.is_ai else "bold $text-warning"),
        f", {when(c)}  ",
    )
    subject = c.subject.replace("\n", " ")
    if width is None:
        return head + subject
    room = max(1, width - head.cell_length)
    tool, colon, rest = subject.partition(": ")
    if c.is_ai and colon and cell_len(subject) > room and room < cell_len(tool) + 2 + 16:
        subject = rest  # too narrow for both: the note's path over the tool (the diff says it)
    return head + cut_middle(subject, room)


def when(c: Commit) -> str:
    """The commit's local time, its year only when it is not this year's (room for the path)."""
    t = c.time.astimezone()
    return (
        f"{t:%m-%d %H:%M}" if t.year == datetime.now().astimezone().year else f"{t:%Y-%m-%d %H:%M}"
    )


class BlockerBox(Checkbox):
    """A blocker's tick box: its label is cut to the box's width when drawn, so author and
    time always show whole and the path gives way."""

    DEFAULT_CSS = "BlockerBox { width: 1fr; }"

    def __init__(self, blocker: Blocker, *, id: str) -> None:
        super().__init__(blocker_label(blocker.commit), blocker.ticked, id=id)
        self.commit = blocker.commit

    def render(self) -> Content:
        # the button and the label's padding (a cell each side) share the line with it
        room = self.content_size.width - self._button.cell_length - 2
        self._label = blocker_label(self.commit, room)
        # an X only when ticked: both states drew an X, told apart by its colour alone (151
        # against 17 on 59), and the owner's unticked commit read as ticked (audit 3 N15)
        self.BUTTON_INNER = "X" if self.value else " "
        return super().render()


class BlockersModal(ModalScreen[list[str] | None]):
    """Dismissed with the commits to revert (the targets and the ticked blockers), or None.
    y confirms, n / esc cancels, space ticks the focused commit, tab moves between them."""

    BINDINGS = [
        Binding("y", "confirm", "Revert ticked"),
        Binding("n,escape", "screen.dismiss(None)", "Cancel"),
    ]
    DEFAULT_CSS = """
    BlockersModal { align: center middle; }
    BlockersModal #dialog { border: thick $error; }
    BlockersModal #blockers { height: auto; max-height: 30; }
    BlockersModal .blocker-diff { padding: 0 0 1 4; }
    """

    def __init__(self, blocked: Blocked, root: Path | None = None) -> None:
        super().__init__()
        self.blocked = blocked
        self.root = root  # given: the ticks are checked (a choice bound to fail is not offered)
        self.why_not = ""

    def compose(self) -> ComposeResult:
        b = self.blocked
        with Vertical(id="dialog"):
            yield Static(Content.styled(b.title, "bold"), id="dialog-title")
            with VerticalScroll(id="blockers"):
                for line in b.lines:
                    text = Content(line.text)
                    yield Static(Content.styled(line.text, TONES[line.tone]) if line.tone else text)
                for i, blocker in enumerate(b.blockers):
                    yield BlockerBox(blocker, id=f"blocker-{i}")
                    diff = render_lines(blocker.changes, context=1)
                    yield Static(Content("\n").join(diff), classes="blocker-diff")
            yield Static("", id="ticks-fail")
            with Horizontal(id="buttons"):
                if b.blockers:
                    yield Button(Content("Revert ticked (y)"), variant="error", id="yes")
                yield Button(Content("Cancel (n)"), id="no")

    def on_mount(self) -> None:
        if self.blocked.blockers:
            self.query_one("#blocker-0", Checkbox).focus()
        self.query_one("#ticks-fail", Static).display = False
        self.check_ticks()

    def on_checkbox_changed(self, _: Checkbox.Changed) -> None:
        self.check_ticks()

    @work(thread=True, exclusive=True, group="ticks")
    def check_ticks(self) -> None:
        """Whether the revert as ticked can apply (planned, nothing written): if not, why, and
        the Revert button is off until the ticks change."""
        if self.root is None or not self.blocked.blockers:
            return
        ticked = self.app.call_from_thread(self.ticked)
        why = why_ticks_fail(self.root, ticked + self.blocked.targets) if ticked else ""
        self.app.call_from_thread(self._said, why)

    def _said(self, why: str) -> None:
        self.why_not = why
        if not self.is_attached:  # closed (`n`) while its check ran: nothing to say
            return
        note = self.query_one("#ticks-fail", Static)
        note.update(Content.styled(why, "bold $text-warning"))
        note.display = bool(why)
        self.query_one("#yes", Button).disabled = bool(why)

    def ticked(self) -> list[str]:
        if not self.is_attached:  # closed while its check was starting: nothing ticked
            return []
        return [
            blocker.commit.sha
            for i, blocker in enumerate(self.blocked.blockers)
            if self.query_one(f"#blocker-{i}", Checkbox).value
        ]

    def action_confirm(self) -> None:
        ticked = self.ticked()
        if not ticked:
            self.notify("nothing ticked: tick a commit (space) or cancel (n)", severity="warning")
            return
        if self.why_not:
            self.notify(self.why_not, severity="warning")
            return
        self.dismiss(ticked + self.blocked.targets)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "yes":
            self.action_confirm()
        else:
            self.dismiss(None)
