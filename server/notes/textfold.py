"""How text becomes search tokens, the same way for notes and for queries.

Text is NFKC-folded (full-width ＣＲＤＴ and half-width CRDT are one word) and case-folded.
Runs of unspaced scripts (Chinese, Japanese, Korean) have no word boundaries, so each run is
indexed as overlapping character pairs plus its last character: 离线同步 -> 离线 线同 同步 步.
Any 2-character word is then one token (架构, 周报), a longer one is a phrase of pairs, and a
single character is a prefix. Everything else is left to SQLite's unicode61 tokenizer.

A Chinese user types a query without spaces (停用插件), and the note may say the same words
apart (停用某个插件): an unquoted query word is looked for by `apart_groups`, a phrase by
`query_tokens`.
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


_LETTERS = re.compile(r"[^\W\d_]")


def mostly_cjk(text: str) -> bool:
    """Is this text written in a CJK script (Chinese, Japanese, Korean) rather than a Latin one?
    A Chinese note full of English terms is still Chinese: a CJK character carries about as much
    as four letters, so the CJK characters must be at least 30% of the text counted that way."""
    cjk = sum(len(m) for m in CJK.findall(text))
    if not cjk:
        return False
    letters = len(_LETTERS.findall(text)) - cjk
    return cjk >= 0.3 * (cjk + max(0, letters) / 4)


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


Group = list[tuple[str, bool]]  # one of these tokens (token, is_prefix) must be in the note


def apart_groups(text: str) -> list[Group]:
    """An unquoted query word -> the groups of tokens a note must hold, every group (AND), one
    token of each (OR), wherever they stand: what search engines do for unspaced scripts.

    A run of n >= 3 characters has pairs p0 .. p(n-2); there is no dictionary to say where its
    words end, so the note must hold pairs that cover every character of the run: its first and
    last pair, and for each inner character one of the two pairs it is in. 停用插件 -> 停用,
    插件 (用插, the pair across the two words, is not needed); 分布式系统 -> 分布, 系统 and
    布式 or 式系. A 1- or 2-character run is one token; other words are their own groups, a
    word of 3 letters or more also finding longer forms, as a plain query word does."""
    folded = fold(text)
    out: list[Group] = []
    pos = 0
    for m in CJK.finditer(folded):
        out += [[(w, len(w) >= 3)] for w in WORD.findall(folded[pos : m.start()])]
        run = m.group()
        if len(run) <= 2:
            out.append([(run, len(run) == 1)])  # one character: any pair starting with it
        else:
            pairs = [run[i : i + 2] for i in range(len(run) - 1)]
            out.append([(pairs[0], False)])
            # character i is in pairs i-1 and i; the first and last pairs cover 1 and n-2
            out += [[(pairs[i - 1], False), (pairs[i], False)] for i in range(2, len(run) - 2)]
            out.append([(pairs[-1], False)])
        pos = m.end()
    out += [[(w, len(w) >= 3)] for w in WORD.findall(folded[pos:])]
    return out
