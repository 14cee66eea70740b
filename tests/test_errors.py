"""One base for every error (server.core.errors.VaultwatchError): code, message, hint."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import app
import server
from server.core.errors import VaultwatchError
from server.notes.filters import QueryError
from server.notes.paths import PathRefused
from server.services.writes import Conflict, Rejected

HEADLESS = (
    "app.ui",
    "app.ui.widgets.diffview",
    "app.ui.settings",
    "app.main",
)  # Textual: not needed here
# The stdio relay imports only the standard library (a new conversation must not pay for our
# package's imports: tests/test_resident.py holds it), so its one error cannot derive from ours.
STDLIB_ONLY = ("server.protocol.resident_socket",)


def _error_classes() -> list[type[BaseException]]:
    found = []
    for pkg in (server, app):
        for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if mod.name.startswith(HEADLESS) or mod.name in STDLIB_ONLY:
                continue
            module = importlib.import_module(mod.name)
            for name, obj in vars(module).items():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, BaseException)
                    and obj.__module__ == module.__name__
                    and not name.startswith("_")  # private control flow, never leaves its module
                ):
                    found.append(obj)
    return found


def test_every_error_class_derives_from_the_one_base() -> None:
    classes = _error_classes()
    assert len(classes) >= 15, classes  # the walk found the modules
    assert [c.__qualname__ for c in classes if not issubclass(c, VaultwatchError)] == []


@pytest.mark.parametrize(
    ("error", "code", "message", "hint"),
    [
        (PathRefused("outside", "stay inside"), "outside", "stay inside", ""),
        (QueryError("say it again"), "bad_arguments", "say it again", ""),
        (Rejected("unknown_tag", "tag 'x'", "use y", ["a.md"]), "unknown_tag", "tag 'x'", "use y"),
    ],
)
def test_code_message_and_hint_read_the_same_on_every_error(
    error: VaultwatchError, code: str, message: str, hint: str
) -> None:
    assert (error.code, error.message, error.hint, str(error)) == (code, message, hint, message)


def test_a_conflict_says_what_to_call_next() -> None:
    c = Conflict("a.md", "1111", "2222")
    assert c.code == "conflict" and str(c) == c.message
    assert c.message == (
        "conflict: a.md changed since you read it (your hash 1111, current hash 2222). Nothing "
        "was written. Call read_doc to see the current text, then make your change again on "
        "top of it."
    )
