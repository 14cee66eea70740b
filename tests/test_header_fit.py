"""The header's fitting rule on its own: what gives way, in which order, and what comes back."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content

from app.ui.widgets.header import HeaderFacts, ServerState
from app.ui.widgets.header import segments as header_segments
from app.ui.widgets.header_fit import Segment, fit


def segments() -> list[Segment]:
    return [
        Segment([Content("[brand]")]),
        Segment([Content(" serving http://127.0.0.1:9/mcp"), Content(" serving")]),
        Segment([Content(" clients: a, b"), Content(" clients: 2"), Content("")], shed=3),
        Segment([Content(" recall: ready (9 notes)"), Content(" recall: ready")], shed=1),
    ]


def test_everything_whole_when_it_fits() -> None:
    full = "[brand] serving http://127.0.0.1:9/mcp clients: a, b recall: ready (9 notes)"
    assert str(fit(segments(), 200)) == full


def test_lowest_shed_gives_way_first_then_the_next() -> None:
    assert str(fit(segments(), 60)) == "[brand] serving clients: a, b recall: ready (9 notes)"
    assert str(fit(segments(), 48)) == "[brand] serving clients: a, b recall: ready"
    assert str(fit(segments(), 38)) == "[brand] serving recall: ready"


def test_a_segment_gives_back_what_a_later_one_freed() -> None:
    # clients shrinks to a count, which leaves room for the recall count shed earlier
    segs = [
        Segment([Content("[brand]")]),
        Segment([Content(" recall: ready (9 notes)"), Content(" recall: ready")], shed=1),
        Segment([Content(" clients: a-very-long-client"), Content(" clients: 1")], shed=2),
    ]
    assert str(fit(segs, 43)) == "[brand] recall: ready (9 notes) clients: 1"


def test_what_has_one_form_is_never_cut_by_the_fitting() -> None:
    segs = [Segment([Content("x" * 50)]), Segment([Content(" tail"), Content("")])]
    assert str(fit(segs, 20)) == "x" * 50  # the terminal crops; nothing required is dropped


def header(facts: HeaderFacts, width: int) -> str:
    return str(fit(header_segments(facts), width))


def test_the_header_keeps_the_url_and_says_why_the_server_restarted() -> None:
    url = "http://127.0.0.1:45679/mcp"
    facts = HeaderFacts(Path("/srv/vaults/notes"), ServerState("up", url, 2, "killed by SIGKILL"))
    wide = header(facts, 120)
    assert f"● serving {url} (restarted 2×, last: killed by SIGKILL)" in wide
    assert f"● serving {url} (restarted 2×, last: killed by SIGKILL)" in header(facts, 100)


def test_the_header_says_the_server_is_starting_or_why_it_failed() -> None:
    root = Path("/srv/vaults/notes")
    assert "starting server…" in header(HeaderFacts(root, ServerState("starting")), 80)
    failed = HeaderFacts(root, ServerState("failed", why="address in use"))
    assert "server failed: address in use" in header(failed, 80)


def test_a_config_error_shows_whole_when_it_fits_else_the_key_that_shows_it() -> None:
    problem = "vault.config.yaml:2: tags.unknown must be one of reject, warn, allow (got 'rejekt')"
    server = ServerState("up", "http://127.0.0.1:1/mcp")
    facts = HeaderFacts(Path("/srv/vaults/notes"), server, config_errors=[problem])
    assert problem in header(facts, 200)
    narrow = header(facts, 80)
    assert "config error (! shows it)" in narrow and len(narrow) <= 80


def test_the_header_names_the_clients_on_the_vaults_server() -> None:
    """Who is attached to the resident now, by name (not version); the names give way first,
    then the count, and the URL stays."""
    url = "http://127.0.0.1:45679/mcp"
    clients = ("claude-code/2.1.0", "claude-ai/0.1", "claude-code/2.1.0")
    facts = HeaderFacts(Path("/srv/vaults/notes"), ServerState("up", url, clients=clients))
    assert f"● serving {url} · 3 attached: claude-ai, claude-code" in header(facts, 200)
    narrow = header(facts, 80)
    assert url in narrow and "claude-ai" not in narrow
    one = HeaderFacts(Path("/srv/vaults/notes"), ServerState("up", url, clients=clients[:1]))
    assert "· 1 attached: claude-code" in header(one, 200)
    assert "attached" not in header(HeaderFacts(Path("/n"), ServerState("up", url)), 200)
