"""The dashboard app: themes, the feed and the server child, polling, and the few keys that
mean the same on every screen (help, quit). Each screen owns its own keys; the main screen
(`main_screen.MainScreen`) is the timeline, the diff and the owner's actions."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, cast

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from server.config import ConfigStore
from server.gitrepo import operation_in_progress

from .. import settings
from ..feed import Feed, Row
from ..supervisor import ServerSupervisor
from .header import HeaderFacts, ServerState, config_time
from .main_screen import MainScreen, VaultChanged
from .modals import HelpModal

POLL_SECONDS = 0.15  # journal stat + one rev-parse: cheap, and new rows show within 300 ms


class FeedChanged(Message):
    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FeedChanged)


class Dashboard(App[None]):
    CSS_PATH = str(
        Path(__file__).with_name("dashboard.tcss")
    )  # absolute: subclasses live elsewhere
    TITLE = "vaultwatch"
    # under 160 cells the timeline and the diff stack (lazygit does the same), side by side above,
    # where the timeline (5/8) is as wide as a stacked one at 100 cells: widening never shows less
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (160, "-wide")]
    BINDINGS = [
        Binding("question_mark", "help", "Keys", tooltip="the keys of this screen"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, root: Path, *, supervisor: ServerSupervisor | None = None,
                 theme: str | None = None, poll_seconds: float = POLL_SECONDS) -> None:  # fmt: skip
        super().__init__()
        self.root = root
        self.feed = Feed(root)
        self.configs = ConfigStore(root)
        self.supervisor = supervisor
        self.poll_seconds = poll_seconds
        self._theme_choice = theme
        self.today: Any = None  # tag trends' "today" (tests pin it)
        self._polling = threading.Lock()
        self._git_op: tuple[str, str] | None = None  # the git operation the header last showed

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        return cast(MainScreen, self.default_screen)

    def visible_rows(self) -> list[Row]:
        """The rows the main screen's timeline shows (filters applied)."""
        return self.main.visible_rows()

    def on_mount(self) -> None:
        for th in settings.bundled_themes():
            self.register_theme(th)
        wanted = self._theme_choice or settings.load().get("theme") or "vaultwatch-dark"
        self.theme = wanted if wanted in self.available_themes else "vaultwatch-dark"
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
        op = operation_in_progress(self.root)  # a few stat calls
        changed_op, self._git_op = op != self._git_op, op
        if self.feed.poll() or restarted or changed_op:
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
            self.main.feed_changed()

    def on_vault_changed(self, _: VaultChanged) -> None:
        self.poll()

    def header_facts(self) -> HeaderFacts:
        sup = self.supervisor
        server = None
        if sup is not None:
            server = ServerState("up" if sup.alive else "down", sup.url, sup.restarts)
        cfg = self.configs.current()  # a few stat calls: the file is parsed only when it changed
        events = self.feed.events
        return HeaderFacts(
            self.root,
            server,
            events,
            cfg.source,
            config_time(self.root, cfg.source, events) if cfg.source else "",
            [str(p) for p in self.configs.errors],
            repo_state(self._git_op),
        )

    # -- keys every screen shares -----------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpModal(key_help(self.screen)))


def repo_state(op: tuple[str, str] | None) -> str | None:
    """What the header says while git is in the middle of something: AI writes are refused."""
    if op is None:
        return None
    return f"⚠ git mid-{op[0]}: AI writes refused · A aborts"  # whole even at 80 columns


def key_help(screen: Screen[Any]) -> list[tuple[str, str]]:
    """The keys that act on this screen now, from its bindings (and its focused widget's and
    the app's): one line per action, its keys together, the longer tooltip if it has one."""
    app = screen.app
    lines: dict[tuple[str, str], list[str]] = {}
    for active in screen.active_bindings.values():
        b = active.binding
        what = b.tooltip or b.description
        if not what:
            continue
        lines.setdefault((b.action, what), []).append(app.get_key_display(b))
    return [(" / ".join(keys), what) for (_, what), keys in lines.items()]
