"""What a secret looks like, and the one function that masks secrets in what we keep.

The write checks use `secrets_in` to refuse a write that adds a secret; the journal runs every
field of every event through `mask_secrets`, so neither a refused write's diff nor an error that
quotes an argument or a line of a note leaves a secret in `.git/vaultwatch/events.jsonl` (or
in the dashboard, which shows that file).
"""

from __future__ import annotations

import re

# A key named like a secret, then `:` or `=`: `password: …`, `aws_secret_access_key = …`,
# `"api key": "…"`, `SECRET_KEY='…'`. The name may be compound (`db_password`, `client.secret`):
# its start is not preceded by a name character (`\b` fails after `_`), and only key-like words
# may follow the secret word, so `secret_santa: …` is a name, not a key. Values that are
# placeholders (`<…>`, `[…]`, `xxx`, `***`, `...`) are not secrets.
_KEY_START = r"(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9]+[_.-]){0,4}"
_KEY_END = r"(?:[_.\s-]?(?:access|private|key|token|secret|value|hex|b64|base64)){0,3}"
_ASSIGN = r"[\"']?\s*[:=]\s*[\"']?(?![<\[{(]|x{3,}|\*{3,}|\.{3})"
# Names that mean a password: any value of 6+ characters is one.
_PASSWORD_KEYS = (
    r"password|passwd|pwd|passphrase|secret|api[_\s-]?key|apikey|access[_-]?token|auth[_-]?token"
)
# Names that are also ordinary words (`token: see below`): only a value that looks generated
# (12+ characters of a key's alphabet, letters and digits mixed) is one.
_TOKEN_KEYS = r"token|pw|credentials?|bearer"
_GENERATED = r"(?=[A-Za-z0-9+/=_.~-]{12,})(?=[^\s\"']*?\d)(?=[^\s\"']*?[A-Za-z])[A-Za-z0-9+/=_.~-]+"

SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private key",
        re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY"),
    ),
    ("PuTTY private key", re.compile(r"PuTTY-User-Key-File-\d+:")),
    ("age secret key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{40,}")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36,}")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("SendGrid key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("API key (sk-)", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}")),
    ("Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("Google OAuth token", re.compile(r"\bya29\.[A-Za-z0-9_-]{20,}")),
    (
        "Azure storage key",
        re.compile(r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*[A-Za-z0-9+/]{20,}=*"),
    ),
    (
        "JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    ("bearer token", re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*")),
    ("URL with credentials", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@[^\s/]+")),
    (
        "password or secret assignment",
        re.compile(rf"(?i){_KEY_START}(?:{_PASSWORD_KEYS}){_KEY_END}{_ASSIGN}[^\s\"'<>]{{6,}}"),
    ),
    (
        "token assignment",
        re.compile(rf"(?i){_KEY_START}(?:{_TOKEN_KEYS}){_KEY_END}{_ASSIGN}{_GENERATED}"),
    ),
]

# Characters that draw as nothing (zero-width space and joiners, soft hyphen, bidi marks, the
# BOM, tag characters): `AKIA\u200bIOSFODNN7EXAMPLE` is the key to anyone who copies it, so
# they are dropped before matching.
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\U000e0001\U000e0020-\U000e007f]"
)


def visible(text: str) -> str:
    """`text` without the characters that draw as nothing (what a reader copies)."""
    return _INVISIBLE.sub("", text)


# What each pattern cannot match without (case-folded for the case-blind ones): a substring
# test is a fast scan, so a 2 MB note is read by the few patterns that can match in it, not
# by all of them (each a regex pass over every word).
_NEEDS: dict[str, tuple[str, ...]] = {
    "private key": ("PRIVATE KEY",),
    "PuTTY private key": ("PuTTY-User-Key-File-",),
    "age secret key": ("AGE-SECRET-KEY-1",),
    "AWS access key": ("AKIA", "ASIA"),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "GitLab token": ("glpat-",),
    "Hugging Face token": ("hf_",),
    "npm token": ("npm_",),
    "Slack token": ("xox",),
    "SendGrid key": ("SG.",),
    "API key (sk-)": ("sk-",),
    "Stripe key": ("k_live_", "k_test_"),
    "Google API key": ("AIza",),
    "Google OAuth token": ("ya29.",),
    "JSON web token": ("eyJ",),
    "URL with credentials": ("://",),
}
_NEEDS_FOLDED: dict[str, tuple[str, ...]] = {
    "Azure storage key": ("accountkey", "sharedaccesskey"),
    "bearer token": ("bearer",),
    "password or secret assignment": ("pass", "pwd", "secret", "key", "token"),
    "token assignment": ("token", "pw", "credential", "bearer"),
}


def _candidates(text: str) -> list[tuple[str, re.Pattern[str]]]:
    folded = text.lower()
    out = []
    for name, rx in SECRET_PATTERNS:
        if name in _NEEDS_FOLDED:
            needs, where = _NEEDS_FOLDED[name], folded
        else:
            needs, where = _NEEDS.get(name, ("",)), text
        if any(n in where for n in needs):
            out.append((name, rx))
    return out


def secrets_in(text: str) -> list[tuple[str, str]]:
    """(pattern name, the matched text) for every secret-looking string, invisible characters
    inside it ignored."""
    text = visible(text)
    return [(name, m.group()) for name, rx in _candidates(text) for m in rx.finditer(text)]


# What masking removes for a private key: the whole block up to its END line, or to the end of
# the text when there is none (the detector above needs only the BEGIN line; the key is the body).
MASKED_SPAN = {
    "private key": re.compile(
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY"
        r"(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----|[\s\S]*)"
    ),
    # the key file's lines up to its MAC, or to the end of the text
    "PuTTY private key": re.compile(
        r"PuTTY-User-Key-File-\d+:(?:[\s\S]*?Private-MAC:[^\n]*|[\s\S]*)"
    ),
}


def mask_secrets(text: str) -> str:
    """`text` with every secret-looking span replaced by `[secret masked: <pattern>]`.

    The marker matches no pattern (the assignment pattern skips a value starting with `[`), so
    masking twice changes nothing. A secret spelled with invisible characters inside is masked
    in the text without them.
    """
    plain = visible(text)
    if plain != text and any(rx.search(plain) for _, rx in _candidates(plain)):
        text = plain
    for name, rx in _candidates(text):
        if rx.search(text):
            text = MASKED_SPAN.get(name, rx).sub(f"[secret masked: {name}]", text)
    return text
