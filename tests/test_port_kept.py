"""`vaultwatch --port B` while the vault's resident server already serves HTTP on port A from
before (a client still on it): the dashboard keeps A, and says so at once, why, and how to apply
B (issue 33: it showed A in the header and said nothing)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from app.services.supervisor import ServerSupervisor
from app.ui.dashboard import Dashboard

from .conftest import until

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def header(app: Dashboard) -> str:
    return str(app.query_one("#header", Static).render())


def notices(app: Dashboard) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.slow
async def test_a_port_asked_while_the_server_runs_on_another_is_explained(
    make_vault: Any, settings_dir: Path
) -> None:
    root = make_vault({"a.md": "# A\n"})
    before = ServerSupervisor(root)  # the previous run's dashboard, still attached: a client
    a = int(before.start().rsplit(":", 1)[1].split("/")[0])
    b = free_port()
    assert a != b
    sup = ServerSupervisor(root, port=b)
    app = Dashboard(root, supervisor=sup, poll_seconds=0.1)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: sup.phase == "up", timeout=60)
            # the running server is kept: it is not stopped under its clients
            assert sup.port == a and before.alive
            await until(
                pilot,
                lambda: f"--port {b} was not applied" in " ".join(notices(app)),
                "the notice that the asked port was not applied",
                describe=lambda: repr(notices(app)),
            )
            said = " ".join(notices(app))
            assert f"already running on port {a}" in said  # what was kept, and why
            assert f"Press R to restart it on port {b}" in said  # how to apply it
            assert "vaultwatch-server stop" in said
            # the header says it too, at 80 columns, for as long as it holds
            await until(
                pilot,
                lambda: f"--port {b} not applied: press R" in header(app),
                "the header's word on the asked port",
                describe=lambda: header(app),
            )
            # the owner asks: R restarts the server on the asked port, and the word goes
            await pilot.press("R")
            await until(
                pilot,
                lambda: f"127.0.0.1:{b}" in (sup.url or "") and "restarted" in header(app),
                "the server restarted on the asked port",
                describe=lambda: f"port {sup.port}, header {header(app)!r}",
                timeout=60,
            )
            assert sup.alive and "not applied" not in header(app)
            with socket.create_connection(("127.0.0.1", b), timeout=10):
                pass  # served there now
    finally:
        sup.stop()
        before.stop()


@pytest.mark.slow
async def test_restarting_onto_an_asked_port_that_is_taken_comes_back_where_it_was(
    make_vault: Any, settings_dir: Path
) -> None:
    root = make_vault({"a.md": "# A\n"})
    before = ServerSupervisor(root)
    a = int(before.start().rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as busy:  # another program holds the asked port
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        b = int(busy.getsockname()[1])
        sup = ServerSupervisor(root, port=b)
        app = Dashboard(root, supervisor=sup, poll_seconds=0.1)
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await until(pilot, lambda: sup.phase == "up", timeout=60)
                await until(pilot, lambda: f"--port {b} not applied" in header(app))
                app.clear_notifications()
                await pilot.press("R")
                await until(
                    pilot,
                    lambda: "cannot serve HTTP" in " ".join(notices(app)),
                    "the notice that the asked port could not be taken",
                    describe=lambda: repr(notices(app)),
                    timeout=60,
                )
                said = " ".join(notices(app))
                assert f"restarted on port {a}, where its clients were" in said
                # serving again where its clients were, and the header still says so
                assert sup.port == a and sup.alive and app.server_phase == "up"
                with socket.create_connection(("127.0.0.1", a), timeout=10):
                    pass
                await until(pilot, lambda: f"--port {b} not applied" in header(app))
        finally:
            sup.stop()
            before.stop()
