"""A vault with every kind of health finding planted (broken links and embeds, a private note
that must never show, an orphan, tasks without their status, a big note), the day they are all
old, and the health screen opened on it under Pilot. A helper module, not a test module: test
modules import from here, never from each other."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from textual.widgets import DataTable

from app.ui.screens.health_screen import HealthScreen
from server.vault import Vault

from .conftest import until, workers_done

LATER = date.today() + timedelta(days=40)  # every committed note is 40 days old then

CONFIG = """\
private: ["private/**"]
types:
  task:
    folder: tasks
    required: [status]
limits: {result_chars: 2000}
health:
  orphan_days: 30
  stale_days: 60
  types:
    task: {stale_days: 14, open: [open, todo]}
"""

FILES: dict[str, str | bytes] = {
    "vault.config.yaml": CONFIG,
    "notes/a.md": (
        "# A\n\nSee [[b]] and [[b#Real heading]] and [[b#^blk1]].\n"
        "Broken: [[nothere]] and ![[missing-image.png]] and [doc](missing%20doc.md).\n"
        "Heading gone: [[b#No such heading]]; block gone: [[b#^nope]].\n\n"
        "| col | link |\n| --- | --- |\n| x | [[ghost\\|alias]] |\n\n"
        "Private: [[salary]] and [[private/ghost]] and [pay](../private/salary.md).\n"
        "In code: `[[not-a-link]]`.\n"
        "Again: [[nothere]].\n"
    ),
    "notes/b.md": "# B\n\n## Real heading\n\nA paragraph ^blk1\n\nBack to [[a]].\n",
    "notes/lonely.md": "# Lonely\n\nNobody links here and it links nowhere.\n",
    "private/salary.md": "# Salary\n\nSee [[lonely]] and [[a]] and [[nowhere-private]].\n",
    "tasks/t1.md": "---\nstatus: open\n---\n# Open task\n\nLinked from [[t2]].\n",
    "tasks/t2.md": "---\nstatus: done\n---\n# Done task\n\nSee [[t1]].\n",
    "tasks/t3.md": "---\ntitle: no status\n---\n# Missing status\n\nSee [[t1]].\n",
    "big.md": "# Big\n\n" + "a line of a long note, [[a]]\n" * 120,
}


def embed(vault: Vault, wait: float = 120) -> None:
    """Recall's index of the whole vault, built now (as the dashboard's server does at start)."""
    vault.start_semantic()
    sem = vault.semantic()
    assert sem is not None and sem.thread is not None
    sem.thread.join(wait)
    assert sem.ready, sem.error


async def open_health(pilot: Any) -> HealthScreen:
    app = pilot.app
    await pilot.press("H")
    await until(pilot, lambda: isinstance(app.screen, HealthScreen))
    screen = app.screen
    assert isinstance(screen, HealthScreen)
    await until(pilot, lambda: screen.report is not None, "the health check")
    await workers_done(app)  # the check's worker has handed over its last report
    return screen


async def select(pilot: Any, screen: HealthScreen, finding_id: str) -> None:
    t = screen.query_one("#findings", DataTable)
    keys = [str(k.value) for k in t.rows]
    t.move_cursor(row=keys.index(finding_id))
    await pilot.pause()  # the row's highlight handled: the detail and the footer follow it
    assert screen.selected() is not None and screen.selected().id == finding_id  # type: ignore[union-attr]
