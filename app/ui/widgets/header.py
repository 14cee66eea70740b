"""The one-line status header: the vault, the server's state, the clients seen, recall's
progress and the config in force. What must not be missed has one form and stays whole; the
rest shortens as the terminal narrows (`header_fit`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import events
from textual.content import Content
from textual.widgets import Static

from app.ui.widgets.cells import plural
from app.ui.widgets.header_fit import Segment, fit
from server.core.clients import client_name
from server.core.pids import pid_alive
from server.write.journal import event_time


@dataclass
class ServerState:
    """What the header says about the server child (None in tests that run without one)."""

    phase: (
        str  # "starting", "up", "restarting" (the child died: a new one starts), "down", "failed"
    )
    url: str | None = None
    restarts: int = 0
    why: str = ""  # the last restart's cause, or why it failed to start
    clients: tuple[str, ...] = ()  # attached to the vault's resident server now (name/version)
    # the port asked for and not applied ("--port 18962"): an older server kept its own
    not_applied: str = ""


@dataclass
class HeaderFacts:
    root: Path
    server: ServerState | None = None
    events: Sequence[dict[str, Any]] = ()
    config_source: str | None = None  # the config file in force, None: defaults
    config_time: str = ""
    config_errors: list[str] = field(default_factory=list)
    repo_state: str | None = None  # a git operation in progress the owner must finish or abort
    review: tuple[int, int] | None = None  # (AI commits, notes) not yet reviewed; None: not counted
    feedback: tuple[int, int] | None = None  # the owner's feedback (open, answered); None: not read


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


def _server(s: ServerState) -> list[Segment]:
    ok = "$text-success"
    if s.phase == "starting":
        return [Segment([Content.styled("◌ starting server…", "$text-warning")])]
    if s.phase == "failed":
        return [Segment([Content.styled(f"○ server failed: {s.why}", "bold $text-error")])]
    if s.phase == "down":
        segs = [Segment([Content.styled("○ server down", "bold $text-error")])]
    elif s.phase == "restarting":
        segs = [Segment([Content.styled("◌ server stopped: restarting…", "bold $text-warning")])]
    else:
        # the URL is what clients connect to: it stays, even after a restart
        url = f"● serving {s.url or ''}"
        segs = [Segment([Content.styled(url, ok), Content.styled("● serving", ok)], shed=4)]
        if s.not_applied:
            # the asked port's fate stays in sight after the notice goes; R applies it
            warn = "$text-warning"
            port = s.not_applied.rsplit(" ", 1)[-1]
            segs.append(
                Segment(
                    [
                        Content.styled(f" ({s.not_applied} not applied: press R)", warn),
                        Content.styled(f" (not {port}: R)", warn),
                    ],
                    shed=6,
                )
            )
        if s.clients:
            names = ", ".join(sorted({client_name(c) for c in s.clients}))
            n = f" · {len(s.clients)} attached"  # now; the clients segment: seen lately
            segs.append(
                Segment(
                    [Content.styled(f"{n}: {names}", ok), Content.styled(n, ok), Content("")],
                    shed=3,  # who is attached gives way before the URL
                )
            )
    if s.restarts:
        why = f", last: {s.why}" if s.why else ""
        segs.append(
            Segment(
                [
                    Content.styled(f" (restarted {s.restarts}×{why})", "$text-warning"),
                    Content.styled(f" (restarted {s.restarts}×)", "$text-warning"),
                ],
                shed=5,  # why it restarted gives way only after the URL
            )
        )
    return segs


def recall_progress(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest recall progress of a server still running. A stopped server's "ready" says
    nothing of the notes now: they may have changed since, and a server running now embeds
    them as it starts (the dashboard's) or after a client's first call."""
    stopped: set[Any] = set()
    for e in reversed(events):
        kind = e.get("kind")
        if kind == "server_stopped":
            stopped.add(e.get("pid"))
        elif kind == "semantic_progress" and e.get("pid") not in stopped:
            if running(e.get("pid")):
                return e
            stopped.add(e.get("pid"))  # killed: it wrote no stop line
    return None


def running(pid: Any) -> bool:
    """Whether a process of this pid runs on this machine (the vault's servers run here), by
    the rule `vaultwatch-server stop` waits on (an exited one not yet reaped does not); an
    event without a pid (an older journal) cannot be told dead, so it counts as running."""
    if not isinstance(pid, int) or pid <= 0:
        return True
    return pid_alive(pid)


def segments(f: HeaderFacts) -> list[Segment]:
    segs = [Segment([Content.styled(" vaultwatch ", "bold reverse")])]
    name = f.root.name or str(f.root)
    segs.append(Segment([Content(f" {short_path(f.root)} "), Content(f" {name} ")], shed=2))
    if f.server is not None:
        segs += _server(f.server)
    if f.repo_state:
        segs.append(Segment([Content.styled(f"  {f.repo_state}", "bold $text-error")]))
    if f.review is not None:
        segs.append(review_segment(*f.review))
    if f.feedback is not None and any(f.feedback):
        segs.append(feedback_segment(*f.feedback))
    recent = sorted(
        {
            client_name(e.get("client"))
            for e in f.events[-500:]
            if e.get("kind") in ("read", "commit", "conflict", "rejected", "noop")
            and e.get("client") not in (None, "human", "unknown")
        }
    )
    segs.append(
        Segment(
            [
                Content(f"  clients: {', '.join(recent) or 'none yet'}"),
                Content(f"  clients: {len(recent)}"),
                Content(""),
            ],
            shed=3,
        )
    )
    progress = recall_progress(f.events[-2000:])
    if progress is not None:
        done, total = int(progress.get("indexed", 0)), int(progress.get("total", 0))
        if done >= total:
            segs.append(
                Segment(
                    [
                        Content(f"  recall: ready ({total:,} notes)"),
                        Content("  recall: ready"),
                        Content(""),  # all is well: the first to go at 80 columns
                    ],
                    shed=1,
                )
            )
        else:
            segs.append(
                Segment([Content.styled(f"  recall: indexing {done:,}/{total:,}", "$text-warning")])
            )
    if f.config_errors:
        # in full when it fits; else the key that shows it (it gives way last)
        full = Content.styled(f"  config error: {f.config_errors[0]}", "bold $text-error")
        short = Content.styled("  config error (! shows it)", "bold $text-error")
        shortest = Content.styled("  config error (!)", "bold $text-error")
        segs.append(Segment([full, short, shortest], shed=9))
    elif f.config_source:
        segs.append(
            Segment(
                [
                    Content(f"  config {f.config_source} loaded {f.config_time}"),
                    Content(f"  config {f.config_source}"),
                    Content(""),
                ]
            )
        )
    else:
        segs.append(
            Segment(
                [
                    Content("  config: defaults (no vault.config.yaml)"),
                    Content("  config: defaults"),
                    Content(""),
                ]
            )
        )
    return segs


def review_segment(commits: int, notes: int) -> Segment:
    """How many AI changes wait for review, in how many notes, and the key that opens them:
    the notes give way before the key (a config error beside it took the `(v)` first), and
    the key only beside recall's indexing progress, which never shortens."""
    if not commits:
        return Segment([Content.styled("  nothing to review", "$text-muted"), Content("")], shed=1)
    style = "bold $text-warning"
    many = f"{commits:,} AI {'change' if commits == 1 else 'changes'}"
    return Segment(
        [
            Content.styled(f"  {many} to review in {plural(notes, 'note')} (v)", style),
            Content.styled(f"  {commits:,} to review in {plural(notes, 'note')} (v)", style),
            Content.styled(f"  {commits:,} to review (v)", style),  # the key before the notes
            Content.styled(f"  {commits:,} to review", style),  # beside recall's progress
        ],
        shed=6,
    )


def feedback_segment(open_: int, answered: int) -> Segment:
    """The owner's feedback to the AI: open (waiting for the AI) and answered (waiting for the
    owner to close or reopen). The key shows while there is room; the count stays."""
    style = "bold $text-accent" if answered else "$text-accent"
    both = f"{open_:,} open, {answered:,} answered"
    return Segment(
        [
            Content.styled(f"  feedback: {both} (F)", style),
            Content.styled(f"  feedback {open_:,}/{answered:,} (F)", style),
            Content.styled(f"  feedback {open_:,}/{answered:,}", style),
            Content.styled(f"  fb {open_:,}/{answered:,}", style),
        ],
        shed=5,
    )


def config_time(root: Path, name: str, events: Sequence[dict[str, Any]]) -> str:
    """When the server took the config in force: its last (re)load in the journal, else the
    file's own time."""
    for e in reversed(events):
        if e.get("kind") == "server_started" or (
            e.get("kind") == "config_reloaded" and e.get("ok")
        ):
            ts = event_time(e)
            if ts is None:
                break
            return ts.astimezone().strftime("%H:%M:%S")
    mtime = (root / name).stat().st_mtime
    return datetime.fromtimestamp(mtime).astimezone().strftime("%m-%d %H:%M")


class StatusHeader(Static):
    """Shows `HeaderFacts`, fitted to its own width whenever either changes."""

    DEFAULT_CSS = "StatusHeader { height: 1; background: $panel; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.facts: HeaderFacts | None = None

    def show(self, facts: HeaderFacts) -> None:
        self.facts = facts
        self._fit(self.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        if self.facts is not None:
            # before the first layout the width is 0: everything, in full
            self.update(fit(segments(self.facts), width or 1000))
