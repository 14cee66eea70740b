"""An independent reading of Obsidian's links, to check vaultwatch's own (server/notes/links.py)
on real vaults: written apart from it and sharing none of its code, as plainly as Obsidian's
documented rules allow, so that a mistake in one is not the other's mistake too.

Obsidian's rules, as its help ("Internal links", "Files and links" settings) gives them:
- a link names a file by its path; `.md` may be left out; case does not matter;
- `[[name]]` and `[text](name.md)` ("shortest path when possible") name a file anywhere in the
  vault; when two files share the name, the one at the root, else the one beside the linking
  note, else the shortest path (as getFirstLinkpathDest was observed to pick on 1.13.7);
- `[text](folder/note.md)` is a path from the vault's root ("absolute path in vault") or from the
  linking note's folder ("relative path to file"), `./` and `../` relative only;
- `[[name#Heading]]`, `[[name#^block]]`, `[[name|alias]]`, `![[embed]]`; markdown targets may be
  `%20`-encoded or wrapped in `<...>`; `[[#Heading]]` is the note itself.
Heading links match the heading as Obsidian's autocomplete writes it: letters and digits only.

Also here: one round of owner moves (renames to dotted, emoji and CJK names, moves into other
folders, one folder moved), made with the app's own move service, and the comparison of every
link before and after it.
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
COMMENTS = re.compile(r"%%.*?(?:%%|\Z)", re.S)
WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
MARKDOWN = re.compile(
    r"(!?)\[([^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*)\]\((<[^<>\n]+>|[^()\s]+)(?:\s+\"[^\"\n]*\")?\s*\)"
)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
HEADING_LINE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
# after a space, as the help says, or right after an embed, as the help vault itself writes
BLOCK_ID = re.compile(r"(?:^|\s|\]\]|\))\^([A-Za-z0-9-]+)\s*$", re.M)


@dataclass(frozen=True)
class Written:
    """One link as written in a note."""

    kind: str  # wiki | md
    text: str  # the whole link as written
    path: str  # the file part, decoded
    sub: str | None  # heading or ^block


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def links_in(text: str) -> list[Written]:
    """Every link in the note outside code, in order."""
    plain = INLINE_CODE.sub(_blank, FENCED.sub(_blank, text))
    plain = COMMENTS.sub(_blank, plain)  # %% hidden %%: Obsidian does not follow these
    found: list[tuple[int, Written]] = []
    wiki_spans = []
    for m in WIKI.finditer(plain):
        wiki_spans.append((m.start(), m.end()))
        inner = text[m.start(2) : m.end(2)]
        inner = re.split(r"\\?\|", inner, maxsplit=1)[0]
        path, _, sub = inner.partition("#")
        found.append(
            (m.start(), Written("wiki", text[m.start() : m.end()], path.strip(), sub or None))
        )
    for m in MARKDOWN.finditer(plain):
        if any(a <= m.start() < b for a, b in wiki_spans):
            continue  # [[x]](y): a wikilink and text
        target = text[m.start(3) : m.end(3)]
        if target.startswith("<"):
            target = target[1:-1]
        if SCHEME.match(target) or target.startswith("#"):
            continue
        path, _, sub = target.partition("#")
        found.append(
            (
                m.start(),
                Written("md", text[m.start() : m.end()], unquote(path), unquote(sub) or None),
            )
        )
    return [w for _, w in sorted(found, key=lambda x: x[0])]


class Oracle:
    """The vault's files, and where a link goes."""

    def __init__(self, files: list[str]) -> None:
        self.files = [nfc(f) for f in files]
        self.by_lower: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = {}
        for f in sorted(self.files):
            self.by_lower.setdefault(f.lower(), f)
            self.by_name.setdefault(f.rsplit("/", 1)[-1].lower(), []).append(f)

    def exact(self, path: str) -> str | None:
        low = path.lower()
        return self.by_lower.get(low) or self.by_lower.get(low + ".md")

    def resolve(self, link: Written, source: str) -> str | None:
        path = nfc(link.path)
        if path == "":
            return source
        if path.startswith("/"):
            return self.exact(path[1:])
        here = posixpath.dirname(source)
        joined = posixpath.normpath(posixpath.join(here, path))
        if path.startswith(("./", "../")):
            return None if joined.startswith("..") else self.exact(joined)
        hit = self.exact(path)  # the exact path from the root wins, even over one beside
        if hit:
            return hit
        hit = self.exact(joined)
        if hit:
            return hit
        want = path.lower()
        name = want.rsplit("/", 1)[-1]
        ends = [
            f
            for f in self.by_name.get(name, []) + self.by_name.get(name + ".md", [])
            if f.lower() in (want, want + ".md")
            or f.lower().endswith("/" + want)
            or f.lower().endswith("/" + want + ".md")
        ]
        if not ends:
            return None
        beside = [f for f in ends if posixpath.dirname(f) == here]
        return beside[0] if beside else min(ends, key=lambda f: (len(f), f))


def letters(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", s).lower() if c.isalnum())


def anchor_ok(link: Written, target_text: str) -> bool:
    """A wikilink's #heading or #^block is in its note (markdown fragments are not judged)."""
    if link.kind != "wiki" or not link.sub:
        return True
    sub = link.sub.split("#")[-1].strip()
    if sub.startswith("^"):
        return sub[1:] in BLOCK_ID.findall(target_text)
    # a heading may be code itself (### `List`): only fenced blocks are not headings
    plain = FENCED.sub(_blank, target_text)
    return letters(sub) in {letters(h) for h in HEADING_LINE.findall(plain)}


def vault_files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = os.path.relpath(dirpath, root)
        for f in filenames:
            if not f.startswith("."):
                out.append(nfc(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/")))
    return sorted(out)


@dataclass
class Scan:
    """Every note's links and where each goes (None: nowhere)."""

    links: dict[str, list[tuple[Written, str | None]]]

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.links.values())

    def broken(self) -> list[tuple[str, Written]]:
        return [(s, w) for s, ls in self.links.items() for w, t in ls if t is None]

    def linked(self) -> set[str]:
        """Notes with a link to or from another note."""
        out: set[str] = set()
        for s, ls in self.links.items():
            for _, t in ls:
                if t is not None and t != s:
                    out.update((s, t))
        return out


def scan(root: Path) -> Scan:
    files = vault_files(root)
    oracle = Oracle(files)
    texts = {
        f: (root / f).read_text(encoding="utf-8", errors="replace")
        for f in files
        if f.lower().endswith(".md")
    }
    out: dict[str, list[tuple[Written, str | None]]] = {}
    for src, text in texts.items():
        row = []
        for w in links_in(text):
            if "<%" in w.path or "{{" in w.path:
                continue  # a template's placeholder, filled in when a note is made from it
            t = oracle.resolve(w, src)
            if t is not None and t in texts and not anchor_ok(w, texts[t]):
                t = None
            row.append((w, t))
        out[src] = row
    return Scan(out)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Owner")
    git(root, "config", "user.email", "owner@example.com")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "corpus")


def owner_moves(root: Path, before: Scan, renames: int = 3, moves: int = 3) -> dict[str, str]:
    """One round of owner moves with the app's move service, each its own commit: the most
    linked notes renamed to a dotted name, an emoji name and a CJK name, the next ones moved
    into a new folder, and the biggest folder moved under another. Returns old path -> new path
    for every note that moved (composed over the round)."""
    from app.services.move_action import apply_move, plan_move

    incoming: dict[str, int] = {}
    for s, ls in before.links.items():
        for _, t in ls:
            if t is not None and t != s and t.endswith(".md"):
                incoming[t] = incoming.get(t, 0) + 1
    ranked = sorted(incoming, key=lambda p: (-incoming[p], p))
    where = {p: p for p in vault_files(root)}  # original -> current

    def move(src_now: str, dst: str) -> None:
        plan = plan_move(root, src_now, dst)
        apply_move(root, plan)
        for orig, cur in where.items():
            if cur in plan.moves:
                where[orig] = plan.moves[cur]

    styles = ["{stem} v1.2", "🗂️ {stem}", "{stem} 笔记"]
    for n, path in enumerate(ranked[:renames]):
        cur = where[path]
        folder, name = posixpath.split(cur)
        stem = name[: -len(".md")]
        move(cur, posixpath.join(folder, styles[n % len(styles)].format(stem=stem) + ".md"))
    for path in ranked[renames : renames + moves]:
        move(where[path], "归档 2026/" + posixpath.basename(where[path]))
    folders: dict[str, int] = {}
    for cur in where.values():
        if "/" in cur and not cur.startswith("归档 2026/"):
            top = cur.split("/", 1)[0]
            folders[top] = folders.get(top, 0) + 1
    if folders:
        top = max(sorted(folders), key=lambda f: folders[f])
        move(top, f"Archive 2.0/{top}")
    return {o: n for o, n in where.items() if o != n}


def broken_by_moves(before: Scan, after: Scan, moved: dict[str, str]) -> list[str]:
    """Every link that went somewhere before the moves and does not go to the same file (where
    it moved) after them, as 'note: link before -> link after'."""
    out = []
    for src, ls in before.links.items():
        now = after.links.get(moved.get(src, src))
        if now is None or len(now) != len(ls):
            out.append(f"{src}: {len(ls)} links before, {len(now or [])} after")
            continue
        for (w, t), (w2, t2) in zip(ls, now, strict=True):
            if t is not None and t2 != moved.get(t, t):
                out.append(f"{src}: {w.text} -> {w2.text} ({t} -> {t2})")
    return out


def health_findings(root: Path, before: Scan) -> dict[str, list[str]]:
    """vaultwatch's health against the oracle: broken links the oracle resolves (false), orphans
    the oracle links (false), and links the oracle finds broken that health does not name
    (missed). Run with recall off (no near-duplicates) and far enough ahead that every note
    is old enough to be an orphan."""
    from datetime import date

    from server.services.health import check
    from server.vault import Vault

    vault = Vault(root, client="corpus")
    try:
        report = check(vault, duplicates=False, today=date(2999, 1, 1))
    finally:
        vault.close()
    named: dict[str, set[str]] = {}
    false_broken = []
    for f in report.by_kind("broken_link"):
        named.setdefault(f.path, set()).add(f.link or "")
        hits = [t for w, t in before.links.get(f.path, []) if w.text == f.link]
        if hits and all(t is not None for t in hits):
            false_broken.append(f"{f.path}: {f.link} ({f.reason})")
    linked = before.linked()
    false_orphans = [f.path for f in report.by_kind("orphan") if f.path in linked]
    missed = [f"{s}: {w.text}" for s, w in before.broken() if w.text not in named.get(s, set())]
    return {
        "broken": [f"{f.path}: {f.link}" for f in report.by_kind("broken_link")],
        "orphans": [f.path for f in report.by_kind("orphan")],
        "false_broken": false_broken,
        "false_orphans": false_orphans,
        "missed_broken": missed,
    }
