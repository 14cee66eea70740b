"""Dialogs for the owner's file actions: a fuzzy file finder, the destination of a move (with
folder completion), and the form for a new note of a doc type."""

from __future__ import annotations

import contextlib
from datetime import date
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from app.services.actions import ActionError
from app.services.create_action import NewNote, plan_create
from app.services.note_types import doc_type, from_date
from server.notes.config import ConfigError, DocType, load_config
from server.services.op_plans import note_path
from server.services.write_plan import Rejected

MAX_SHOWN = 200


def rank(query: str, candidates: list[str]) -> list[str]:
    """Candidates best first: each word of the query must match (fuzzily, in any order), then
    the best total score, then shorter paths. An empty query keeps the order."""
    words = query.split()
    if not words:
        return candidates[:MAX_SHOWN]
    matchers = [Matcher(w) for w in words]
    scored = []
    for c in candidates:
        scores = [m.match(c) for m in matchers]
        if all(scores):
            scored.append((-sum(scores), len(c), c))
    return [c for *_, c in sorted(scored)][:MAX_SHOWN]


class FileFinder(ModalScreen[str | None]):
    """Type part of a path; enter picks the highlighted file (or folder, ending in /)."""

    AUTO_FOCUS = "#find"

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("down", "cursor(1)", show=False),
        Binding("up", "cursor(-1)", show=False),
    ]

    def __init__(self, title: str, candidates: list[str], query: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.candidates = candidates
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content.styled(self.title_text, "bold"), id="dialog-title")
            # docked: at 80x24 the list pushed the hint below the dialog
            yield Static(
                Content("enter picks · ↑/↓ move · esc cancels"), classes="hint", id="dialog-foot"
            )
            yield Input(self.query_text, placeholder="part of a path (fuzzy)", id="find")
            yield OptionList(id="matches")

    def on_mount(self) -> None:
        self._refresh(self.query_text)

    @on(Input.Changed, "#find")
    def _changed(self, event: Input.Changed) -> None:
        self._refresh(event.value)

    def _refresh(self, query: str) -> None:
        ol = self.query_one("#matches", OptionList)
        ol.clear_options()
        ol.add_options([Option(Content(c), id=c) for c in rank(query, self.candidates)])
        # nothing is picked for an empty query: enter alone must not choose a file, not even
        # the row's note the caller lists first (`finder_order`; ↓ then enter picks it)
        ol.highlighted = 0 if ol.option_count and query.strip() else None

    def action_cursor(self, delta: int) -> None:
        ol = self.query_one("#matches", OptionList)
        if ol.option_count:
            at = ol.highlighted
            ol.highlighted = 0 if at is None else max(0, min(ol.option_count - 1, at + delta))

    @on(Input.Submitted, "#find")
    def _submitted(self) -> None:
        ol = self.query_one("#matches", OptionList)
        if ol.highlighted is not None and ol.option_count:
            self.dismiss(ol.get_option_at_index(ol.highlighted).id)

    @on(OptionList.OptionSelected, "#matches")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class DestinationPrompt(ModalScreen[str | None]):
    """Where to move a file or folder: the path, with folder completion (→ accepts)."""

    AUTO_FOCUS = "#dest"

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, source: str, folders: list[str], suggested: str | None) -> None:
        super().__init__()
        self.source = source
        self.folders = folders
        self.suggested = suggested

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content.styled(f"Move {self.source} to", "bold"), id="dialog-title")
            # the cursor at the end, nothing selected: the first backspace edits the name
            yield Input(
                self.source,
                id="dest",
                select_on_focus=False,
                suggester=SuggestFromList([f + "/" for f in self.folders], case_sensitive=False),
            )
            if self.suggested:
                yield Static(
                    Content(
                        f"its doc type lives in {self.suggested}/ (a path ending in / keeps the file's name)"
                    ),
                    classes="hint",
                )
            yield Static(
                Content(
                    "→ completes a folder · enter previews (nothing is written yet) · esc cancels"
                ),
                classes="hint",
            )

    @on(Input.Submitted, "#dest")
    def _submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if value and value != self.source:
            self.dismiss(value)


def preview_path(root: Path, type_name: str, values: dict[str, str], title: str) -> str:
    """The path a new note will get: filled in as soon as the fields its file name uses are
    there (the server's own rule), the type's folder and pattern until then."""
    fields = {k: v.strip() for k, v in values.items() if v.strip()}
    try:
        return note_path(load_config(root), type_name, {**fields, "title": title.strip()}, "")
    except (Rejected, ConfigError):
        pass
    try:
        t = doc_type(root, type_name)
    except ActionError:
        return "(pick a doc type)"
    return f"{t.folder}/{t.filename or '{slug}.md'}".lstrip("/")


def field_id(i: int) -> str:
    """A form field's widget id by its place: a field's name may be Chinese (`日期`), hold a
    space or be `title`, and an id must be ASCII letters, digits, `_` or `-` (Textual raised
    BadIdentifier and the dashboard closed)."""
    return f"field-{i}"


class _Fields(VerticalScroll, can_focus=False):
    """The form's fields. Not focusable itself: the first Tab after the type picker must land in
    the title, not on this container (where typing went nowhere and shifted every value)."""


class NewNoteForm(ModalScreen[NewNote | None]):
    """Pick a doc type, fill its required fields (dates default to today, fields with allowed
    values are pickers), see the path the note will get; ctrl+s or enter creates. Errors and the
    path show at the bottom, always on screen."""

    AUTO_FOCUS = "#type"

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel"), Binding("ctrl+s", "create", "Create")]

    def __init__(self, root: Path, types: list[str]) -> None:
        super().__init__()
        self.root = root
        self.types = types
        self.fields: list[str] = []
        self.built: str | None = None
        self.type: DocType | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            with Vertical(id="dialog-head"):
                yield Static(Content.styled("New note", "bold"), id="dialog-title")
                yield Select(
                    [(t, t) for t in self.types],
                    prompt="doc type",
                    id="type",
                    value=self.types[0] if self.types else Select.NULL,
                )
            # the title is there from the start and stays when the type changes (it was built
            # with the fields: a title typed was lost, and a test could look before it was)
            with _Fields(id="form"):
                yield Label("title")
                yield Input(placeholder="the note's heading (and slug)", id="f-title")
            with Vertical(id="dialog-foot"):
                yield Static(id="form-error")
                yield Static(id="form-path")
                yield Static(
                    Content("tab moves · enter on the last field or ctrl+s creates · esc cancels"),
                    classes="hint",
                )

    async def on_mount(self) -> None:
        if self.types:
            await self._build(self.types[0])

    @on(Select.Changed, "#type")
    async def _type(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            await self._build(event.value)

    async def _build(self, type_name: str) -> None:
        if type_name == self.built:
            return
        # what was typed stays: each field the new type asks for too
        kept: dict[str, str] = {}
        with contextlib.suppress(NoMatches):
            _, kept, _ = self._values()
        self.built = type_name
        t = doc_type(self.root, type_name)
        self.type = t
        self.fields = list(t.required)
        derived = from_date(t, {})
        form = self.query_one("#form", _Fields)
        await form.remove_children(list(form.children)[2:])  # all but the title
        widgets: list[Label | Input | Select[str]] = []
        today = date.today().isoformat()
        for i, f in enumerate(self.fields):
            widgets.append(Label(f))
            allowed = [str(v) for v in t.values.get(f, ())]
            was = kept.get(f, "")
            if allowed:
                widgets.append(
                    Select(
                        [(v, v) for v in allowed],
                        prompt=f"pick a {f}",
                        id=field_id(i),
                        value=was if was in allowed else Select.NULL,
                    )
                )
            elif f in t.dates:
                widgets.append(Input(was or today, placeholder="YYYY-MM-DD", id=field_id(i)))
            elif f in derived:  # the file name takes it from the date: so does the field
                widgets.append(Input(was, placeholder=self._from_date(f, {}), id=field_id(i)))
            else:
                widgets.append(Input(was, id=field_id(i)))
        await form.mount_all(widgets)
        self.query_one("#form-error", Static).update("")
        self._preview()

    def _from_date(self, name: str, values: dict[str, str]) -> str:
        """The placeholder of a field left to the date: the value it will get."""
        value = from_date(self.type, values).get(name, "") if self.type else ""
        return f"{value} (from the date; type to change)"

    def field(self, name: str) -> Input | Select[str]:
        """The widget of the required field `name`: an Input, or a Select of allowed values."""
        w = self.query_one(f"#{field_id(self.fields.index(name))}")
        assert isinstance(w, (Input, Select))
        return w

    def _values(self) -> tuple[str, dict[str, str], str]:
        """(type, field values, title) as the form holds them now."""
        t = self.query_one("#type", Select).value
        values = {}
        for f in self.fields:
            v = self.field(f).value
            values[f] = v if isinstance(v, str) else ""
        return (t if isinstance(t, str) else ""), values, self.query_one("#f-title", Input).value

    @on(Input.Changed)
    @on(Select.Changed)
    def _preview(self) -> None:
        """The path the note will get, before it is created: filled in once the fields allow,
        the type's folder and pattern until then."""
        if not self.built:
            return
        try:
            type_name, values, title = self._values()
        except NoMatches:  # the form is being rebuilt for another type; _build previews after
            return
        for f in from_date(self.type, values) if self.type else ():  # follows the date typed
            if isinstance(w := self.field(f), Input):
                w.placeholder = self._from_date(f, values)
        path = preview_path(self.root, type_name, values, title)
        self.query_one("#form-path", Static).update(Content.styled(f"creates {path}", "bold"))

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        inputs = list(self.query("#form Input").results(Input))
        if inputs and event.input is inputs[-1]:
            self.action_create()
        else:
            self.focus_next()

    def action_create(self) -> None:
        type_name, values, title = self._values()
        if not type_name:
            self.query_one("#form-error", Static).update(
                Content.styled("pick a doc type", "$text-error")
            )
            return
        try:
            note = plan_create(self.root, type_name, values, title)
        except ActionError as exc:
            self.query_one("#form-error", Static).update(Content.styled(str(exc), "$text-error"))
            return
        self.dismiss(note)
