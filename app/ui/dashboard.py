"""The dashboard: header, a live timeline of every AI commit, human commit, conflict, rejected
write and server event, and a detail pane with the diff; one-key revert."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import events, on, work
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Footer, Input, Static

from server.config import ConfigStore

from .. import settings
from ..actions import ActionError, RevertConflict, revert
from ..diffview import render_lines
from ..feed import Feed, Row
from ..file_actions import (
    apply_create,
    apply_move,
    apply_remove,
    doc_types,
    folders_of,
    plan_move,
    plan_remove,
    suggest_folder,  # fmt: skip
    vault_files,
)
from ..history import commit_changes
from ..supervisor import ServerSupervisor, connect_notes, snippets
from .details import commit_header, event_detail
from .file_dialogs import DestinationPrompt, FileFinder, NewNoteForm
from .header_fit import Segment, fit
from .insights import CostScreen, TagsScreen
from .lines import LinesView
from .modals import ConfirmModal, ConnectModal, HelpModal
from .timeline import Timeline

POLL_SECONDS = 0.15  # journal stat + one rev-parse: cheap, and new rows show within 300 ms


class FeedChanged(Message):
    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FeedChanged)


class Dashboard(App[None]):
    CSS_PATH = str(
        Path(__file__).with_name("dashboard.tcss")
    )  # absolute: subclasses live elsewhere
    TITLE = "vaultwatch"
    AUTO_FOCUS = "#timeline"
    # under 160 cells the timeline and the diff stack (lazygit does the same), side by side above,
    # where the timeline (5/8) is as wide as a stacked one at 100 cells: widening never shows less
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (160, "-wide")]
    BINDINGS = [
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("a", "only('a')", "AI"),
        Binding("h", "only('h')", "Human"),
        Binding("e", "only('e')", "Errors"),
        Binding("slash", "search", "Filter"),
        Binding("r", "revert", "Revert"),
        Binding("s", "split", "Split"),
        Binding("plus,equals_sign", "context(1)", "More ctx", show=False),
        Binding("minus", "context(-1)", "Less ctx", show=False),
        Binding("m", "move_file", "Move"),
        Binding("n", "new_note", "New"),
        Binding("x", "delete_file", "Delete"),
        Binding("g", "tags", "Tags"),
        Binding("dollar_sign", "cost", "Cost"),
        Binding("c", "connect", "Connect"),
        Binding("question_mark", "help", "Keys"),
        Binding("q", "quit", "Quit"),
    ]
    KEYS_HELP = [
        ("j / k", "move in the timeline"), ("a", "AI commits only (again: all)"),
        ("h", "human commits only"), ("e", "conflicts, rejections and errors only"),
        ("/", "filter by path or text (esc clears)"), ("r", "revert the selected AI commit"),
        ("s", "unified / side-by-side diff"), ("+ / -", "more / less diff context"),
        ("m", "move or rename a file or folder (links rewritten)"), ("n", "new note from a doc type"),
        ("x", "delete a file (git rm; revertable)"),
        ("g", "tag trends"), ("$", "context cost today"), ("c", "connect a client (copy snippet)"),
        ("ctrl+p", "command palette (themes)"), ("?", "this list"), ("q", "quit"),
    ]  # fmt: skip

    def __init__(self, root: Path, *, supervisor: ServerSupervisor | None = None,
                 theme: str | None = None, poll_seconds: float = POLL_SECONDS) -> None:  # fmt: skip
        super().__init__()
        self.root = root
        self.feed = Feed(root)
        self.configs = ConfigStore(root)
        self._shown: list[Row] | None = None  # the feed's rows the timeline was last filled from
        self.supervisor = supervisor
        self.group: str | None = None
        self.text_filter = ""
        self.split = False
        self.context_lines = 3
        self.poll_seconds = poll_seconds
        self._theme_choice = theme
        self._selected: str | None = None
        self.today: Any = None  # tag trends' "today" (tests pin it)
        self._polling = threading.Lock()

    def _q(self, selector: str, expect: Any = None) -> Any:
        """A widget of the main screen, whichever screen is on top (tags, cost, a dialog)."""
        if not self.screen_stack:
            raise NoMatches(f"no screen (closing): {selector}")
        screen = self.screen_stack[0]
        return (
            screen.query_one(selector, expect) if expect is not None else screen.query_one(selector)
        )

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        with Horizontal(id="main"):
            yield Timeline(id="timeline")
            yield LinesView(id="detail")
        yield Input(placeholder="filter: path or text (enter applies, esc clears)", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        for th in settings.bundled_themes():
            self.register_theme(th)
        wanted = self._theme_choice or settings.load().get("theme") or "vaultwatch-dark"
        self.theme = wanted if wanted in self.available_themes else "vaultwatch-dark"
        self._q("#filter", Input).display = False
        self.refresh_header()
        self.poll()
        self.set_interval(self.poll_seconds, self.poll)

    def watch_theme(self, theme: str) -> None:
        """Remembered per user: the next start uses the theme chosen last (palette or --theme)."""
        with contextlib.suppress(OSError):
            settings.save(theme=theme)

    # -- live updates -----------------------------------------------------------------------------

    @work(thread=True, group="poll")
    def poll(self) -> None:
        """One look at the journal, HEAD and the server child. A poll still running (a restart
        waits for the new server) makes the next ones skip instead of piling up."""
        if not self._polling.acquire(blocking=False):
            return
        try:
            self._poll()
        finally:
            self._polling.release()

    def _poll(self) -> None:
        restarted = self.supervisor.check() if self.supervisor else False
        if restarted:
            self.call_from_thread(self.notify, f"the vault server died (exit {self.supervisor.last_exit}) "  # type: ignore[union-attr]
                                  "and was restarted", severity="warning", timeout=8)  # fmt: skip
        if self.feed.poll() or restarted:
            self.post_message(FeedChanged())
        if not self.feed.complete:
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.call_from_thread(self.backfill)

    @work(thread=True, group="backfill")
    def backfill(self) -> None:
        """The history older than the first screenful, read after that screen is drawn."""
        if self.feed.backfill():
            self.post_message(FeedChanged())

    def on_feed_changed(self, _: FeedChanged) -> None:
        with contextlib.suppress(NoMatches):  # the app is closing
            if self.feed.rows is not self._shown:  # a read event changes the header, not the rows
                self.refill()
            self.refresh_header()

    def visible_rows(self) -> list[Row]:
        rows = self.feed.rows
        if self.group:
            rows = [r for r in rows if r.group == self.group]
        if self.text_filter:
            f = self.text_filter.casefold()
            rows = [r for r in rows if f in r.summary.casefold() or any(f in p.casefold() for p in r.paths)
                    or f in r.who.casefold()]  # fmt: skip
        return rows

    def refill(self) -> None:
        """Show the rows the filters let through; the cursor stays on the row it was on."""
        self._shown = self.feed.rows
        self._q("#timeline", Timeline).set_rows(self.visible_rows())

    def refresh_header(self, width: int | None = None) -> None:
        # what must not be missed has one form; the rest shortens, URL and times first
        segs = [Segment([Content.styled(" vaultwatch ", "bold reverse")])]
        name = self.root.name or str(self.root)
        segs.append(Segment([Content(f" {short_path(self.root)} "), Content(f" {name} ")], shed=2))
        sup = self.supervisor
        if sup is not None:
            if sup.alive:
                segs.append(Segment([Content.styled(f"● serving {sup.url or ''}", "$text-success"),
                                     Content.styled("● serving", "$text-success")]))  # fmt: skip
            else:
                segs.append(Segment([Content.styled("○ server down", "bold $text-error")]))
            if sup.restarts:
                segs.append(Segment([Content.styled(f" (restarted {sup.restarts}×)", "$text-warning")]))  # fmt: skip
        recent = sorted({str(e.get("client", "")).split("/")[0] for e in self.feed.events[-500:]
                         if e.get("kind") in ("read", "commit", "conflict", "rejected", "noop")
                         and e.get("client") not in (None, "human", "unknown")})  # fmt: skip
        segs.append(Segment([Content(f"  clients: {', '.join(recent) or 'none yet'}"),
                             Content(f"  clients: {len(recent)}"), Content("")], shed=3))  # fmt: skip
        progress = next(
            (e for e in reversed(self.feed.events[-2000:]) if e.get("kind") == "semantic_progress"),
            None,
        )
        if progress is not None:
            done, total = int(progress.get("indexed", 0)), int(progress.get("total", 0))
            if done >= total:
                segs.append(Segment([Content(f"  recall: ready ({total:,} notes)"),
                                     Content("  recall: ready")], shed=1))  # fmt: skip
            else:
                segs.append(Segment([Content.styled(f"  recall: indexing {done:,}/{total:,}", "$text-warning")]))  # fmt: skip
        cfg = self.configs.current()  # a few stat calls: the file is parsed only when it changed
        if self.configs.errors:
            segs.append(Segment([Content.styled(f"  config error: {self.configs.errors[0]}", "bold $text-error")]))  # fmt: skip
        elif cfg.source:
            segs.append(Segment([Content(f"  config {cfg.source} loaded {self._config_time(cfg.source)}"),
                                 Content(f"  config {cfg.source}"), Content("")]))  # fmt: skip
        else:
            segs.append(Segment([Content("  config: defaults (no vault.config.yaml)"),
                                 Content("  config: defaults"), Content("")]))  # fmt: skip
        width = width or self.size.width or 1000  # before the first layout: everything, in full
        self._q("#header", Static).update(fit(segs, width))

    def on_resize(self, event: events.Resize) -> None:
        self.refresh_header(event.size.width)  # self.size may not have caught up yet

    def _config_time(self, name: str) -> str:
        """When the server took the config in force: its last (re)load in the journal, else the
        file's own time."""
        for e in reversed(self.feed.events):
            if e.get("kind") == "server_started" or (
                e.get("kind") == "config_reloaded" and e.get("ok")
            ):
                try:
                    ts = datetime.fromisoformat(str(e["ts"]).replace("Z", "+00:00"))
                    return ts.astimezone().strftime("%H:%M:%S")
                except (KeyError, ValueError):
                    break
        mtime = (self.root / name).stat().st_mtime
        return datetime.fromtimestamp(mtime).astimezone().strftime("%m-%d %H:%M")

    # -- the detail pane --------------------------------------------------------------------------

    def _row(self, key: str | None) -> Row | None:
        """The shown row with this key (a dict lookup: bindings ask this on every refresh)."""
        if key is None:
            return None
        with contextlib.suppress(NoMatches):
            t = self._q("#timeline", Timeline)
            at = t.index_of(key)
            return t.rows[at] if at is not None else None
        return None

    @on(Timeline.Highlighted, "#timeline")
    def _highlighted(self, event: Timeline.Highlighted) -> None:
        self._selected = event.row.key if event.row is not None else None
        self.show_detail()
        with contextlib.suppress(ScreenStackError):  # not while the app is closing
            self.refresh_bindings()

    def show_detail(self) -> None:
        with contextlib.suppress(NoMatches):
            self._show_detail()

    def _show_detail(self) -> None:
        row = self._row(self._selected)
        if row is None:
            self._q("#detail", LinesView).update([])
            return
        if row.commit is not None:
            self.load_diff(row, self.split, self.context_lines)
        else:
            self._q("#detail", LinesView).update(event_detail(row, self.root))

    @work(thread=True, exclusive=True, group="diff")
    def load_diff(self, row: Row, split: bool, context: int) -> None:
        assert row.commit is not None
        changes = commit_changes(self.root, row.commit.sha)
        view = self._q("#detail", LinesView)
        width = view.scrollable_content_region.width or 100
        lines = [
            *commit_header(row),
            Content(""),
            *render_lines(changes, split=split, width=width, context=context),
        ]
        self.call_from_thread(view.update, lines)

    # -- actions ----------------------------------------------------------------------------------

    def action_only(self, group: str) -> None:
        self.group = None if self.group == group else group
        self.notify({"a": "AI commits", "h": "human commits", "e": "conflicts and rejections"}[group]
                    + (" only" if self.group else ": off"), timeout=2)  # fmt: skip
        self.refill()

    def action_search(self) -> None:
        box = self._q("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Submitted, "#filter")
    def _filter(self, event: Input.Submitted) -> None:
        self.text_filter = event.value.strip()
        self._q("#timeline", Timeline).focus()
        self.refill()

    def on_key(self, event: Any) -> None:
        box = self._q("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.value = ""
            box.display = False
            self.text_filter = ""
            self._q("#timeline", Timeline).focus()
            self.refill()

    def action_move(self, delta: int) -> None:
        t = self._q("#timeline", Timeline)
        t.move_to(t.cursor + delta)

    def action_split(self) -> None:
        self.split = not self.split
        self.show_detail()

    def action_context(self, delta: int) -> None:
        self.context_lines = max(0, min(50, self.context_lines + delta))
        self.show_detail()

    def action_tags(self) -> None:
        self.push_screen(TagsScreen(self.root, today=self.today))

    def action_cost(self) -> None:
        self.push_screen(CostScreen(self.feed.events))

    def action_connect(self) -> None:
        url = (
            self.supervisor.url
            if self.supervisor and self.supervisor.url
            else "http://127.0.0.1:8765/mcp"
        )
        self.push_screen(ConnectModal(snippets(self.root, url), connect_notes(self.root, url)))

    def action_help(self) -> None:
        self.push_screen(HelpModal(self.KEYS_HELP))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "revert":
            row = self._row(self._selected)
            return True if row is not None and revertable(row) else None
        return True

    @work(exclusive=True, group="revert")
    async def action_revert(self) -> None:
        row = self._row(self._selected)
        if row is None or row.commit is None or not revertable(row):
            self.notify(
                "select an AI commit (or a move, create or delete) to revert", severity="warning"
            )
            return
        c = row.commit
        changes = commit_changes(self.root, c.sha)
        body = [Content(f"{c.short}  {c.subject}"), Content(f"by {c.author} ({c.client}) at {c.time.astimezone():%Y-%m-%d %H:%M}"),
                Content(""), Content("This undoes:"), Content(""), *render_lines(changes, context=1)]  # fmt: skip
        if not await self.push_screen_wait(ConfirmModal(f"Revert {c.short}?", body)):
            return
        await self._do_revert([c.sha])

    # -- the owner's file actions ------------------------------------------------------------------

    def _selected_file(self) -> str:
        row = self._row(self._selected)
        for p in row.paths if row else ():
            if (self.root / p).is_file():
                return p
        return ""

    async def _pick(self, title: str, folders: bool) -> tuple[str | None, list[str]]:
        """(the file or folder chosen in the finder, every file of the vault)."""
        files = await asyncio.to_thread(vault_files, self.root)
        candidates = files + ([f + "/" for f in folders_of(files)] if folders else [])
        picked = await self.push_screen_wait(FileFinder(title, candidates, self._selected_file()))
        return (picked.rstrip("/") if picked else None), files

    @work(exclusive=True, group="files")
    async def action_move_file(self) -> None:
        source, files = await self._pick("Move or rename which file or folder?", folders=True)
        if not source:
            return
        suggested = await asyncio.to_thread(suggest_folder, self.root, source)
        dest = await self.push_screen_wait(DestinationPrompt(source, folders_of(files), suggested))
        if not dest:
            return
        try:
            plan = await asyncio.to_thread(plan_move, self.root, source, dest)
        except ActionError as exc:
            self.notify(str(exc), title="cannot move", severity="error", timeout=8)
            return
        body = [
            Content.styled(f"{old}  →  {new}", "bold") for old, new in list(plan.moves.items())[:20]
        ]
        if len(plan.moves) > 20:
            body.append(Content(f"… and {len(plan.moves) - 20} more files"))
        for p in plan.problems:
            body.append(Content.styled(f"⚠ {p}", "bold $text-warning"))
        n = len(plan.edits)
        body += [Content(""), Content(f"Links change in {n} note{'s' if n != 1 else ''}:" if n else "No links to rewrite."),
                 Content(""), *render_lines(plan.changes(), context=1)]  # fmt: skip
        if not await self.push_screen_wait(ConfirmModal(plan.subject, body, yes="Move")):
            return
        await self._file_action(apply_move, plan, "moved")

    @work(exclusive=True, group="files")
    async def action_new_note(self) -> None:
        types = doc_types(self.root)
        if not types:
            self.notify("this vault's config has no doc types to create from", severity="warning")
            return
        note = await self.push_screen_wait(NewNoteForm(self.root, types))
        if note is not None:
            await self._file_action(apply_create, note, f"created {note.path}")

    @work(exclusive=True, group="files")
    async def action_delete_file(self) -> None:
        path, _ = await self._pick("Delete which file?", folders=False)
        if not path:
            return
        try:
            plan = await asyncio.to_thread(plan_remove, self.root, path)
        except ActionError as exc:
            self.notify(str(exc), title="cannot delete", severity="error", timeout=8)
            return
        if plan.backlinks:
            body = [
                Content.styled(
                    f"{len(plan.backlinks)} link(s) to it will break:", "bold $text-warning"
                ),
                Content(""),
            ]
            body += [Content(f"  {src}:{line}  {text}") for src, line, text in plan.backlinks[:200]]
        else:
            body = [Content("No note links to it.")]
        body += [
            Content(""),
            Content("git rm, one commit; r on it in the timeline brings it back."),
        ]
        if await self.push_screen_wait(ConfirmModal(f"Delete {path}?", body, yes="Delete")):
            await self._file_action(apply_remove, plan, f"deleted {path}")

    async def _file_action(self, apply: Any, plan: Any, done: str) -> None:
        try:
            sha = await asyncio.to_thread(apply, self.root, plan)
        except ActionError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return
        self.notify(f"{done} ({sha[:8]})", timeout=4)
        self.poll()

    async def _do_revert(self, shas: list[str]) -> None:
        try:
            sha = await asyncio.to_thread(revert, self.root, shas)
        except RevertConflict as exc:
            if not exc.blockers:
                self.notify(
                    "the revert conflicted and was undone; nothing changed",
                    severity="error",
                    timeout=8,
                )
                return
            names = "\n".join(f"  {b.short}  {b.subject}" for b in exc.blockers)
            ask = ConfirmModal("Revert conflicts — vault unchanged",
                               Content(f"Later commits changed the same lines:\n\n{names}\n\n"
                                       "Revert them too, newest first, as one action?"), yes="Revert all")  # fmt: skip
            if await self.push_screen_wait(ask):
                await self._do_revert([b.sha for b in exc.blockers] + [t.sha for t in exc.targets])
            return
        except ActionError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        except Exception as exc:  # a git state the owner must fix (merge in progress, ...)
            self.notify(str(exc), title="revert refused", severity="error", timeout=8)
            return
        self.notify(f"reverted as {sha[:8]}", timeout=4)
        self.poll()


def short_path(path: Path, most: int = 32) -> str:
    """The vault's folder as the header can afford it: ~ for home, then only its last parts."""
    text = str(path)
    home = str(Path.home())
    if text.startswith(home + "/"):
        text = "~" + text[len(home) :]
    if len(text) <= most:
        return text
    parts = Path(text).parts
    return "…/" + "/".join(parts[-2:]) if len(parts) > 2 else text


def revertable(row: Row) -> bool:
    """AI commits, and the owner's own file actions (a delete is undone like any commit)."""
    c = row.commit
    return c is not None and (c.is_ai or c.action in ("move", "create", "remove"))
