"""Text made safe to show on the owner's terminal, and the control characters the AI may not
write: one home for both (adversarial pass 3, N1).

A note, a heading or a commit subject the AI wrote reaches the owner's terminal through
`vaultwatch review`, the context preview, the dashboard and `git log`. A terminal runs the
escape sequences in what it prints: ESC[2K ESC[1G erases the line just shown (an AI line hidden
from review), OSC 52 sets the clipboard, ESC[2J clears the screen, a bare CR moves back to the
start of the line and overwrites it. So the server refuses such characters in what the AI
writes, and every printer shows the ones already there (the owner's, or older) as visible
symbols instead of sending them.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

# What a note legitimately holds: tab, line feed, and CR (CRLF notes from Windows).
ALLOWED_CONTROLS = frozenset("\t\n\r")

# Not C0/C1 but still a way to make text lie about itself when shown: line and paragraph
# separators (str.splitlines breaks at them, some terminals and Textual too) and the bidi
# overrides and isolates that show text backwards (Trojan Source).
_SHOWN_AS_CODE = frozenset("\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_control(ch: str) -> bool:
    """C0, DEL or C1 (Unicode category Cc)."""
    return unicodedata.category(ch) == "Cc"


def added_controls(old: str, new: str) -> list[str]:
    """The control characters (other than tab, LF, CR) that `new` has more of than `old`, as
    `U+001B` names, sorted: what a write would add. One the owner already had stays theirs."""
    have = Counter(ch for ch in old if is_control(ch) and ch not in ALLOWED_CONTROLS)
    want = Counter(ch for ch in new if is_control(ch) and ch not in ALLOWED_CONTROLS)
    return sorted(f"U+{ord(ch):04X}" for ch in want if want[ch] > have[ch])


def controls_message(where: str, codes: list[str]) -> str:
    """The model-facing refusal: what was found (by code point, never the bytes) and why."""
    shown = ", ".join(codes[:8]) + (" …" if len(codes) > 8 else "")
    return (
        f"{where} contains control characters ({shown}); a terminal runs them as commands "
        "(ESC starts escape sequences that can hide lines or set the clipboard), so they never "
        "go into the vault or its history"
    )


CONTROLS_HINT = "write plain text: leave the control characters out (tab and line breaks are fine)"


def _shown(ch: str) -> str:
    o = ord(ch)
    if o < 0x20:
        return chr(0x2400 + o)  # ␛ for ESC, ␍ for CR, ␇ for BEL ...
    if o == 0x7F:
        return "\u2421"  # ␡
    return f"\\u{o:04x}"  # C1, separators, bidi: as the JSON escape (valid inside JSON too)


def visible(text: str, keep: str = "\t\n") -> str:
    """`text` with every control character (and the separators and bidi overrides above) shown
    as a visible symbol, never sent: ESC is ␛, CR ␍ (kept before a LF when LF is kept: a CRLF
    line), C1 and the rest as `\\u009b`. Characters in `keep` stay as they are. The one function
    every printer of text the AI could have written goes through."""
    if text.isprintable() and not any(ch in _SHOWN_AS_CODE for ch in text):
        return text
    out: list[str] = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        crlf = ch == "\r" and "\n" in keep and i < last and text[i + 1] == "\n"
        shown = ch not in keep and not crlf and (is_control(ch) or ch in _SHOWN_AS_CODE)
        out.append(_shown(ch) if shown else ch)
    return "".join(out)


def visible_char(ch: str) -> str:
    """One character for one: a control shown as one symbol (C1 and the rest as U+FFFD), for
    places that must keep the text's length (the dashboard's rendered lines)."""
    if is_control(ch):
        o = ord(ch)
        return chr(0x2400 + o) if o < 0x20 else ("\u2421" if o == 0x7F else "\ufffd")
    return "\ufffd" if ch in _SHOWN_AS_CODE else ch


def visible_cells(text: str) -> str:
    """`text` with each control character replaced by one visible symbol (tab and LF too)."""
    if text.isprintable() and not any(ch in _SHOWN_AS_CODE for ch in text):
        return text
    return "".join(visible_char(ch) for ch in text)
