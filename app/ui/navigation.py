"""What a screen may ask of the dashboard: the vault it shows, the shared feed and watchers,
and the way to the other screens. The dashboard (the App) implements it and is the one place
that knows every screen, so no screen imports another (an import-linter contract holds it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from textual.screen import Screen

    from app.services.feed import Feed
    from app.services.review_watch import ReviewWatch
    from app.services.supervisor import ServerSupervisor
    from app.ui.widgets.header import HeaderFacts
    from server.notes.config import ConfigStore
    from server.vault import Vault


class Desk(Protocol):
    root: Path
    feed: Feed
    configs: ConfigStore
    review_watch: ReviewWatch
    supervisor: ServerSupervisor | None
    today: Any  # tag trends' and stats' "today" (tests pin it)
    demo: bool  # a --demo run: a new vault on every launch, removed on quit unless --keep

    def vault(self) -> Vault:
        """The dashboard's one Vault on `root`, opened when first asked (any thread)."""
        ...

    def poll(self) -> None: ...

    def header_facts(self) -> HeaderFacts: ...

    def open_review(self) -> None: ...

    def open_note(self, path: str) -> None: ...

    def open_feedback(self) -> None: ...

    def open_health(self) -> None: ...

    def open_reads(self) -> None: ...

    def open_stats(self) -> None: ...

    def open_tags(self, picked: Callable[[tuple[str, list[str]] | None], None]) -> None: ...


def desk(screen: Screen[Any]) -> Desk:
    """The dashboard a screen is shown in, as the screen may use it."""
    return cast(Desk, screen.app)
