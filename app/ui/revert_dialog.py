"""The dialog for a revert that later commits are in the way of: each one with its author, time,
tool and diff, and a tick box. AI commits and dashboard actions start ticked; the owner's own
edits start unticked and are reverted only if the owner ticks them."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Static

from ..diffview import render_lines
from ..owner_flows import Blocked

TONES = {"": "", "bold": "bold", "warning": "bold $text-warning"}


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

    def __init__(self, blocked: Blocked) -> None:
        super().__init__()
        self.blocked = blocked

    def compose(self) -> ComposeResult:
        b = self.blocked
        with Vertical(id="dialog"):
            yield Static(Content.styled(b.title, "bold"), id="dialog-title")
            with VerticalScroll(id="blockers"):
                for line in b.lines:
                    text = Content(line.text)
                    yield Static(Content.styled(line.text, TONES[line.tone]) if line.tone else text)
                for i, blocker in enumerate(b.blockers):
                    yield Checkbox(Content(blocker.label), blocker.ticked, id=f"blocker-{i}")
                    diff = render_lines(blocker.changes, context=1)
                    yield Static(Content("\n").join(diff), classes="blocker-diff")
            with Horizontal(id="buttons"):
                if b.blockers:
                    yield Button(Content("Revert ticked (y)"), variant="error", id="yes")
                yield Button(Content("Cancel (n)"), id="no")

    def on_mount(self) -> None:
        if self.blocked.blockers:
            self.query_one("#blocker-0", Checkbox).focus()

    def ticked(self) -> list[str]:
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
        self.dismiss(ticked + self.blocked.targets)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "yes":
            self.action_confirm()
        else:
            self.dismiss(None)
