"""Small dialogs: confirm, connection snippets, help.

Every dialog has one shape (dashboard.tcss): the title docked at the top, the buttons and hints
docked at the bottom, and between them a body that takes what height is left and scrolls with
the keyboard (it has the focus). A body taller than the screen used to push the buttons off it,
with nothing that scrolled."""

from __future__ import annotations

from dataclasses import replace

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
        Binding("n,escape", "screen.dismiss(False)", "Cancel"),
    ]
    AUTO_FOCUS = "#dialog-body"

    def __init__(
        self, title: str, body: Content | str | list[Content], yes: str = "Revert"
    ) -> None:
        super().__init__()
        self.title_text = title
        self.body = body if isinstance(body, (Content, list)) else Content(body)
        self.yes = yes
        # the footer names y as its button does (`y Revert`, `y Mark reviewed`), not `y Yes`
        # beside a button that says `Revert (y)`: this dialog's own copy of its bindings
        for key in ("y", "enter"):
            self._bindings.key_to_bindings[key] = [
                replace(b, description=yes) for b in self._bindings.key_to_bindings[key]
            ]

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
    """Ready-to-paste snippets; a digit copies one to the clipboard."""

    BINDINGS = [
        Binding("escape,q,c", "screen.dismiss", "Close"),
        *(Binding(str(n), f"copy({n - 1})", f"Copy {n}", show=False) for n in range(1, 10)),
    ]
    AUTO_FOCUS = "#dialog-body"

    def __init__(self, snippets: dict[str, str], notes: list[str] | None = None) -> None:
        super().__init__()
        self.snippets = list(snippets.items())
        self.notes = notes or []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(
                Content.styled("Connect a client to this vault", "bold"), id="dialog-title"
            )
            with VerticalScroll(id="dialog-body"):
                for note in self.notes:
                    yield Static(Content(note), classes="note")
                for i, (name, text) in enumerate(self.snippets, 1):
                    yield Static(Content.styled(f"{i}. {name}", "bold $text-accent"))
                    yield Static(Content(text), classes="snippet")
            n = len(self.snippets)
            yield Static(
                Content(f"1–{n} copy a snippet · ↑/↓ PgUp/PgDn scroll · esc closes"),
                id="dialog-foot",
                classes="hint",
            )

    def action_copy(self, index: int) -> None:
        if index >= len(self.snippets):
            return
        name, text = self.snippets[index]
        self.app.copy_to_clipboard(text)
        # the terminal may drop it (tmux without set-clipboard): say so rather than "copied"
        self.app.notify(
            f"sent to the terminal's clipboard: {name}. Nothing arrived? Select the text by hand.",
            timeout=5,
        )


class HelpModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "screen.dismiss", "Close")]
    AUTO_FOCUS = "#dialog-body"

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
            yield Static(
                Content("↑/↓ PgUp/PgDn scroll · esc, q or ? closes"),
                id="dialog-foot",
                classes="hint",
            )
