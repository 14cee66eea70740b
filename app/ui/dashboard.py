"""The dashboard app: themes, the feed and the server child, polling, and the few keys that
mean the same on every screen (help, quit). Each screen owns its own keys; the main screen
(`main_screen.MainScreen`) is the timeline, the diff and the owner's actions."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.filter import LineFilter
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer

from app.services.feed import Feed, Row
from app.services.feedback import FeedbackCount
from app.services.review_watch import ReviewWatch
from app.services.supervisor import ServerSupervisor
from app.ui import settings
from app.ui.dialogs.modals import HelpModal, help_entries
from app.ui.dialogs.owner_actions import VaultChanged
from app.ui.screens.main_screen import MainScreen
from app.ui.widgets.header import HeaderFacts, ServerState, config_time
from app.ui.widgets.shown import ShowControls
from app.ui.widgets.timeline import Timeline
from server.core.gitrepo import operation_in_progress
from server.notes.config import ConfigStore

if TYPE_CHECKING:
    from app.ui.screens.feedback_screen import FeedbackScreen
    from app.ui.screens.insights import TagsScreen
    from app.ui.screens.review_screen import ReviewScreen
    from server.vault import Vault

# journal stat + one rev-parse: cheap. How soon a new row shows: `uv run python -m bench --only
# dashboard` (a new event / commit on screen).
POLL_SECONDS = 0.15
# the longest the older history waits for the timeline's first paint (Timeline.Drawn)
FIRST_PAINT_WAIT = 2.0


class FeedChanged(Message):
    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FeedChanged)


class ReviewChanged(Message):
    """The branch or the review marks moved: the count of AI changes to review was read again."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ReviewChanged)


class Dashboard(App[None]):
    SHOW_CONTROLS = ShowControls()
    CSS_PATH = str(
        Path(__file__).with_name("dashboard.tcss")
    )  # absolute: subclasses live elsewhere
    TITLE = "vaultwatch"
    # under 160 cells the timeline and the diff stack (lazygit does the same), side by side above,
    # where the timeline (5/8) is as wide as a stacked one at 100 cells: widening never shows less
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (160, "-wide")]
    demo = False  # `vaultwatch --demo` (app.main) says so: its vault lasts one run
    BINDINGS = [
        Binding("question_mark", "help", "Keys", tooltip="the keys of this screen"),
        Binding("q", "quit", "Quit"),
        Binding(
            "R", "restart_server", "Restart server", show=False, tooltip="restart the vault server"
        ),
    ]

    def get_css_variables(self) -> dict[str, str]:
        variables = super().get_css_variables()
        ansi = self.current_theme.ansi
        return {
            **variables,
            **settings.diff_colours(variables, ansi),
            **settings.readable_colours(variables, ansi),
        }

    def get_line_filters(self) -> Sequence[LineFilter]:
        # every line drawn, whatever widget: a control character is shown, never sent (shown.py)
        return [*super().get_line_filters(), self.SHOW_CONTROLS]

    # set by the `vaultwatch` command, which owns the terminal (never in tests' apps)
    exits_on_hangup = False

    def __init__(
        self,
        root: Path,
        *,
        supervisor: ServerSupervisor | None = None,
        theme: str | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        super().__init__()
        self.root = root
        self.feed = Feed(root)
        self.configs = ConfigStore(root)
        self.supervisor = supervisor
        if supervisor is not None:
            supervisor.on_down = self._server_went_down
        self.poll_seconds = poll_seconds
        self._theme_choice = theme
        self.today: Any = None  # tag trends' "today" (tests pin it)
        # a supervisor handed over already running (tests) is up; else it starts after the first paint
        self.server_phase = "up" if supervisor is None or supervisor.url is not None else "starting"
        self.attached: tuple[str, ...] = ()  # the clients on the vault's server now
        self.server_failure = ""
        self.restart_why = ""
        self._newest_commit: str | None = None
        self._polling = threading.Lock()
        self._git_op: tuple[str, str] | None = None  # the git operation the header last showed
        self.review_watch = ReviewWatch(root)
        self._vault: Vault | None = None  # one for every screen: vault()
        self._vault_lock = threading.Lock()
        self._review_prompted = False  # the launch prompt shows once
        self._feed_shown = False  # the timeline has been filled once
        # ... and drawn: the older history and the review count are read only after that
        self._painted = False
        self._feed_frozen = False  # the whole history is in: its objects left the collector

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        return cast(MainScreen, self.default_screen)

    def visible_rows(self) -> list[Row]:
        """The rows the main screen's timeline shows (filters applied)."""
        return self.main.visible_rows()

    def on_mount(self) -> None:
        # What is alive now (the modules imported, the app's widgets: ~45,000 objects) lives as
        # long as the app: frozen, Python's full collections stop walking it. On the bench's
        # vault one came right after the first paint, ~100-150 ms of the UI thread at a load
        # of 8, as the older history was read. on_unmount unfreezes.
        gc.freeze()
        for th in settings.bundled_themes():
            self.register_theme(th)
        wanted = self._theme_choice or settings.load().get("theme") or "vaultwatch-dark"
        self.theme = wanted if wanted in self.available_themes else "vaultwatch-dark"
        self.screen_change_signal.subscribe(self, self._keys_of)
        if self.exits_on_hangup:
            self._exit_on_signals()
        if self.server_phase == "starting":
            self.start_server()
        self.poll()
        self.set_interval(self.poll_seconds, self.poll)

    def _exit_on_signals(self) -> None:
        """The terminal closed (SIGHUP) or a polite kill (SIGTERM): the app quits as by `q`,
        so what runs after it runs (the demo's copy removed, its server stopped). Python's
        default for both ends the process on the spot: each closed terminal left a demo vault
        and its server behind."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGHUP, signal.SIGTERM):
            loop.add_signal_handler(sig, self.exit)

    def _keys_of(self, screen: Screen[Any]) -> None:
        """Every dialog shows its own keys: one without a footer gets one (the main screen's,
        dimmed underneath, would list keys that do nothing there)."""
        if isinstance(screen, ModalScreen) and not screen.query(Footer):
            self.call_later(screen.mount, Footer(compact=True, show_command_palette=False))

    def watch_theme(self, theme: str) -> None:
        """Remembered per user: the next start uses the theme chosen last (palette or --theme).
        The open diff is drawn again in the new theme's colours."""
        with contextlib.suppress(OSError):
            settings.save(theme=theme)
        if self.is_mounted(self.main):
            self.main.show_detail()

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
        sup = self.supervisor if self.server_phase == "up" else None  # not while it starts
        died = sup.pid if sup is not None else None
        if sup is not None and sup._link is not None and not sup.alive:
            sup.restarting = True  # the header says so now, not once the restart has landed
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.call_from_thread(self.post_message, FeedChanged())
        restarted = sup.check() if sup is not None else False
        attached = tuple(sup.clients()) if sup is not None else ()  # one status round trip
        changed_clients, self.attached = attached != self.attached, attached
        changed = self.feed.poll()
        if restarted and sup is not None:
            # the server journals how it stopped (a signal it caught exits 0): that first
            self.restart_why = exit_words(sup.last_exit, stopped_reason(self.feed.events, died))
            with contextlib.suppress(RuntimeError):  # the app is closing
                said = f"the vault server stopped ({self.restart_why}) and was restarted"
                self.call_from_thread(self.notify, said, severity="warning", timeout=8)
        # the count once the timeline has its rows (it reads git in a thread: not before the
        # first screen is drawn), then whenever the branch or the marks move
        watch = self.review_watch
        if self._painted and not watch.busy and watch.stale():  # a few stat calls
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.call_from_thread(self.recount_review)
        op = operation_in_progress(self.root)  # a few stat calls
        changed_op, self._git_op = op != self._git_op, op
        if changed or restarted or changed_op or changed_clients:
            self.post_message(FeedChanged())
        if self._painted and not self.feed.complete:
            with contextlib.suppress(RuntimeError):  # the app is closing
                self.call_from_thread(self.backfill)

    def _server_went_down(self) -> None:
        """The supervisor's watcher saw the server's link close (its thread): the header says
        so now and the restart begins now, not at the next poll."""
        if not self.is_running:  # quit already: this thread must not wait on a stopped loop
            return
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.post_message(FeedChanged())
            self.call_from_thread(self.server_down)

    @work(thread=True, group="server-down")
    def server_down(self) -> None:
        """A poll that restarts the server: after the one under way, if any (it skips)."""
        with self._polling:
            self._poll()

    @work(thread=True, group="review-count")
    def recount_review(self) -> None:
        """The header's count of AI changes to review, read again off the UI thread."""
        if self.review_watch.recount():
            self.post_message(ReviewChanged())

    def on_review_changed(self, _: ReviewChanged) -> None:
        with contextlib.suppress(NoMatches):  # the app is closing
            self.main.show_header()
        if not self.screen_stack:
            return  # the app is closing: a count read in a thread arrived after its screens
        if (review := self._review_shown()) is not None:
            review.show_header()
            review.follow()
        elif type(self.screen).__name__ == "FeedbackScreen":  # its header counts feedback too
            cast("FeedbackScreen", self.screen).show_header()
        count = self.review_watch.count
        if not self._review_prompted and count is not None:
            self._review_prompted = True  # at launch only: later the header keeps count
            if count[0]:
                self.notify(
                    f"{count[0]:,} AI change{'' if count[0] == 1 else 's'} to "
                    f"{count[1]:,} note{'' if count[1] == 1 else 's'} since you last looked. "
                    "Press v to review them.",
                    title="To review",
                    # the header keeps the count: the notice need not cover another screen's
                    # corner for long once the owner has moved on (it hid Stats' clients)
                    timeout=8,
                )

    @work(thread=True, group="server")
    def start_server(self) -> None:
        """Start the server child after the first paint: the header says so meanwhile."""
        assert self.supervisor is not None
        try:
            self.supervisor.start()
        except RuntimeError as exc:
            self.server_phase = "failed"
            self.server_failure = str(exc).splitlines()[-1] if str(exc) else "no reason given"
        else:
            self.server_phase = "up"
            self._say_port_not_applied()
        self.post_message(FeedChanged())

    def _say_port_not_applied(self) -> None:
        """At once, when the server kept another port than the one asked for (its thread)."""
        assert self.supervisor is not None
        said = self.supervisor.port_not_applied()
        if said:
            with contextlib.suppress(RuntimeError):  # the app is closing
                # long enough to read and act on; the header keeps the gist after
                self.call_from_thread(
                    self.notify, said, title="Port kept", severity="warning", timeout=30
                )

    def action_restart_server(self) -> None:
        if self.supervisor is None or self.server_phase != "up":
            self.notify("The vault server is not running here yet.", severity="warning")
            return
        self.notify("Restarting the vault server…", timeout=3)
        self.restart_server()

    @work(thread=True, exclusive=True, group="server")
    def restart_server(self) -> None:
        """The owner's restart: a new resident; the clients attached reconnect to it."""
        assert self.supervisor is not None
        try:
            self.supervisor.restart()
        except RuntimeError as exc:
            self.server_phase, self.server_failure = "failed", str(exc).splitlines()[-1]
        else:
            self.restart_why = "restarted by you"
            self._say_port_not_applied()  # the asked port was taken: said, not left to guess
        self.post_message(FeedChanged())

    def on_timeline_drawn(self, _: Timeline.Drawn) -> None:
        self._first_painted()

    def _first_painted(self) -> None:
        """The first screenful is drawn: now the rest of the history and the header's count of
        changes to review. Read before it (from the first poll and the first fill), the older
        9,600 commits' parse, the older events' rows and the review count (~1 s of git and
        Python on the bench's vault) ran beside the first paint in threads, holding the GIL
        half the time and setting off full collections of ~150 ms at a load of 8."""
        if self._painted:
            return
        self._painted = True
        self.recount_review()
        if not self.feed.complete:
            self.backfill()

    @work(thread=True, group="backfill")
    def backfill(self) -> None:
        """The history older than the first screenful, read after that screen is drawn."""
        if self.feed.backfill():
            self.post_message(FeedChanged())

    def on_feed_changed(self, _: FeedChanged) -> None:
        with contextlib.suppress(NoMatches):  # the app is closing
            self.main.feed_changed()
            if not self._feed_shown:  # the timeline has its rows: drawn in this refresh
                self._feed_shown = True
                # what waits for the first paint starts then (Timeline.Drawn), or after this
                # long if the timeline is not drawn (another screen opened over it at once)
                self.set_timer(FIRST_PAINT_WAIT, self._first_painted)
        if self.feed.complete and not self._feed_frozen:
            # The whole history is in (10,000 commits: ~150,000 objects that live as long as
            # the app). Each of Python's full collections walked them all, 0.1-0.3 s on the UI
            # thread, and one came with nearly every screen opened after: the stats screen took
            # 0.75 s to fill, 0.45 s frozen. Frozen objects are never walked; what is made later
            # is collected as usual (what was garbage at this moment, ~500 objects, stays).
            self._feed_frozen = True
            gc.freeze()
        if not self.screen_stack:
            return  # the app is closing
        newest = next((r.key for r in self.feed.rows if r.commit is not None), None)
        if newest != self._newest_commit:  # notes changed: an open tags screen follows
            self._newest_commit = newest
            if (tags := self._tags_shown()) is not None:
                tags.reload()
        if (review := self._review_shown()) is not None:
            review.show_header()

    # The screens other than the main one load when first opened (first paint): one whose
    # module was never imported is not the screen shown, and is not imported to find that out.

    def _review_shown(self) -> ReviewScreen | None:
        mod = sys.modules.get("app.ui.screens.review_screen")
        shown = mod is not None and isinstance(self.screen, mod.ReviewScreen)
        return cast("ReviewScreen", self.screen) if shown else None

    def _tags_shown(self) -> TagsScreen | None:
        mod = sys.modules.get("app.ui.screens.insights")
        shown = mod is not None and isinstance(self.screen, mod.TagsScreen)
        return cast("TagsScreen", self.screen) if shown else None

    # The way between screens (app.ui.navigation.Desk): the screens other than the main one load
    # when first opened, not for the first paint.

    def open_review(self) -> None:
        from app.ui.screens.review_screen import ReviewScreen

        self.push_screen(ReviewScreen(self.root))

    def open_note(self, path: str) -> None:
        from app.ui.screens.note_screen import NoteScreen

        self.push_screen(NoteScreen(self.root, path))

    def open_feedback(self) -> None:
        from app.ui.screens.feedback_screen import FeedbackScreen

        self.push_screen(FeedbackScreen(self.root))

    def open_health(self) -> None:
        from app.ui.screens.health_screen import HealthScreen

        self.push_screen(HealthScreen(self.root, today=self.today))

    def open_reads(self) -> None:
        from app.ui.screens.reads import ReadsScreen

        self.push_screen(ReadsScreen(self.root, self.feed.events, self.today))

    def open_stats(self) -> None:
        from app.ui.screens.stats_screen import StatsScreen

        today = self.today  # pinned by tests, as for the tags screen
        now = datetime.combine(today, time(12)).astimezone() if today else None
        self.push_screen(StatsScreen(self.root, events=lambda: list(self.feed.events), now=now))

    def open_tags(self, picked: Callable[[tuple[str, list[str]] | None], None]) -> None:
        from app.ui.screens.insights import TagsScreen

        self.push_screen(TagsScreen(self.vault(), today=self.today), picked)

    def vault(self) -> Vault:
        """The one Vault every screen reads through, opened on first use (in the asking
        thread: opening reads the config and the note index, never on the first paint)."""
        with self._vault_lock:
            if self._vault is None:
                from server.vault import Vault  # not for the first paint: no screen needs it yet

                self._vault = Vault(self.root, client="vaultwatch-dashboard")
            return self._vault

    def on_unmount(self) -> None:
        with self._vault_lock:
            if self._vault is not None:
                self._vault.close()
        gc.unfreeze()  # the app's objects are collectable again (tests run many apps in one process)

    def on_vault_changed(self, _: VaultChanged) -> None:
        self.poll()

    def header_facts(self) -> HeaderFacts:
        sup = self.supervisor
        server = None
        if sup is not None and self.server_phase != "up":
            server = ServerState(self.server_phase, why=self.server_failure)
        elif sup is not None and sup.restarting:
            server = ServerState("restarting", sup.url, sup.restarts, self.restart_why)
        elif sup is not None:
            server = ServerState(
                "up" if sup.alive else "down",
                sup.url,
                sup.restarts,
                self.restart_why,
                self.attached,
                f"{sup.asked_by} {sup.asked_port}" if sup.port_not_applied() else "",
            )
        cfg = self.configs.current()  # a few stat calls: the file is parsed only when it changed
        events = self.feed.events
        return HeaderFacts(
            self.root,
            server,
            events,
            cfg.source,
            config_time(self.root, cfg.source, events) if cfg.source else "",
            [str(p) for p in self.configs.problems],
            repo_state(self._git_op),
            self.review_watch.count,
            _pair(self.review_watch.feedback),
        )

    # -- keys every screen shares -----------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpModal(key_help(self.screen)))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette offers what the screen's keys do (revert, tags, filters, ...), from the
        same bindings as the footer and the help, then Textual's own commands."""
        for keys, b, node in active_keys(screen, usable_now=True):
            if node is self or b.action in SIDEWAYS or b.system:
                continue
            title = b.tooltip or b.description
            yield SystemCommand(
                title[0].upper() + title[1:],
                f"key: {' / '.join(keys)}",
                partial(self.run_action, b.action, node),
            )
        yield from super().get_system_commands(screen)


def stopped_reason(events: list[dict[str, Any]], pid: int | None) -> str | None:
    """How server `pid` said it stopped in the journal ("signal", "exit"), if it did."""
    for e in reversed(events[-200:]):
        if e.get("kind") == "server_stopped" and e.get("pid") == pid:
            return str(e.get("reason") or "") or None
    return None


def exit_words(code: int | None, reason: str | None = None) -> str:
    """Why a server child ended, in words: a signal by name, else its exit code."""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    if reason == "signal":
        return "stopped by a signal"
    return f"exit {code}" if code is not None else "gone"


SIDEWAYS = {"scroll_left", "scroll_right", "page_left", "page_right"}


def active_keys(
    screen: Screen[Any], *, usable_now: bool = False
) -> list[tuple[list[str], Binding, DOMNode]]:
    """The keys that act on this screen now (its focused widget's, its own, the app's), from
    their bindings: one entry per meaning, with every key that has it. `usable_now` leaves out
    the greyed ones (revert with no AI commit selected)."""
    app = screen.app
    found: dict[str, tuple[list[str], Binding, DOMNode]] = {}
    for active in screen.active_bindings.values():
        b, node = active.binding, active.node
        what = b.tooltip or b.description
        if not what or (usable_now and not active.enabled):
            continue
        if b.action in SIDEWAYS and not getattr(node, "allow_horizontal_scroll", True):
            continue  # a pane that never scrolls sideways
        found.setdefault(what, ([], b, node))[0].append(app.get_key_display(b))
    return list(found.values())


def repo_state(op: tuple[str, str] | None) -> str | None:
    """What the header says while git is in the middle of something: AI writes are refused."""
    if op is None:
        return None
    return f"⚠ git mid-{op[0]}: AI writes refused · A aborts"  # whole even at 80 columns


def key_help(screen: Screen[Any]) -> list[tuple[str, str]]:
    """The help: each meaning with its keys, the longer tooltip where a binding has one."""
    return help_entries(active_keys(screen))


def _pair(fb: FeedbackCount | None) -> tuple[int, int] | None:
    return (fb.open, fb.answered) if fb is not None else None
