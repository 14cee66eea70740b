"""search_text: query -> ranked, filtered, paged hits with snippets. No MCP here."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any

from server.core.budget import fit_text
from server.index.search import Wants
from server.index.search_query import (
    ParsedQuery,
    SearchError,
    fts_expression,
    parse,
    phrase_expression,
    query_key,
    relaxed_query,
    snippets,
    title_expression,
    title_key,
)
from server.notes.config import Config
from server.notes.entry import Entry
from server.notes.filters import NoteFilter, QueryError
from server.notes.note import decode
from server.services.paging import fingerprint, page, read_cursor
from server.vault import Vault

TITLE_WEIGHT = 0.6  # a title holding every word: worth 60% of the best body match of the query
RECENCY = 0.1  # a note changed today scores up to 10% better: a tie-break, not a ranking
MOST_RECENT = 1.0 + RECENCY * 1.0  # the largest recency factor, as score() computes it
# Tiers, above anything a weight can add (score() without tiers stays under 2): the note whose
# title or file name is the query comes first; then, for a CJK word typed without spaces
# (停用插件), the notes that say it in one piece before those that hold its words apart.
WHOLE_TIER = 10.0
NAMED_TIER = 100.0
# Fewer notes than this holding every word (a page's worth): a long CJK word typed without
# spaces is relaxed (search_query.relaxed_query), the notes holding most of it listed after
# those holding all of it, at most RELAXED_MAX of them. A fixed bound, not the page's size:
# every page of one query then counts the same total.
RELAX_BELOW = 10
RELAXED_MAX = 100


def score(
    body: float,
    best: float,
    title: bool,
    modified_ns: int,
    now: float,
    whole: bool = False,
    named: bool = False,
) -> float:
    """How well a note matches, higher is better. The body's bm25 is scaled by the best body
    score of its tier (1.0 = the best match in the vault; for a note holding a CJK word in one
    piece, the best of those: see TopK), a title holding every word adds
    TITLE_WEIGHT: a strong weight, not a tier, so the note all about a word outranks short notes
    that only carry it in their title. The scale is taken over every match, before filters, so
    a filtered list keeps the unfiltered order. `whole` and `named` are tiers (WHOLE_TIER,
    NAMED_TIER)."""
    s = (body / best if best < 0 else 0.0) + (TITLE_WEIGHT if title else 0.0)
    age_days = max(0.0, now - modified_ns / 1e9) / 86400
    s *= 1.0 + RECENCY * max(0.0, 1.0 - age_days / 365)
    return s + (WHOLE_TIER if whole else 0.0) + (NAMED_TIER if named else 0.0)


class TopK:
    """The `need` best matches in score order, without scoring every match (issue 20: a word in
    a third of 10,000 notes cost 13-26 ms: every match sorted by SQLite, then scored, sorted and
    filtered in Python). Matches arrive best body score first
    (bm25 <= 0, so body/best only falls); once the need-th best score so far is above what any
    match still to come could reach (its body part at most the current one, plus the title
    weight while title matches are still to come, times the largest recency factor), the rest
    cannot enter the page: the first `need` are those of the full ranking, in the same order.
    `need=None` ranks every match. `total` counts every match that passes the filters; a page
    that starts at or past it (`offset`) ranks nothing. The tiers (a note named like the query
    `key`, see search_query.query_key; the notes holding the words in one piece) are bounded
    the same way: while one is still to come, only marked matches are read on."""

    def __init__(
        self,
        entries: dict[str, Entry],
        keep: Callable[[Entry], bool] | None,
        need: int | None,
        now: float,
        offset: int = 0,
        key: str = "",
    ) -> None:
        self.entries, self.keep, self.need, self.now = entries, keep, need, now
        self.offset, self.key = offset, key
        self.total = 0
        self.best: float | None = None
        # the best body score of the notes holding every word in one piece: their scale, so
        # that when they fill the page the notes holding the words apart are never read (the
        # bm25 of every match was the cost: a CJK word in a third of 10,000 notes, in one
        # piece in a sixth of those)
        self.best_whole: float | None = None
        self.titles_left = 0
        self.whole: set[str] = set()
        self.named: set[str] = set()
        self._titles: list[str] = []
        self.scored: list[tuple[float, str, Entry]] = []
        self._top: list[float] = []  # min-heap of the `need` best scores so far
        self.visited = 0  # matches scored (the bound's work; tests read it)

    def start(self, matches: list[str], titles: list[str], whole: list[str]) -> int | None:
        entries, keep = self.entries, self.keep
        if keep is None:
            self.total = sum(map(entries.__contains__, matches))
        else:
            self.total = sum(1 for p in matches if (e := entries.get(p)) is not None and keep(e))
        self.titles_left = len(titles)
        self.whole = set(whole)
        # a title that is the query holds every word of it: the named are among `titles`
        self.named = {p for p in titles if (e := entries.get(p)) is not None and self._names(e)}
        self.best, self.best_whole, self.scored, self._top, self.visited = None, None, [], [], 0
        self._titles = titles
        if self.offset >= self.total:
            return 0
        # enough rows for the bound to be met as a rule (about twice the page on the bench's
        # vaults); when it is not, the search index reads on (see SearchIndex.search)
        return None if self.need is None else 3 * self.need + 64

    def whole_fills(self) -> bool:
        """The notes holding every word in one piece (and any named like the query, all among
        them) fill the page: only they need be read, best body score first. Asked after
        `start`, before any match is visited; True means only those will be."""
        if self.need is None or not self.named <= self.whole or len(self.whole) < self.need:
            return False
        entries, keep = self.entries, self.keep
        kept = sum(
            1 for p in self.whole if (e := entries.get(p)) is not None and (keep is None or keep(e))
        )
        if kept < self.need:
            return False
        self.titles_left = len(self.whole.intersection(self._titles))  # no title apart comes
        return True

    def _names(self, e: Entry) -> bool:
        """The note's title or file name is the query (search_query.title_key). A name far
        longer than the query is not compared: spacing and punctuation never make up that much,
        and a word in thousands of titles would cost a fold of each."""
        most = 2 * len(self.key) + 16
        return bool(self.key) and any(
            len(name) <= most and title_key(name) == self.key for name in (e.doc.title, e.doc.stem)
        )

    def visit(self, path: str, body: float, title: bool) -> Wants:
        if self.best is None:
            self.best = body  # the first row is the best body score of every match
        best = self.best
        self.titles_left -= title
        whole, named = path in self.whole, path in self.named
        if whole and self.best_whole is None:
            self.best_whole = body  # the first of them is the best of them
        self.whole.discard(path)
        self.named.discard(path)
        e = self.entries.get(path)
        if e is not None and (self.keep is None or self.keep(e)):
            scale = self.best_whole if whole and self.best_whole is not None else best
            s = score(body, scale, title, e.modified_ns, self.now, whole, named)
            self.scored.append((-s, path, e))
            if self.need is not None:
                if len(self._top) < self.need:
                    heapq.heappush(self._top, s)
                elif s > self._top[0]:
                    heapq.heapreplace(self._top, s)
        self.visited += 1
        if self.need is None or len(self._top) < self.need:
            return Wants.ALL
        # The most a match still to come can score: a body part at most this one's, plus the
        # title weight if it is one of the title matches left, times the largest recency factor,
        # plus the tiers of the marked matches left (each set holds only those not yet seen).
        kth, rest = self._top[0], body / best if best < 0 else 0.0
        if not kth > rest * MOST_RECENT:
            return Wants.ALL
        # a note in one piece still to come is scaled by the best of those (1.0 for the first)
        bw = self.best_whole
        top = max(rest, (body / bw if bw is not None and bw < 0 else 1.0) if self.whole else rest)
        marked = (top + (TITLE_WEIGHT if self.titles_left else 0.0)) * MOST_RECENT
        marked += (WHOLE_TIER if self.whole else 0.0) + (NAMED_TIER if self.named else 0.0)
        if (self.titles_left or self.whole) and not kth > marked:
            return Wants.TITLES
        return Wants.NONE

    def ranked(self) -> list[Entry]:
        """The matches seen, best first (ties by path): the first `need` are exact."""
        self.scored.sort(key=lambda t: (t[0], t[1]))
        return [e for _, _, e in self.scored]


def parsed_query(query: str) -> ParsedQuery:
    """The query's words and inline filters, or the error the model is shown."""
    try:
        return parse(query)
    except SearchError as exc:
        raise QueryError(str(exc)) from exc


def query_filter(
    cfg: Config,
    pq: ParsedQuery | None,
    type: str | None,
    folder: str | None,
    tags: list[str] | None = None,
    include_superseded: bool = False,
) -> NoteFilter:
    """The notes a search or recall may return: its parameters and the query's inline
    `type:`, `path:` and `#tag` filters together (superseded notes only when asked)."""
    return NoteFilter.of(
        cfg,
        types=[type, *(pq.types if pq else [])],
        folders=[folder, *(pq.paths if pq else [])],
        tags_all=[*(tags or []), *(pq.tags if pq else [])],
        include_superseded=include_superseded,
    )


def search_text(
    vault: Vault,
    query: str,
    *,
    type: str | None = None,
    folder: str | None = None,
    tags: list[str] | None = None,
    limit: int = 10,
    cursor: str | None = None,
    include_superseded: bool = False,
) -> dict[str, Any]:
    cfg = vault.config
    pq = parsed_query(query)
    wanted = query_filter(cfg, pq, type, folder, tags, include_superseded)

    entries = vault.searchable_entries()
    expr = fts_expression(pq)
    fp = fingerprint("s", query, type, folder, tags, include_superseded)
    off = read_cursor(cursor, fp)
    relaxed: list[Entry] = []
    if expr is None:  # filters only: newest first
        ranked = sorted(
            (e for e in entries.values() if wanted.matches(e)),
            key=lambda e: (-e.modified_ns, -e.doc.mtime_ns),
        )
        total = len(ranked)
    else:
        top = TopK(
            entries,
            wanted.matches if wanted.narrows else None,
            off + limit,
            time.time(),
            offset=off,
            key=query_key(pq),
        )
        try:
            vault.search.search(expr, title_expression(pq), top, phrase_expression(pq))
            ranked, total = top.ranked(), top.total
            rq = relaxed_query(pq) if total < RELAX_BELOW else None
            found = vault.search.partial(expr, rq.expr, rq.parts, 4 * RELAXED_MAX) if rq else []
        except ValueError as exc:
            raise QueryError(
                f'{exc}. Simplify the query: plain words, "phrases", -exclusions'
            ) from exc
        if found:
            more = [e for p in found if (e := entries.get(p)) is not None and wanted.matches(e)]
            relaxed = more[:RELAXED_MAX]
    strict = total
    total += len(relaxed)
    # the page: the strict matches first (all of them ranked when the page reaches past them:
    # TopK ranks `off + limit`), then the relaxed ones
    shown = ranked[off : min(off + limit, strict)]
    shown += relaxed[max(0, off - strict) : max(0, off + limit - strict)]

    items = []
    for e in shown:
        item: dict[str, Any] = {
            "path": e.doc.path,
            "folder": e.doc.folder,
            "title": e.doc.title,
            "type": e.type,
            "modified": e.modified.isoformat(timespec="seconds"),
            "hash": e.doc.hash,
            "tags": list(e.doc.tags),
        }
        try:
            text, _ = decode((vault.root / e.doc.disk).read_bytes())
            # body lines first; a match only in the frontmatter shows that line instead
            item["snippets"] = snippets(text, e.doc.body_start, pq) or snippets(text, 0, pq)
        except OSError:
            item["snippets"] = []
        items.append(item)
    budget = cfg.limits.result_chars - 600
    kept, nxt = page(items, off, budget, fp, total)
    result: dict[str, Any] = {"total": total, "hits": kept, "next_cursor": nxt}
    if relaxed:
        held = total - len(relaxed)
        first = (
            f"The first {held:,} hits hold every word; the {len(relaxed):,} after them"
            if held
            else f"No note holds every word; these {len(relaxed):,}"
        )
        result["hint"] = (
            f"{first} hold most of the character pairs of a Chinese, Japanese or Korean word, "
            "not all: the note may say it in other words. Put the word in quotes to find it "
            "only as typed."
        )
    if not total:
        result["hint"] = (
            "No note matched every term. Try fewer or shorter terms (terms are ANDed), "
            "or list_docs to browse by type, tag or folder."
        )
        # `path:Obsidian Publish/` unquoted filters on a folder `Obsidian` and searches the rest
        empty = [
            f
            for f in (folder, *pq.paths)
            if f
            and not any(
                NoteFilter.of(cfg, folders=[f], include_superseded=True).matches(e)
                for e in entries.values()
            )
        ]
        if empty:
            result["hint"] = (
                f"No note is in folder {fit_text(empty[0], 100)!r}. A folder with spaces goes in quotes: "
                'path:"Obsidian Publish/"; list_docs(group_by="folder") lists the folders.'
            )
    if pq.unclosed:
        said = fit_text(pq.unclosed, 100).replace('"', "'")
        result["hint"] = (
            f'The query has a quote it never closes: it was read as if closed at the end, so "{said}" '
            "is one phrase. To find those words anywhere in a note, call again without the quote."
            + (" " + result["hint"] if result.get("hint") else "")
        )
    return result
