"""Text cut to a number of terminal cells (a Chinese character takes two), the one rule every
screen uses for paths, names and clients that do not fit their column; and the short names
tools go by where their full names do not fit (Stats' columns, the review list)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.style import Style

from app.services.wording import plural as plural  # the screens' plural is the shell's

ELLIPSIS = "…"


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells: whole when it fits, else its start and its end, half
    the room each, around an ellipsis (a folder's top and the file name with its extension
    stay: two notes in one deep folder still read apart); never cut to nothing."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[: max(width, 0)]
    room = width - 1
    head, used = "", 0
    for ch in text:
        w = cell_len(ch)
        if used + w > room // 2:
            break
        head, used = head + ch, used + w
    rest = text[len(head) :]
    # an ellipsis of the text's own beside the cut's reads as one: `…beta/…notes.md`, not
    # `…beta/……notes.md` or `…beta/…/…notes.md` (a note named by the folder where it differs)
    head = head.removesuffix(ELLIPSIS + "/").rstrip(ELLIPSIS)
    used = cell_len(head)
    tail = ""
    for ch in reversed(rest):
        w = cell_len(ch)
        if used + w > room:
            break
        tail, used = ch + tail, used + w
    return head + ELLIPSIS + tail.lstrip(ELLIPSIS)


def cut_end(text: str, width: int) -> str:
    """`text` in at most `width` cells, cut at its end with an ellipsis (as `fit` cuts)."""
    return fit(Content(text), width).plain.rstrip() if cell_len(text) > width else text


def distinct_cuts(
    names: Iterable[str], width: int, cut: Callable[[str, int], str] = cut_middle
) -> dict[str, str]:
    """Each name in at most `width` cells, two different names never printed alike: names
    that `cut` makes read the same (`claude-…` for claude-code and claude-desktop,
    `行前准备…算表.md` for two budget notes) lose the start they share and show where they
    differ (`…code`, `…desktop`; `…预算表.md`, `…行李表.md`). A name that fits stays whole."""
    names = list(dict.fromkeys(names))
    out = {n: cut(n, width) for n in names}
    for _ in range(3):  # bounded: each round resolves the clashes the last one left
        by_label: dict[str, list[str]] = {}
        for n, label in out.items():
            by_label.setdefault(label, []).append(n)
        clashes = [group for group in by_label.values() if len(group) > 1]
        if not clashes:
            break
        for group in clashes:
            shared = len(_common_prefix(group))
            for n in group:
                if cell_len(n) <= width:
                    continue  # whole already: the others give way
                out[n] = ELLIPSIS + _from_start(n[shared:], max(1, width - 1))
    return out


def note_names(paths: Iterable[str]) -> dict[str, str]:
    """Each note by the text a list names it by before it is cut: its file name, and where
    other notes have that file name too, the part of its folder where they differ with the
    shared parts left out (`…甲组/周报.md` and `…乙组/周报.md`; `work/…/index.md` and
    `home/…/index.md`): the file name alone printed both alike once a narrow column had cut
    the folder away."""
    by_name: dict[str, list[str]] = {}
    for p in dict.fromkeys(paths):
        by_name.setdefault(p.rpartition("/")[2], []).append(p)
    out: dict[str, str] = {}
    for name, group in by_name.items():
        if len(group) == 1:
            out[group[0]] = name
            continue
        folders = [p.split("/")[:-1] for p in group]
        pre = _shared(folders)
        post = _shared([f[pre:][::-1] for f in folders])
        labels = {}
        for p, f in zip(group, folders, strict=True):
            # at least one folder shown where there is one: `a/n.md` beside `a/b/n.md`
            start = max(0, min(pre, len(f) - post - 1))
            end = max(start + 1, len(f) - post) if f else 0
            labels[p] = (
                (ELLIPSIS if start else "")
                + "/".join(f[start:end])
                + ("/" + ELLIPSIS if end < len(f) else "")
                + ("/" if f else "")
                + name
            )
        if len(set(labels.values())) < len(labels):  # left out too much: the paths, whole
            labels = {p: p for p in group}
        out.update(labels)
    return out


def _shared(parts: Sequence[Sequence[str]]) -> int:
    """How many leading parts every one of `parts` has in common."""
    n = min(map(len, parts), default=0)
    for i in range(n):
        if len({p[i] for p in parts}) > 1:
            return i
    return n


class Distinct:
    """`distinct_cuts` of a set of names as a cut function (`cut(name, width)`), worked out
    once per width when first asked: the timeline draws a few lines at a time of thousands.
    With `labels`, each name is shown by the text `labels` gives it (a note by `note_names`)."""

    def __init__(
        self,
        names: Iterable[str],
        cut: Callable[[str, int], str] = cut_middle,
        labels: Callable[[Iterable[str]], dict[str, str]] | None = None,
    ) -> None:
        self.names = list(dict.fromkeys(names))
        self.cut = cut
        self._labeller = labels
        self._labels: dict[str, str] | None = None
        self._by_width: dict[int, dict[str, str]] = {}

    def label(self, name: str) -> str:
        """The text `name` is shown by before it is cut (the name itself, without `labels`)."""
        if self._labeller is None:
            return name
        if self._labels is None:  # worked out when first drawn, not when the rows come
            self._labels = self._labeller(self.names)
        text = self._labels.get(name)
        return text if text is not None else self._labeller([name])[name]

    @classmethod
    def clients(cls, names: Iterable[str]) -> Distinct:
        """The one rule for clients, every list alike: whole where they fit, else cut at the
        end (`claude-…`) where that still tells them apart, else where they differ (`…code`,
        `…desktop`). Give it every client the list shows (a cut depends on the others)."""
        return cls(names, cut_end)

    @classmethod
    def notes(cls, paths: Iterable[str]) -> Distinct:
        """The one rule for notes, given their paths and asked by path: by file name (as
        `note_label` shows them), with the folder where they differ for notes of one file
        name (`note_names`); cut in the middle, and where two would print alike, where they
        differ (`…预算表.md`)."""
        return cls(paths, labels=note_names)

    def __call__(self, name: str, width: int) -> str:
        cuts = self._by_width.get(width)
        if cuts is None:
            texts = [self.label(n) for n in self.names]
            cuts = self._by_width[width] = distinct_cuts(texts, width, self.cut)
        text = self.label(name)
        return cuts.get(text) or self.cut(text, width)


def _from_start(rest: str, width: int) -> str:
    """What follows the start two names share, in `width` cells: cut in the middle (its end,
    a note's `.md`, stays) while that keeps its first character, the one that differs; else
    cut at its end (at 3 cells `claude-code` and `claude-desktop` read `…c…` and `…d…`, where
    the middle cut gave both `……e`)."""
    cut = cut_middle(rest, width)
    if rest and cut.startswith(ELLIPSIS) and not rest.startswith(ELLIPSIS):
        cut = cut_end(rest, width) if width > 1 else rest[:1] if cell_len(rest[:1]) <= 1 else ""
    return cut


def _common_prefix(names: Sequence[str]) -> str:
    first, last = min(names), max(names)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]


def fit(content: Content, width: int) -> Content:
    """`content` in exactly `width` cells: padded, or cut at its end with the ellipsis right
    after the last character that fits. Content.truncate pads a cut in a wide character's
    middle with a space before its `…` (`2026-09-01-孤立 …`); here the spare cell goes after."""
    if content.cell_length <= width:
        return content.pad_right(width - content.cell_length)
    if width <= 0:
        return Content("")
    end, used = 0, 0
    for ch in content.plain:
        w = cell_len(ch)
        if used + w > width - 1:
            break
        end, used = end + 1, used + w
    cut = content[:end] + ELLIPSIS
    return cut.pad_right(width - cut.cell_length)


def more_files(more: int) -> str:
    """What follows a file name when the row names `more` other files: ` +1 file`, ` +2 files`.
    A bare `+1` beside the +/- column read as a line count (`clarif…etch.md +1 +3 −2`)."""
    return f" +{plural(more, 'file')}" if more > 0 else ""


def note_label(
    path: str, width: int, more: int = 0, cuts: Callable[[str, int], str] | None = None
) -> Content:
    """A note in at most `width` cells: its file name first (and `+2 files` for two more),
    then its folder, muted. The folder is shortened first, and dropped when fewer than four
    cells are left for it; then the name's middle. With `cuts` (`Distinct.notes` of the other
    notes on screen, asked by path) a name cut is as they cut it: two never alike, the folder
    where they differ for notes of one file name (`…甲组/周报.md`) when its whole folder does not
    fit after it."""
    folder, _, name = path.rpartition("/")
    width = max(8, width)

    def cut(w: int) -> str:
        return cuts(path, w) if cuts is not None else cut_middle(name, w)

    suffix = more_files(more)
    if folder and cell_len(name + suffix) + cell_len(folder) + 3 <= width:
        # the whole path in sight tells any two notes apart: the name alone, then its folder
        # (not `…甲组/会议纪要.md  工作/…/甲组/`, where the two notes differ said twice)
        return Content(name + suffix) + Content.styled(f"  {folder}/", "$text-muted")
    name = cut_middle(cut(max(1, width - cell_len(suffix))) + suffix, width)
    room = width - cell_len(name) - 2
    if not folder or room < 4 or name == path:  # no folder, no room, or shown whole already
        return Content(name)
    return Content(name) + Content.styled(f"  {cut_middle(folder + '/', room)}", "$text-muted")


class Cell:
    """A table cell that knows its width. DataTable measures every cell of every row it is
    given (even under a column of fixed width), and a Content cell is rendered to segments, its
    styles parsed again, only to be measured: 10,000 cells of the Reads screen took most of a
    second to add, and 150 rows of the review list a third of its opening. `Cell(*parts)` is
    plain text in set styles (give it text already cut to its column, `cut_middle`);
    `Cell.of(content)` a Content, rendered only when drawn.

    A part's style given as Textual style text (`"$text-success"`) is resolved when the cell
    is drawn, in the theme then on screen: resolved when the rows were made, the review list's
    +/− counts kept the colours of the theme they were filled under, 1.0-1.5:1 on a light
    theme's rows after a switch (DataTable draws its rows again on a theme change; the app's
    stylesheet caches the parse, so a draw costs a dict look-up and a Rich style)."""

    __slots__ = ("content", "parts", "width")

    def __init__(self, *parts: str | tuple[str, RichStyle | str | None]) -> None:
        self.parts = [(p, None) if isinstance(p, str) else p for p in parts]
        self.content: Content | None = None
        self.width = sum(cell_len(text) for text, _ in self.parts)

    @classmethod
    def of(cls, content: Content) -> Cell:
        cell = cls()
        cell.content, cell.width = content, content.cell_length
        return cell

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.width, self.width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.content is not None:
            yield self.content.__rich__()
            return
        for text, style in self.parts:
            yield Segment(text, rich_style(style) if isinstance(style, str) else style)

    @property
    def plain(self) -> str:
        if self.content is not None:
            return self.content.plain
        return "".join(text for text, _ in self.parts)

    def __str__(self) -> str:
        return self.plain


def rich_style(style: str) -> RichStyle:
    """A Textual style (theme variables such as `$text-success` too) as a Rich style, in the
    theme on screen now: keep it no longer than one draw (a `Cell` part takes the style text
    and resolves it when drawn)."""
    return Style.parse(style).rich_style


def others_width(headings: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """The cells these columns take: each its widest value or heading, padded by one cell on
    both sides (as the insight screens write them: numbers with thousands separators)."""
    return sum(
        max(
            cell_len(f"{v:,}" if isinstance(v, int) else str(v)) for v in (h, *(r[i] for r in rows))
        )
        + 2
        for i, h in enumerate(headings)
    )


def short_names(tools: Sequence[str]) -> dict[str, str]:
    """A short heading per tool: its first word (`append` for append_section) where no other
    tool starts with it, else that word and the others' initials (`replace_s`, `replace_d`);
    the name itself where that is no shorter, or where two would still read the same."""
    first = Counter(t.split("_")[0] for t in tools)
    short = {}
    for t in tools:
        head, *rest = t.split("_")
        name = head if first[head] == 1 else "_".join([head, "".join(w[:1] for w in rest)])
        short[t] = name if rest and cell_len(name) < cell_len(t) else t
    seen = Counter(short.values())
    return {t: name if seen[name] == 1 else t for t, name in short.items()}
