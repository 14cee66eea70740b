"""What a secret looks like, and the one function that masks secrets in what we keep.

The write checks use `secrets_in` to refuse a write that adds a secret; the journal runs every
field of every event through `mask_secrets`, so neither a refused write's diff nor an error that
quotes an argument or a line of a note leaves a secret in `.git/vaultwatch/events.jsonl` (or
in the dashboard, which shows that file).
"""

from __future__ import annotations

import re

SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private key",
        re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY"),
    ),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("API key (sk-)", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}")),
    ("Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    ("URL with credentials", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@[^\s/]+")),
    (
        "password or secret assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token)"
            r"\s*[:=]\s*[\"']?(?![<\[{(]|x{3,}|\*{3,}|\.{3})[^\s\"'<>]{6,}"
        ),
    ),
]


def secrets_in(text: str) -> list[tuple[str, str]]:
    """(pattern name, the matched text) for every secret-looking string."""
    return [(name, m.group()) for name, rx in SECRET_PATTERNS for m in rx.finditer(text)]


# What masking removes for a private key: the whole block up to its END line, or to the end of
# the text when there is none (the detector above needs only the BEGIN line; the key is the body).
MASKED_SPAN = {
    "private key": re.compile(
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY"
        r"(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----|[\s\S]*)"
    ),
}


def mask_secrets(text: str) -> str:
    """`text` with every secret-looking span replaced by `[secret masked: <pattern>]`.

    The marker matches no pattern (the assignment pattern skips a value starting with `[`), so
    masking twice changes nothing.
    """
    for name, rx in SECRET_PATTERNS:
        if rx.search(text):
            text = MASKED_SPAN.get(name, rx).sub(f"[secret masked: {name}]", text)
    return text
