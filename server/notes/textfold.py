"""How text becomes search tokens, the same way for notes and for queries.

Text is NFKC-folded (full-width ＣＲＤＴ and half-width CRDT are one word) and case-folded.
Runs of unspaced scripts (Chinese, Japanese, Korean) have no word boundaries, so each run is
indexed as overlapping character pairs plus its last character: 离线同步 -> 离线 线同 同步 步.
Any 2-character word is then one token (架构, 周报), a longer one is a phrase of pairs, and a
single character is a prefix. Everything else is left to SQLite's unicode61 tokenizer.
"""

from __future__ import annotations

import re
import unicodedata

CJK = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    "\U00020000-\U0002fa1f]+"
)
# unicode61's idea of a token character: letters and digits of any script (not '_').
WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _pairs(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join([run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]])


def index_text(text: str) -> str:
    """A note's text as the index stores it (already folded)."""
    folded = fold(text)
    if not CJK.search(folded):
        return folded
    return CJK.sub(lambda m: " " + _pairs(m.group()) + " ", folded)


def query_tokens(text: str) -> list[tuple[str, bool]]:
    """A query term or phrase -> [(token, is_prefix)], matching how index_text laid it out."""
    folded = fold(text)
    out: list[tuple[str, bool]] = []
    pos = 0
    runs = list(CJK.finditer(folded))
    for i, m in enumerate(runs):
        out += [(w, False) for w in WORD.findall(folded[pos : m.start()])]
        run = m.group()
        last = i == len(runs) - 1 and not WORD.search(folded[m.end() :])
        if len(run) == 1:
            # one character: any pair starting with it, or the run's own last character
            out.append((run, last))
        else:
            out += [(run[j : j + 2], False) for j in range(len(run) - 1)]
            if not last:
                out.append((run[-1], False))  # the index puts the last char before what follows
        pos = m.end()
    out += [(w, False) for w in WORD.findall(folded[pos:])]
    return out
