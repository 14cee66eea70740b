"""The header's fitting rule on its own: what gives way, in which order, and what comes back."""

from __future__ import annotations

from textual.content import Content

from app.ui.header_fit import Segment, fit


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
