"""Wikilinks and markdown links: find them (outside code), with their exact spans.

Spans are kept so that the owner's move/rename can rewrite a link in place without touching
anything around it.
"""

from __future__ import annotations

import bisect
import json
import posixpath
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote

# Both patterns start with a literal '[' so the regex engine can skip ahead to it; whether a
# link is an embed ('!' before it) is read off the preceding character.
WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
MDLINK = re.compile(
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^<>\n]+>|[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)"
    r"(\s+\"[^\"\n]*\")?\s*\)"
)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# the start of a CommonMark HTML block of type 1, which runs to the line with its closing tag
RAW_HTML = re.compile(r" {0,3}<(pre|script|style|textarea)(?=[\s>]|$)", re.I)
BACKTICKS = re.compile(r"`+")
# Obsidian's comment: from %% to the next %% (across lines), or to the end of the note
COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.S)
BLANK_LINE = re.compile(r"\n[ \t]*(?=\r?\n)")
# Inside a table Obsidian writes the alias bar escaped, [[Note\|alias]], so the row keeps its
# cells: the backslash belongs to the separator, never to the target or heading.
ALIAS_BAR = re.compile(r"\\?\|")


@dataclass(frozen=True)
class Link:
    kind: str  # "wiki" | "md"
    target: str  # note or file as written (decoded for md links), without #heading
    heading: str | None
    alias: str | None
    embed: bool
    start: int  # char span of the whole link in the text
    end: int

    @property
    def is_attachment(self) -> bool:
        """A link to a non-note file (image, pdf, ...) by its name: a real extension that is
        not a note's. `v1.2 notes` and `Drawing.excalidraw` are notes (see ATTACHMENT_EXTENSIONS)."""
        return attachment_named(self.target)


class OpenFence(NamedTuple):
    """A code fence that is never closed: CommonMark reads the rest of the note as code."""

    fence: str  # as written: ``` or ~~~~
    start: int  # char offset of its line
    line: int  # 1-based line number in the text


def code_spans(text: str) -> list[tuple[int, int]]:
    """Char ranges of fenced code blocks and inline code: nothing inside them is a link or tag."""
    return code_layout(text)[0]


def code_layout(text: str) -> tuple[list[tuple[int, int]], OpenFence | None]:
    """code_spans, and the fence left open at the end of the text (None when every fence
    closes). As CommonMark has fences: a backtick fence's info string holds no backtick (else
    the line is inline code); a closing fence is the opening's character, at least as many,
    with nothing but blanks after it (```python inside a block is code, not its end). A
    <pre> (<script>, <style>, <textarea>) block holds no fences up to its closing tag:
    Obsidian's help writes <pre><code>```mermaid … ```</code></pre>."""
    spans: list[tuple[int, int]] = []
    pos = 0
    fence: str | None = None
    fence_start = 0
    raw_end: str | None = None  # the closing tag of the raw HTML block we are in
    for line in text.splitlines(keepends=True):
        if raw_end is not None:
            if raw_end in line.lower():
                raw_end = None
            pos += len(line)
            continue
        m = FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
                fence, fence_start = m.group(1), pos
            elif m is None and "<" in line and (html := RAW_HTML.match(line)) is not None:
                end_tag = f"</{html.group(1).lower()}>"
                raw_end = None if end_tag in line[html.end() :].lower() else end_tag
        elif (
            m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and not line[m.end() :].strip()
        ):
            spans.append((fence_start, pos + len(line)))
            fence = None
        pos += len(line)
    open_fence = None
    if fence is not None:
        spans.append((fence_start, len(text)))
        open_fence = OpenFence(fence, fence_start, text.count("\n", 0, fence_start) + 1)
    if "`" in text:
        spans += _inline_code(text, spans)
    spans.sort()
    return spans, open_fence


def _inline_code(text: str, blocks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Code spans as CommonMark has them: a run of backticks closes only on a later run of the
    same length, within its paragraph (never across a blank line); a run with no closer is
    plain text and the next run is tried as an opener. Runs inside fenced blocks are skipped."""
    runs: list[tuple[int, int]] = []
    k = 0
    for m in BACKTICKS.finditer(text):
        while k < len(blocks) and blocks[k][1] <= m.start():
            k += 1
        if k < len(blocks) and blocks[k][0] <= m.start():
            continue  # inside a fence
        runs.append((m.start(), m.end()))
    blanks = [m.start() for m in BLANK_LINE.finditer(text)]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        b = bisect.bisect_left(blanks, end)
        para_end = blanks[b] if b < len(blanks) else len(text)
        width = end - start
        j = i + 1
        while j < len(runs) and runs[j][0] < para_end and runs[j][1] - runs[j][0] != width:
            j += 1
        if j < len(runs) and runs[j][0] < para_end:
            out.append((start, runs[j][1]))
            i = j + 1
        else:
            i += 1
    return out


def _split_alias(inner: str) -> tuple[str, str]:
    """'Note#Heading|alias' or 'Note#Heading\\|alias' -> ('Note#Heading', 'alias')."""
    m = ALIAS_BAR.search(inner)
    return (inner, "") if m is None else (inner[: m.start()], inner[m.end() :])


def mask_code(text: str, spans: list[tuple[int, int]] | None = None) -> str:
    """The text with code replaced by spaces (newlines kept), so offsets stay valid."""
    spans = code_spans(text) if spans is None else spans
    if not spans:
        return text
    out, last = [], 0
    for a, b in spans:
        if a < last:
            continue
        out.append(text[last:a])
        out.append(re.sub(r"[^\n]", " ", text[a:b]))
        last = b
    out.append(text[last:])
    return "".join(out)


def parse_links(text: str, masked: str | None = None) -> list[Link]:
    """Every wikilink and local markdown link outside code and Obsidian's %% comments %%, in
    order of appearance (Obsidian neither shows nor follows a link in a comment)."""
    masked = mask_code(text) if masked is None else masked
    if "%%" in masked:
        masked = COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), masked)
    links: list[Link] = []
    for m in WIKILINK.finditer(masked):
        inner = text[m.start(1) : m.end(1)]
        target, alias = _split_alias(inner)
        target, _, heading = target.partition("#")
        embed = m.start() > 0 and text[m.start() - 1] == "!"
        links.append(
            Link(
                kind="wiki",
                target=target.strip(),
                heading=heading.strip() or None,
                alias=alias or None,
                embed=embed,
                start=m.start() - embed,
                end=m.end(),
            )
        )
    # `[[x]](text)` is a wikilink followed by text, as Obsidian reads it: a markdown link never
    # starts inside a wikilink's brackets
    wiki = [(lk.start + lk.embed, lk.end) for lk in links]
    for m in MDLINK.finditer(masked):
        k = bisect.bisect_right(wiki, (m.start(), len(text) + 1)) - 1
        if k >= 0 and wiki[k][0] <= m.start() < wiki[k][1]:
            continue
        if m.start() > 0 and text[m.start() - 1] == "[":
            continue  # inside a wikilink's brackets
        raw = text[m.start(2) : m.end(2)]
        if raw.startswith("<") and raw.endswith(">"):
            raw = raw[1:-1]
        if EXTERNAL.match(raw) or raw.startswith("#"):
            continue
        target, _, heading = raw.partition("#")
        embed = m.start() > 0 and text[m.start() - 1] == "!"
        links.append(
            Link(
                kind="md",
                target=unquote(target),
                heading=unquote(heading) or None,
                alias=text[m.start(1) : m.end(1)] or None,
                embed=embed,
                start=m.start() - embed,
                end=m.end(),
            )
        )
    links.sort(key=lambda link: link.start)
    return links


# ------------------------------------------------------------------------------------------------
# Resolving a link to a file the way Obsidian does, and rewriting links when files move (the
# owner's move/rename). Obsidian reads wikilinks and markdown links alike (its
# getFirstLinkpathDest): the link text is a path, `.md` may be left out, and case does not
# matter. A path that starts with ./ or ../ is relative to the linking note; a path with a '/'
# is tried from the vault's root, then relative to the note, then as the end of a longer path;
# a bare name is a file's name anywhere in the vault ("shortest path when possible").


# Obsidian's link rule, not the vault's note rule (`paths.is_note`): a link without an
# extension names a `.md` file, and a link to a `.md` file may leave the extension out.
LINK_EXT = ".md"

# The file types Obsidian opens or embeds, and the documents a vault commonly holds beside
# them. A link's last dot starts an extension only when one of these follows: `[[v1.2 notes]]`,
# `[[🗂️ 02.04 Projects]]` and the Excalidraw plugin's `![[Drawing.excalidraw]]` name the notes
# `v1.2 notes.md`, `🗂️ 02.04 Projects.md` and `Drawing.excalidraw.md`. Only a link that
# resolves to nothing needs this guess: the resolver looks the name up both ways.
ATTACHMENT_EXTENSIONS = frozenset(
    [
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "svg",
        "webp",
        "avif",
        "tif",
        "tiff",
        "ico",
        "heic",
        "mp3",
        "wav",
        "m4a",
        "ogg",
        "3gp",
        "flac",
        "webm",
        "mp4",
        "ogv",
        "mov",
        "mkv",
        "avi",
        "pdf",
        "canvas",
        "base",
        "docx",
        "doc",
        "xlsx",
        "xls",
        "pptx",
        "ppt",
        "odt",
        "ods",
        "odp",
        "csv",
        "tsv",
        "txt",
        "rtf",
        "zip",
        "gz",
        "tgz",
        "7z",
        "rar",
        "json",
        "yaml",
        "yml",
        "xml",
        "html",
        "htm",
        "epub",
        "mobi",
        "ipynb",
    ]
)
LINK_FORMATS = ("shortest", "relative", "absolute")


def _md_named(name: str) -> bool:
    """The name ends in the extension a link may leave out."""
    return name.lower().endswith(LINK_EXT)


def attachment_named(name: str) -> bool:
    """The file name ends in a real extension of a file that is not a note."""
    base = name.rsplit("/", 1)[-1]
    return "." in base and base.rsplit(".", 1)[1].lower() in ATTACHMENT_EXTENSIONS


def heading_key(heading: str) -> str:
    """A heading as a #heading link matches it: Obsidian's link autocomplete drops
    punctuation and symbols from the heading it links to (`[[Note#dv版本0 5 3]]` for
    `## dv版本0.5.3`, `#Q A` for `Q&A`), and its resolver compares without case. So both sides
    are NFKC- and case-folded with every punctuation mark, symbol (emoji included) and space
    dropped."""
    folded = unicodedata.normalize("NFKC", heading).casefold()
    return "".join(
        c for c in folded if not c.isspace() and unicodedata.category(c)[0] not in "PSZC"
    )


class LinkSettings(NamedTuple):
    """The vault's link settings, `.obsidian/app.json`: how Obsidian writes a new link. A move
    keeps each link in the form it was written; these decide only where the form cannot be
    kept (a bare name two notes now share) or where a link reads two ways (a note in the
    vault's root: `folder/note` is a relative path and a path from the root alike)."""

    new_link_format: str = "shortest"  # shortest | relative | absolute
    use_markdown_links: bool = False


def link_settings(root: Path) -> LinkSettings:
    """The vault's `.obsidian/app.json` link settings; Obsidian's defaults when it is missing
    or unreadable (Obsidian itself starts from them then)."""
    try:
        data = json.loads((root / ".obsidian" / "app.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # a synced file nested too deep too
        return LinkSettings()
    if not isinstance(data, dict):
        return LinkSettings()
    fmt = data.get("newLinkFormat")
    return LinkSettings(
        fmt if fmt in LINK_FORMATS else "shortest", data.get("useMarkdownLinks") is True
    )


def _key(path: str) -> str:
    return unicodedata.normalize("NFC", path).casefold()


class LinkIndex:
    """Every file of the vault, to resolve links the way Obsidian does (see above). When a
    name fits several files, `_pick` says which one Obsidian opens, and the link counts as
    ambiguous."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = set(files)
        self._exact: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = {}
        for f in sorted(self.files):
            k = _key(f)
            self._exact.setdefault(k, f)
            self._by_name.setdefault(k.rsplit("/", 1)[-1], []).append(f)

    def _file(self, path: str) -> str | None:
        """The file at exactly `path`, or `path` + .md (any case)."""
        k = _key(path)
        return self._exact.get(k) or self._exact.get(k + LINK_EXT)

    def _named(self, name: str) -> list[str]:
        k = _key(name)
        return self._by_name.get(k, []) + self._by_name.get(k + LINK_EXT, [])

    def locate(self, link: Link, source: str) -> tuple[list[str], str]:
        """(every file the link could mean, how it was found): "self" ([[#Heading]]), "rooted"
        (/path), "relative" (./, ../ or a path under the note's folder), "absolute" (a path from
        the vault's root), "suffix" (the end of a longer path) or "name" (a bare name)."""
        target = link.target
        if not target:
            return [source], "self"
        if target.startswith("/"):
            hit = self._file(target.lstrip("/"))
            return ([hit] if hit else []), "rooted"
        folder = posixpath.dirname(source)
        if target.startswith(("./", "../")):
            path = posixpath.normpath(posixpath.join(folder, target))
            hit = None if path.startswith("../") else self._file(path)
            return ([hit] if hit else []), "relative"
        if "/" not in target:
            return self._named(target), "name"
        # an exact path from the vault's root wins, even over one beside the linking note
        hit = self._file(target)
        if hit:
            return [hit], "absolute"
        if folder:
            hit = self._file(posixpath.normpath(posixpath.join(folder, target)))
            if hit:
                return [hit], "relative"
        tail = "/" + _key(target)
        found = [
            f
            for f in self._named(target.rsplit("/", 1)[-1])
            if _key(f).endswith(tail) or _key(f).endswith(tail + LINK_EXT)
        ]
        return found, "suffix"

    def candidates(self, link: Link, source: str) -> list[str]:
        """Every file the link could mean (more than one: ambiguous)."""
        return self.locate(link, source)[0]

    def resolve(self, link: Link, source: str) -> str | None:
        return _pick(self.candidates(link, source), source, link.target)

    def backlinks(self, target: str, texts: dict[str, str]) -> list[tuple[str, Link]]:
        """(note, link) for every link in `texts` that resolves to `target`."""
        return [
            (src, link)
            for src, text in sorted(texts.items())
            if "[" in text
            for link in parse_links(text)
            if self.resolve(link, src) == target
        ]


def _pick(found: list[str], source: str, target: str) -> str | None:
    """The file a link to several means, as Obsidian picks it (getFirstLinkpathDest, observed
    on Obsidian 1.13.7): the exact path from the vault's root (`[[Note]]` is the root's
    Note.md), else the one in the linking note's own folder (not an ancestor's), else the
    shortest path as a string (`a/b/Note.md` before `zzzz/Note.md`), then the first by name."""
    if len(found) <= 1:
        return found[0] if found else None
    want = _key(target)
    exact = [f for f in found if _key(f) in (want, want + LINK_EXT)]
    if exact:
        return exact[0]
    folder = posixpath.dirname(source)
    same = [f for f in found if posixpath.dirname(f) == folder]
    return (same or sorted(found, key=lambda f: (len(f), f)))[0]


def _has_ext(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return "." in base and not base.startswith(".")


def _form(link: Link, form: str, was: str, source: str, settings: LinkSettings) -> str:
    """How the owner wrote the link, where the text reads two ways: a bare name to a note in the
    same folder is also a relative path, and a path from a note in the vault's root is also a
    path from the root. The vault's newLinkFormat says which one Obsidian wrote."""
    relative = settings.new_link_format == "relative"
    folder = posixpath.dirname(source)
    if form == "name" and relative and posixpath.dirname(was) == folder:
        return "relative"
    if form == "absolute" and relative and not folder:
        return "relative"
    return form


def _spelled(form: str, link: Link, goal: str, source: str) -> list[str]:
    """The paths to try for a link to `goal` from `source`, in the link's own form first, then
    the full path from the vault's root, then with a leading '/' (which nothing else matches)."""
    out: list[str] = []
    if form == "name":
        out.append(goal.rsplit("/", 1)[-1])
    elif form == "relative":
        rel = posixpath.relpath(goal, posixpath.dirname(source) or ".")
        dotted = "./" + rel if not rel.startswith("..") else rel
        # as written (with ./ or without), then with ./ where a path from the root would win
        out += [dotted, rel] if link.target.startswith("./") else [rel, dotted]
    elif form == "suffix":
        out.append("/".join(goal.split("/")[-(link.target.count("/") + 1) :]))
    elif form == "rooted":
        out.append("/" + goal)
    return [*out, goal, "/" + goal]


def _retarget(
    link: Link, form: str, goal: str, source: str, after: LinkIndex, settings: LinkSettings
) -> str:
    """The link's new path (decoded, without #heading): the first spelling that resolves to
    `goal` alone, `.md` kept only if the owner wrote it. A bare name two notes now share is
    written as newLinkFormat says (shortest: the full path, as Obsidian writes it then)."""
    keep_md = _md_named(link.target) or not _md_named(goal)
    spellings = _spelled(form, link, goal, source)
    if form == "name" and settings.new_link_format == "relative":
        spellings.insert(1, posixpath.relpath(goal, posixpath.dirname(source) or "."))
    for path in spellings:
        shown = path if keep_md else path[: -len(LINK_EXT)]
        probe = Link(link.kind, shown, None, None, link.embed, 0, 0)
        if after.candidates(probe, source) == [goal]:
            return shown
    return "/" + goal  # unreachable: a rooted path names exactly one file


def _wiki_text(shown: str, original: str) -> str:
    """The wikilink's text pointing at `shown`: heading, alias and embed kept as written."""
    inner = original[original.index("[[") + 2 : original.rindex("]]")]
    rest = inner[len(_split_alias(inner)[0].partition("#")[0]) :]  # "#Heading\\|alias" as written
    return original[: original.index("[[") + 2] + shown + rest + "]]"


# a percent-escape of a non-ASCII byte: the link was written fully URL-encoded
_ENCODED_UTF8 = re.compile(r"%[89A-Fa-f][0-9A-Fa-f]")


def _md_text(shown: str, original: str) -> str:
    """The markdown link's text pointing at `shown`, encoded as the owner encoded it (`<...>`,
    %20 for spaces, or every non-ASCII character escaped); #fragment and title kept."""
    m = MDLINK.search(original)
    assert m is not None
    raw = m.group(2)
    angle = raw.startswith("<") and raw.endswith(">")
    body = raw[1:-1] if angle else raw
    fragment = body[body.index("#") :] if "#" in body else ""
    if angle:
        path = shown
    elif _ENCODED_UTF8.search(body):
        path = quote(shown, safe="/!$&'()*+,;=:@~-._")
    else:
        path = shown.replace("%", "%25").replace(" ", "%20")
    new_raw = f"<{path}{fragment}>" if angle else path + fragment
    return original[: m.start(2)] + new_raw + original[m.end(2) :]


def rewrite_links(
    text: str,
    source_before: str,
    source_after: str,
    moves: dict[str, str],
    before: LinkIndex,
    after: LinkIndex,
    settings: LinkSettings | None = None,
) -> str:
    """The note's text with every link that would break or change meaning after `moves`
    rewritten to point where its file went, in the form it was written (a bare name stays a
    bare name while it names one file, a relative path stays relative, a path from the root
    stays one): links to moved files, relative links of a note that itself moved, and bare
    names that the move made ambiguous. Everything else, links in code included, is left byte
    for byte; a wikilink stays a wikilink and a markdown link a markdown link."""
    if "[" not in text:
        return text
    settings = settings or LinkSettings()
    out: list[str] = []
    last = 0
    for link in parse_links(text):
        if not link.target:
            continue
        found, form = before.locate(link, source_before)
        was = _pick(found, source_before, link.target)
        if was is None:
            continue  # already broken: not ours to guess
        goal = moves.get(was, was)
        now = after.candidates(link, source_after)
        # a name that fitted one file and now fits two: spelled out, whatever it resolves to
        ambiguous = form == "name" and len(found) == 1 and len(now) > 1
        form = _form(link, form, was, source_before, settings)
        # a path the owner spelled out follows the file exactly, not by a suffix match
        spelled_moved = form not in ("name", "self") and goal != was
        # a relative path stays one when its note moves (a suffix match would still find the
        # file in Obsidian, but not in any other tool that reads the vault)
        relative_moved = form == "relative" and source_before != source_after
        if (
            _pick(now, source_after, link.target) == goal
            and not ambiguous
            and not spelled_moved
            and not relative_moved
        ):
            continue
        shown = _retarget(link, form, goal, source_after, after, settings)
        original = text[link.start : link.end]
        new = _wiki_text(shown, original) if link.kind == "wiki" else _md_text(shown, original)
        if new != original:
            out.append(text[last : link.start])
            out.append(new)
            last = link.end
    out.append(text[last:])
    return "".join(out)
