"""One base for every error of ours, server and dashboard: a `code` that names the rule (the
journal and the tests match on it), a `message` that says what happened and what to do, in
words for whoever reads it (the model, or the owner), and a `hint` when the next step is said
apart from the message. The exception's text is its message."""

from __future__ import annotations


class VaultwatchError(Exception):
    code = "error"  # the class's code; an instance raised with its own code carries that
    hint = ""

    def __init__(self, code_or_message: str, message: str | None = None, hint: str = "") -> None:
        """`Error(code, message[, hint])`; a class whose code is always its own takes just
        `Error(message)`."""
        if message is None:
            message = code_or_message
        else:
            self.code = code_or_message
        super().__init__(message)
        self.message = message
        if hint:
            self.hint = hint
