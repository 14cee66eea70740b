"""Small dialogs: confirm, connection snippets, help.

Every dialog has one shape (dashboard.tcss): the title docked at the top, the buttons and hints
docked at the bottom, and between them a body that takes what height is left and scrolls with
the keyboard (it has the focus). A body taller than the screen used to push the buttons off it,
with nothing that scrolled."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.content import Content
from textual.dom import DOMNode
from textual.geometry import Size
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Button, Static

from app.ui.widgets.lines import LinesView


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


def shell_words(command: str) -> list[str]:
    """A shell command split where a line may break: at whitespace outside quotes and outside
    `$(...)`, each word as written (its quotes kept)."""
    words, word, quote, depth = [], "", "", 0
    i = 0
    while i < len(command):
        ch = command[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\" and i + 1 < len(command):
            word, i = word + command[i : i + 2], i + 2
            continue
        elif quote == '"' and ch == '"' and not depth:
            quote = ""
        elif command.startswith("$(", i):
            word, i, depth = word + "$(", i + 2, depth + 1
            continue
        elif ch == ")" and depth:
            depth -= 1
        elif ch in "'\"" and not quote and not depth:
            quote = ch
        elif ch.isspace() and not quote and not depth:
            if word:
                words.append(word)
            word, i = "", i + 1
            continue
        word += ch
        i += 1
    return [*words, word] if word else words


def shell_lines(command: str, width: int) -> list[str]:
    """`command` in lines of at most `width` cells that paste as the one command: each line but
    the last ends in ` \\` (a line continuation), the next indented. A word wider than the
    room (a long quoted path) keeps its own line whole: the view scrolls sideways for it."""
    lines: list[str] = []
    line = ""
    for word in shell_words(command):
        candidate = f"{line} {word}" if line else word
        if not line or cell_len(candidate) + 2 <= width:
            line = candidate
            continue
        lines.append(f"{line} \\")
        line = f"  {word}"
    return [*lines, line]


class Snippet(Widget):
    """A snippet as it is copied by hand: never soft-wrapped (a wrapped command pasted from
    the screen ran as two commands, a wrapped JSON string broke the JSON). A one-line shell
    command is broken with line continuations to the width it has; what still does not fit
    (a long path, a JSON line) scrolls sideways in the `SnippetScroll` around it."""

    DEFAULT_CSS = "Snippet { width: auto; height: auto; text-wrap: nowrap; }"

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.room = 0  # the cells the scroll around it shows; set at each layout

    def lines(self) -> list[str]:
        if "\n" in self.text or self.text.lstrip().startswith(("{", "[")) or self.room <= 0:
            return self.text.splitlines() or [""]
        return shell_lines(self.text, self.room)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        self.room = container.width
        return max(cell_len(line) for line in self.lines())

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines())

    def render(self) -> Content:
        return Content("\n".join(self.lines()))


class SnippetScroll(HorizontalScroll, can_focus=False):
    DEFAULT_CSS = "SnippetScroll { height: auto; }"


class ConnectModal(ModalScreen[None]):
    """Ready-to-paste snippets; a digit copies one to the clipboard."""

    BINDINGS = [
        Binding("escape,q,c", "screen.dismiss", "Close"),
        *(Binding(str(n), f"copy({n - 1})", f"Copy {n}", show=False) for n in range(1, 10)),
        Binding("right", "sideways(1)", "Long lines right", show=False),
        Binding("left", "sideways(-1)", "Long lines left", show=False),
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
                    with SnippetScroll(classes="snippet"):
                        yield Snippet(text)
            n = len(self.snippets)
            yield Static(
                Content(f"1–{n} copy · ↑/↓ PgUp/PgDn scroll · ←/→ long lines · esc closes"),
                id="dialog-foot",
                classes="hint",
            )

    def action_sideways(self, direction: int) -> None:
        """A line wider than the dialog (a long path) is read by scrolling every snippet."""
        for scroll in self.query(SnippetScroll):
            scroll.scroll_relative(x=direction * 16, animate=False)

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


# What the up, down and page keys of Textual's own tables and scrolling panes mean, in the
# words our screens use for theirs: `↑ Cursor up` on the review list is `k Up` there.
GENERIC = {
    "cursor_up": "Up",
    "scroll_up": "Up",
    "cursor_down": "Down",
    "scroll_down": "Down",
    "page_up": "Page up",
    "page_down": "Page down",
    "scroll_home": "Top",
    "scroll_top": "Top",
    "scroll_end": "Bottom",
    "scroll_bottom": "Bottom",
}


def declared_by_textual(binding: Binding, node: DOMNode) -> bool:
    """Whether `binding` comes from one of Textual's widget classes (a DataTable's cursor
    keys, a scrolling pane's sideways ones) rather than from ours; a screen's and the app's
    (tab, copy, quit) count as the screen's own."""
    if isinstance(node, (Screen, App)):
        return False
    for cls in type(node).__mro__:
        for b in cls.__dict__.get("BINDINGS", ()):
            b = b if isinstance(b, Binding) else Binding(*b)
            if b.action == binding.action and b.description == binding.description:
                return cls.__module__.split(".")[0] == "textual"
    return False


def help_entries(active: Iterable[tuple[list[str], Binding, DOMNode]]) -> list[tuple[str, str]]:
    """The help's lines, (keys, meaning), from the keys that act now (each meaning once): the
    screen's and the app's. Of the keys a Textual widget brings, up, down, page and top/bottom
    join ours of the same meaning (`↑ / k  Up`); the rest (a table's left/right and select,
    sideways paging) no screen of ours documents, and are left out."""
    out: dict[str, list[str]] = {}
    for keys, b, node in active:
        what = b.tooltip or b.description
        if declared_by_textual(b, node):
            if b.action not in GENERIC:
                continue
            what = GENERIC[b.action]
        listed = out.setdefault(what, [])
        listed.extend(k for k in keys if k not in listed)
    return [(" / ".join(keys), what) for what, keys in out.items()]


class HelpModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "screen.dismiss", "Close")]
    AUTO_FOCUS = "#dialog-body"
    # a meaning too long for one line wraps in its own column, not under the keys
    DEFAULT_CSS = """
    HelpModal .help-row { height: auto; }
    HelpModal .help-key { width: auto; }
    HelpModal .help-what { width: 1fr; }
    """

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        # the keys right-aligned in a column as wide as the widest (`^c / super+c`)
        width = max((cell_len(key) for key, _ in self.keys), default=0)
        with Vertical(id="dialog"):
            yield Static(Content.styled("Keys", "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                for key, what in self.keys:
                    pad = " " * (width - cell_len(key))
                    with Horizontal(classes="help-row"):
                        yield Static(
                            Content.styled(pad + key, "bold $text-accent") + "  ",
                            classes="help-key",
                        )
                        yield Static(Content(what), classes="help-what")
            yield Static(
                Content("↑/↓ PgUp/PgDn scroll · esc, q or ? closes"),
                id="dialog-foot",
                classes="hint",
            )
