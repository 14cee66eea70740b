"""Small dialogs: confirm, connection snippets, help."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from .lines import LinesView


class ConfirmModal(ModalScreen[bool]):
    """y / enter confirms, n / esc cancels (lazygit's convention)."""

    BINDINGS = [
        Binding("y,enter", "screen.dismiss(True)", "Yes"),
        Binding("n,escape", "screen.dismiss(False)", "No"),
    ]

    def __init__(
        self, title: str, body: Content | str | list[Content], yes: str = "Revert"
    ) -> None:
        super().__init__()
        self.title_text = title
        self.body = body if isinstance(body, (Content, list)) else Content(body)
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content.styled(self.title_text, "bold"), id="dialog-title")
            yield LinesView(id="dialog-body")
            with Horizontal(id="buttons"):
                yield Button(Content(f"{self.yes} (y)"), variant="error", id="yes")
                yield Button(Content("Cancel (n)"), id="no")

    def on_mount(self) -> None:
        self.query_one("#dialog-body", LinesView).update(self.body)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ConnectModal(ModalScreen[None]):
    """Ready-to-paste snippets; 1, 2, 3 copy one to the clipboard."""

    BINDINGS = [
        Binding("escape,q,c", "screen.dismiss", "Close"),
        Binding("1", "copy(0)", "Copy 1"),
        Binding("2", "copy(1)", "Copy 2"),
        Binding("3", "copy(2)", "Copy 3"),
    ]

    def __init__(self, snippets: dict[str, str]) -> None:
        super().__init__()
        self.snippets = list(snippets.items())

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(
                Content.styled("Connect a client to this vault", "bold"), id="dialog-title"
            )
            with VerticalScroll(id="dialog-body"):
                for i, (name, text) in enumerate(self.snippets, 1):
                    yield Static(Content.styled(f"{i}. {name}", "bold $text-accent"))
                    yield Static(Content(text), classes="snippet")
            yield Static(Content("1/2/3 copy to the clipboard · esc closes"), classes="hint")

    def action_copy(self, index: int) -> None:
        name, text = self.snippets[index]
        self.app.copy_to_clipboard(text)
        self.app.notify(f"copied: {name}", timeout=3)


class HelpModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "screen.dismiss", "Close")]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content.styled("Keys", "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                for key, what in self.keys:
                    yield Static(
                        Content.styled(f"{key:>10}", "bold $text-accent") + Content(f"  {what}")
                    )
