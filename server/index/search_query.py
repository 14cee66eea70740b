"""The search_text query language and the snippets that show why a note matched.

CRDT 离线同步            both terms (AND); 离线同步 also where the note says 离线 and 同步 apart
"offline sync"          a phrase
"离线同步"               only where the note says it in one piece
-draft                  exclude notes with this term (exactly as written)
tag:crdt type:session path:study/   filters, like the tool's own parameters
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass, field
from typing import NoReturn

from server.core.errors import VaultwatchError
from server.notes.textfold import CJK, WORD, Group, apart_groups, fold, query_tokens

MARK_OPEN, MARK_CLOSE = "«", "»"
SNIPPET_CHARS = 160
# Each term is a prefix search plus a pass for its snippets, all while the search index is held:
# thousands of terms took tens of seconds (tests/test_hangs.py). A real question needs a handful.
MAX_TERMS = 64
MAX_QUERY_CHARS = 1_000
# A CJK run longer than this is a passage pasted in, not words typed: it is searched in one
# piece (its words apart, each pair a group, cost 0.3 s at 1,000 characters; in one piece, 2 ms)
MAX_APART_RUN = 32
# A relaxed query (relaxed_query) reads one match per CJK group: beyond this many groups in
# all, the query is a passage, not words typed, and is not relaxed
MAX_RELAXED_GROUPS = 32


class SearchError(VaultwatchError, ValueError):
    """A query the model can fix; the message says how."""


@dataclass
class Term:
    text: str
    phrase: bool
    negated: bool
    tokens: list[tuple[str, bool]]  # the term in one piece (a phrase), as the index lays it out
    # an unquoted word with CJK in it (停用插件): the groups a note must hold, anywhere in it
    # (textfold.apart_groups); None when the term is only ever matched in one piece
    apart: list[Group] | None = None

    @property
    def groups(self) -> list[Group]:
        """What a note must hold for this term: every group, one token of each."""
        return self.apart if self.apart is not None else [self.tokens]

    @property
    def words(self) -> list[str]:
        """Every token the term looks for."""
        return [tok for g in self.groups for tok, _ in g]


@dataclass
class ParsedQuery:
    terms: list[Term] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    # the text after a quote the query never closed, searched as a phrase closed at the end
    unclosed: str | None = None

    @property
    def positive(self) -> list[Term]:
        return [t for t in self.terms if not t.negated]


def _split(query: str) -> list[str]:
    lexer = shlex.shlex(query, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    lexer.quotes = '"'
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: treat the quote as a plain character
        return query.replace('"', " ").split()


def _too_long(size: str) -> NoReturn:
    raise SearchError(
        f"the query has {size}; a query takes at most {MAX_TERMS} terms (each word, "
        f'"phrase", -exclusion and filter counts) in at most {MAX_QUERY_CHARS:,} characters. '
        "Terms are ANDed: give the few most distinctive ones, and narrow with type, folder or tags."
    )


def parse(query: str) -> ParsedQuery:
    if not query or not query.strip():
        raise SearchError("query is empty: give words to look for, e.g. 'CRDT 离线同步'")
    if len(query) > MAX_QUERY_CHARS:  # checked first: splitting a huge query is slow itself
        words = len(query.split())
        _too_long(f"{len(query):,} characters ({words:,} word{'s' if words != 1 else ''})")
    pq = ParsedQuery()
    text = query.replace("\u201c", '"').replace("\u201d", '"')
    if text.count('"') % 2:
        # '"offline sync' searched the two words apart, found nothing and said nothing: the
        # phrase is closed at the end, and the result says so (see search_text's hint)
        pq.unclosed = text[text.rfind('"') + 1 :].strip() or None
        text += '"'
    raw_parts = _split(text)
    if len(raw_parts) > MAX_TERMS:
        _too_long(f"{len(raw_parts):,} terms")
    # shlex drops the quotes; find which parts were quoted from the text
    quoted = {m.group(1) for m in re.finditer(r'"([^"]+)"', text)}
    for part in raw_parts:
        negated = part.startswith("-") and len(part) > 1
        body = part[1:] if negated else part
        key, sep, value = body.partition(":")
        if sep and key in ("tag", "type", "path") and value:
            if negated:
                raise SearchError(f"'-{key}:' is not supported; use tags_none or leave it out")
            {"tag": pq.tags, "type": pq.types, "path": pq.paths}[key].append(value)
            continue
        tokens = query_tokens(body)
        if not tokens:
            continue  # punctuation only
        is_phrase = body in quoted or " " in body
        if not is_phrase and len(tokens) == 1 and not CJK.fullmatch(fold(body)):
            w, pre = tokens[0]
            # a plain word also finds longer forms: cache -> caches, cached, caching
            tokens = [(w, pre or len(w) >= 3)]
        apart = None
        runs = [len(m.group()) for m in CJK.finditer(fold(body))]
        if not is_phrase and not negated and runs and max(runs) <= MAX_APART_RUN:
            groups = apart_groups(body)
            apart = groups if len(groups) > 1 else None  # one group: the phrase itself
        pq.terms.append(
            Term(text=body, phrase=is_phrase, negated=negated, tokens=tokens, apart=apart)
        )
    if not pq.positive and not (pq.tags or pq.types or pq.paths):
        if pq.terms:
            raise SearchError("the query only excludes; add at least one word to look for")
        raise SearchError(
            "the query has no words to look for, only punctuation (which is not indexed); "
            "give words, e.g. 'CRDT 离线同步'"
        )
    return pq


def _fts_phrase(tokens: list[tuple[str, bool]]) -> str:
    parts = []
    for tok, prefix in tokens:
        parts.append('"' + tok.replace('"', '""') + '"' + ("*" if prefix else ""))
    return parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")"


def _fts_term(term: Term, whole: bool) -> str:
    """A term as FTS5 reads it: in one piece (`whole`, or a phrase), or its groups anywhere."""
    if whole or term.apart is None:
        return _fts_phrase(term.tokens)
    parts = []
    for group in term.apart:
        alts = [_fts_phrase([tok]) for tok in group]
        parts.append(alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")")
    return "(" + " AND ".join(parts) + ")"


def fts_expression(pq: ParsedQuery, whole: bool = False) -> str | None:
    """The FTS5 MATCH expression, or None when the query is only filters. With `whole`, every
    term in one piece: the notes that say 停用插件 as typed (phrase_expression)."""
    pos = [_fts_term(t, whole) for t in pq.positive]
    if not pos:
        return None
    expr = " AND ".join(pos)
    for t in pq.terms:
        if t.negated:
            expr = f"({expr}) NOT {_fts_phrase(t.tokens)}"
    return expr


def phrase_expression(pq: ParsedQuery) -> str | None:
    """The notes that hold every unquoted CJK word in one piece, as typed: they rank above the
    notes that hold its words apart. None when no term can match apart (nothing to rank)."""
    if not any(t.apart for t in pq.positive):
        return None
    return fts_expression(pq, whole=True)


@dataclass(frozen=True)
class Relaxed:
    """The query with its long CJK words relaxed, for when too few notes hold every word
    (search engines' "minimum should match"): such a word, typed without spaces, may have been
    asked in other words than the note's (改写 where the note says 重写), so a note holding most
    of its pairs may still be the one. `expr` finds the candidates: every other term as the
    strict query has it (phrases, Latin words), each relaxed word's non-CJK pieces, at least one
    of its CJK groups, and no exclusion; `parts` gives, per relaxed word, the FTS5 expression of
    each CJK group (textfold.apart_groups) and how many of them a note must hold."""

    expr: str
    parts: tuple[tuple[tuple[str, ...], int], ...]


def _group_expr(group: Group) -> str:
    alts = [_fts_phrase([tok]) for tok in group]
    return alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")"


def relaxed_query(pq: ParsedQuery) -> Relaxed | None:
    """The relaxed form of the query (see Relaxed), or None when no word of it can be relaxed.

    Only an unquoted word whose CJK runs make at least three groups is relaxed, and a note must
    still hold a strict majority of them (2 of 3, 3 of 4, 3 of 5): a four-character word such
    as 请求标头 (two groups, 请求 and 标头) is never relaxed to one of its halves. Quoted
    phrases, exclusions, Latin words and short CJK words stay exact."""
    pos: list[str] = []
    parts: list[tuple[tuple[str, ...], int]] = []
    for t in pq.positive:
        cjk = [g for g in t.apart or [] if all(CJK.fullmatch(tok) for tok, _ in g)]
        if len(cjk) < 3:
            pos.append(_fts_term(t, False))
            continue
        exprs = tuple(_group_expr(g) for g in cjk)
        parts.append((exprs, len(cjk) // 2 + 1))
        rest = [_group_expr(g) for g in t.apart or [] if g not in cjk]
        pos.append("(" + " AND ".join([*rest, "(" + " OR ".join(exprs) + ")"]) + ")")
    if not parts or sum(len(g) for g, _ in parts) > MAX_RELAXED_GROUPS:
        return None
    expr = " AND ".join(pos)
    for t in pq.terms:
        if t.negated:
            expr = f"({expr}) NOT {_fts_phrase(t.tokens)}"
    return Relaxed(expr, tuple(parts))


def title_expression(pq: ParsedQuery) -> str | None:
    """The words looked for, without exclusions: a note whose title holds them all ranks higher
    (an exclusion applies to the whole note, in fts_expression, never to the title alone)."""
    pos = [_fts_term(t, False) for t in pq.positive]
    return " AND ".join(pos) if pos else None


@functools.lru_cache(maxsize=65_536)  # a word in thousands of titles: each compared per query
def title_key(text: str) -> str:
    """A title, a file name or a query as compared for "the note titled like the query": folded
    (NFKC, case), punctuation and spacing ignored, except that words stay apart; spaces next to
    CJK do not count (TLS 双向认证 = TLS双向认证, key-auth = key auth)."""
    folded = fold(text)
    if folded.isascii():  # no CJK run to set apart (most titles: this is the fast way)
        return " ".join(WORD.findall(folded))
    words = WORD.findall(CJK.sub(lambda m: f" {m.group()} ", folded))
    out: list[str] = []
    for w in words:
        if out and CJK.fullmatch(w) and CJK.fullmatch(out[-1][-1]):
            out[-1] += w  # CJK after CJK: one run, however it was spaced
        else:
            out.append(w)
    return " ".join(out)


def query_key(pq: ParsedQuery) -> str:
    """What a title must equal (title_key) to be the note the query names: its words, without
    exclusions and filters."""
    return title_key(" ".join(t.text for t in pq.positive))


def term_regex(term: Term) -> re.Pattern[str]:
    """Where a term occurs in folded text (for snippets and title checks)."""
    folded = fold(term.text)
    pieces: list[str] = []
    pos = 0
    for m in CJK.finditer(folded):
        pieces += [re.escape(w) for w in WORD.findall(folded[pos : m.start()])]
        pieces.append(re.escape(m.group()))
        pos = m.end()
    pieces += [re.escape(w) for w in WORD.findall(folded[pos:])]
    if not pieces:
        return re.compile(r"(?!x)x")
    if term.tokens and term.tokens[-1][1] and not CJK.fullmatch(term.tokens[-1][0]):
        pieces[-1] += r"\w*"  # the prefix match the index made
    return re.compile(r"[\W_]*".join(pieces))


def _group_regex(group: Group) -> re.Pattern[str]:
    alts = [
        re.escape(tok) + (r"\w*" if pre and not CJK.fullmatch(tok) else "") for tok, pre in group
    ]
    return re.compile("|".join(alts))


def term_patterns(term: Term) -> list[re.Pattern[str]]:
    """Where a term occurs in folded text: every pattern must be found (a term whose words may
    stand apart has one per group, see textfold.apart_groups; any other has one)."""
    if term.apart is None:
        return [term_regex(term)]
    return [_group_regex(g) for g in term.apart]


def excluded(pq: ParsedQuery, text: str) -> bool:
    """The one `-word` rule where the index cannot apply it (recall): the note is dropped when a
    negated term occurs anywhere in `text`, folded as the index folds it (NFKC, case), a plain
    word matching its longer forms as the index's prefix match does."""
    negated = [term_regex(t) for t in pq.terms if t.negated]
    if not negated:
        return False
    folded = fold(text)
    return any(rx.search(folded) for rx in negated)


def contains_all(pq: ParsedQuery, text: str) -> bool:
    """Every word of the query occurs in `text`, by the rule `excluded` uses: what recall calls a
    lexical match (the note says it in those words), as against a match by meaning alone."""
    folded = fold(text)
    return bool(pq.positive) and all(
        rx.search(folded) for t in pq.positive for rx in term_patterns(t)
    )


def matches_text(pq: ParsedQuery, text: str) -> bool:
    """`text` holds every word of the query and none it excludes, by search_text's rules: the
    dashboard's `/` filter asks this of a timeline row."""
    return contains_all(pq, text) and not excluded(pq, text)


MAX_MATCHES = 400  # per term: enough to pick good lines, bounded for a 1 MB note


def snippets(text: str, body_start: int, pq: ParsedQuery, limit: int = 3) -> list[str]:
    """Up to `limit` lines of the body around matches, the matched terms marked «like this».

    The body is folded once and each term searched across all of it, so a 1 MB note costs a
    few regex scans, not one fold per line.
    """
    regexes = [rx for t in pq.positive for rx in term_patterns(t)]
    if not regexes:
        return []
    body = text[body_start:]
    folded = body.lower() if body.isascii() else fold(body)
    same_length = len(folded) == len(body)  # then offsets in folded text are offsets in body
    lines: dict[int, tuple[int, list[tuple[int, int]], set[int]]] = {}
    for k, rx in enumerate(regexes):
        for n, m in enumerate(rx.finditer(folded)):
            if n >= MAX_MATCHES:
                break
            if m.end() == m.start():
                continue
            ls = folded.rfind("\n", 0, m.start()) + 1
            le = folded.find("\n", m.end())
            le = len(folded) if le < 0 else le
            entry = lines.setdefault(ls, (le, [], set()))
            entry[1].append((m.start() - ls, m.end() - ls))
            entry[2].add(k)
    best = sorted(lines.items(), key=lambda kv: (-len(kv[1][2]), kv[0]))[:limit]
    out = []
    for ls, (le, spans, _) in sorted(best):
        shown = body[ls:le] if same_length else folded[ls:le]
        if not shown.strip():
            continue
        out.append(_mark(shown.rstrip("\r"), sorted(spans)))
    return out


def _mark(line: str, spans: list[tuple[int, int]]) -> str:
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    first = merged[0][0]
    start = max(0, first - SNIPPET_CHARS // 3)
    end = min(len(line), start + SNIPPET_CHARS)
    out, pos = [], start
    for a, b in merged:
        if a >= end:
            break
        out.append(line[pos:a])
        out.append(MARK_OPEN + line[a : min(b, end)] + MARK_CLOSE)
        pos = min(b, end)
    out.append(line[pos:end])
    text = "".join(out).strip()
    return ("…" if start > 0 else "") + text + ("…" if end < len(line) else "")
