"""Parsing a note: frontmatter, headings with byte ranges, Unicode tags, links, title, hash."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import unicodedata
from pathlib import Path

import pytest

from server.index.doc_index import DocIndex
from server.index.watch import TreeWatcher
from server.notes.note import parse_doc

NOTE = """---
title: Sync notes
tags: [crdt, "#offline-sync"]
date: 2026-11-25
---
# Heading one

Text with #同步 and #area/sub tags, an email a@b.com#x, a url http://x.io/#frag and #123.

```python
# not a heading
x = "#not_a_tag [[NotALink]]"
```

Inline `#code_tag [[AlsoNot]]` stays code.

## Log
- first [[Other Note#Part|alias]]
- second ![[image.png]] and [doc](../folder/My%20Note.md)

### Deep
more
## 架构
中文内容 #架构
"""


def test_frontmatter_tags_headings_links() -> None:
    data = NOTE.encode()
    doc = parse_doc("notes/sync.md", data)
    assert doc.title == "Sync notes"
    assert doc.frontmatter["date"] == "2026-11-25"  # dates stay as written
    assert doc.tags == ("crdt", "offline-sync", "同步", "area/sub", "架构")
    assert [h.path for h in doc.headings] == [
        "Heading one",
        "Heading one/Log",
        "Heading one/Log/Deep",
        "Heading one/架构",
    ]
    log = doc.headings[1]
    text = NOTE
    assert text[log.start : log.end].startswith("## Log") and text[log.end :].startswith("## 架构")
    # byte ranges address the same bytes
    assert data[log.start_byte : log.end_byte].decode() == text[log.start : log.end]
    zh = doc.headings[3]
    assert data[zh.start_byte : zh.end_byte].decode() == text[zh.start : zh.end]
    targets = [(link.kind, link.target, link.heading, link.alias, link.embed) for link in doc.links]
    assert targets == [
        ("wiki", "Other Note", "Part", "alias", False),
        ("wiki", "image.png", None, None, True),
        ("md", "../folder/My Note.md", None, "doc", False),
    ]
    assert doc.hash == hashlib.sha256(data).hexdigest()[:16]


def test_title_falls_back_to_h1_then_filename() -> None:
    assert parse_doc("a/b.md", b"# From H1\n").title == "From H1"
    assert parse_doc("a/plain-name.md", b"no heading\n").title == "plain-name"


def test_crlf_note() -> None:
    data = b"---\r\ndate: 2026-01-02\r\ntags: [a]\r\n---\r\n# Title\r\n\r\n## Log\r\n- x\r\n"
    doc = parse_doc("c.md", data)
    assert doc.frontmatter == {"date": "2026-01-02", "tags": ["a"]}
    assert [h.text for h in doc.headings] == ["Title", "Log"]
    assert doc.title == "Title"


def test_broken_yaml_is_a_problem_not_a_crash() -> None:
    doc = parse_doc("b.md", b"---\ntitle: [unclosed\n---\n# Still a note\n")
    assert doc.frontmatter == {}
    assert doc.problems and "broken YAML" in doc.problems[0]
    assert doc.title == "Still a note"


def test_impossible_date_does_not_break_the_note() -> None:
    doc = parse_doc("d.md", b"---\ndate: 2026-13-45\nkind: mock\n---\nx\n")
    assert doc.frontmatter == {"date": "2026-13-45", "kind": "mock"}
    assert doc.problems == ()


def test_yaml_bomb_is_refused_quickly() -> None:
    bomb = "---\na: &a [x,x,x,x,x,x,x,x,x]\n"
    for i, name in enumerate("bcdefgh"):
        prev = "abcdefgh"[i]
        bomb += f"{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
    bomb += "---\nbody\n"
    t0 = time.perf_counter()
    doc = parse_doc("bomb.md", bomb.encode())
    assert time.perf_counter() - t0 < 5  # generous: it must not expand 9^8 nodes
    assert doc.frontmatter == {} and doc.problems


def test_invalid_utf8_is_reported() -> None:
    doc = parse_doc("x.md", b"# ok\n\xff\xfe bad bytes\n")
    assert doc.problems and "UTF-8" in doc.problems[0]
    assert doc.title == "ok"


def test_string_tags_and_unclosed_frontmatter() -> None:
    assert parse_doc("t.md", b"---\ntags: a, b c\n---\n").tags == ("a", "b", "c")
    doc = parse_doc("u.md", b"---\ntitle: x\nno closing fence\n")
    assert doc.frontmatter == {}  # not frontmatter at all


def test_index_reparses_only_changed_files(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n")
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "x.md").write_text("hidden")
    (tmp_path / "img.png").write_bytes(b"\x89PNG")
    idx = DocIndex(
        tmp_path, lambda rel, is_dir: is_dir or rel.endswith(".md"), watcher=TreeWatcher.create
    )
    docs = idx.refresh()
    assert len(docs) == 20 and idx.last.parsed == 20
    idx.refresh()
    assert idx.last.parsed == 0
    p = tmp_path / "n3.md"
    p.write_text("# Changed title\n")
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    (tmp_path / "n4.md").unlink()
    docs = idx.refresh()
    assert idx.last.parsed == 1 and idx.last.removed == 1
    assert docs["n3.md"].title == "Changed title" and "n4.md" not in docs


def test_nfd_file_names_are_listed_in_nfc(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "résumé.md")
    (tmp_path / nfd).write_text("# R\n")
    docs = DocIndex(tmp_path, lambda rel, is_dir: True).refresh()
    nfc = unicodedata.normalize("NFC", "résumé.md")
    assert list(docs) == [nfc] and docs[nfc].disk == nfd


@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "stat-walk"])
def test_index_follows_changes_behind_its_back(tmp_path: Path, watch: bool) -> None:
    """Every kind of change a human (or Obsidian, or git) makes is seen on the very next call."""
    root = tmp_path / "v"
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.md").write_text("# One\n")
    (root / "a" / "two.md").write_text("# Two\n")
    make_watcher = TreeWatcher.create if watch else None
    idx = DocIndex(root, lambda rel, is_dir: is_dir or rel.endswith(".md"), watcher=make_watcher)
    assert set(idx.refresh()) == {"a/one.md", "a/two.md"}

    (root / "a" / "one.md").write_text("# One edited\n")  # edit in place
    assert idx.refresh()["a/one.md"].title == "One edited"

    tmp = root / "a" / ".two.md.tmp"  # an editor's atomic save: write a temp file, rename over
    tmp.write_text("# Two saved atomically\n")
    os.replace(tmp, root / "a" / "two.md")
    assert idx.refresh()["a/two.md"].title == "Two saved atomically"

    (root / "b" / "deep").mkdir(parents=True)  # a new folder tree with notes in it
    (root / "b" / "deep" / "three.md").write_text("# Three\n")
    assert "b/deep/three.md" in idx.refresh()
    (root / "b" / "deep" / "four.md").write_text("# Four\n")  # ...and the new folder is watched
    assert "b/deep/four.md" in idx.refresh()

    os.rename(root / "b", root / "c")  # folder renamed
    docs = idx.refresh()
    assert "c/deep/three.md" in docs and not any(p.startswith("b/") for p in docs)

    os.rename(root / "a" / "one.md", root / "a" / "uno.md")  # file renamed
    (root / "a" / "two.md").unlink()  # file deleted
    docs = idx.refresh()
    assert "a/uno.md" in docs and "a/one.md" not in docs and "a/two.md" not in docs

    shutil.rmtree(root / "c")  # folder deleted
    assert set(idx.refresh()) == {"a/uno.md"}

    (root / "a" / "note.txt").write_text("not a note")
    (root / "a" / ".hidden.md").write_text("hidden")
    assert set(idx.refresh()) == {"a/uno.md"}
    idx.close()


def test_watched_index_matches_a_full_walk(tmp_path: Path) -> None:
    import random

    rng = random.Random(3)
    root = tmp_path / "v"
    root.mkdir()
    watched = DocIndex(root, lambda rel, is_dir: True, watcher=TreeWatcher.create)
    for step in range(300):
        d = root / f"d{rng.randint(0, 4)}"
        d.mkdir(exist_ok=True)
        f = d / f"n{rng.randint(0, 15)}.md"
        op = rng.random()
        if op < 0.6:
            f.write_text(f"# {step}\n")
        elif op < 0.8 and f.exists():
            f.unlink()
        elif op < 0.9 and f.exists():
            os.rename(f, d / f"r{step}.md")
        elif op < 0.95 and d.exists() and len(list(d.iterdir())) < 5:
            shutil.rmtree(d)
        if step % 7 == 0:
            got = {p: doc.hash for p, doc in watched.refresh().items()}
            want = {p: doc.hash for p, doc in DocIndex(root).refresh().items()}
            assert got == want, step
    watched.close()


TRICKY_VALUES = [
    "yes",
    "no",
    "on",
    "off",
    "true",
    "False",
    "~",
    "null",
    "Null",
    "0x1F",
    "0o17",
    "017",
    "1_000",
    "1:20",
    "-5",
    "+3",
    "3.0",
    ".inf",
    "-.inf",
    ".nan",
    "1e3",
    "2026-10-02",
    "2026-13-45",
    "2026-10-02T09:14",
    "C#",
    "a#b",
    "hello world",
    "'quoted'",
    '"dq"',
    "'it''s'",
    '"esc\\n"',
    "[a, b]",
    "[]",
    "[1, 2.5, true, null]",
    "[a, b,]",
    "中文 标签",
    "[同步, 架构]",
    "=",
    "a: b",
    "x #comment",
    "[a, [b]]",
    "{a: 1}",
    "|",
    ">",
    "&anchor v",
    "*alias",
    "!tag v",
    "@at",
    "`tick`",
    "%pct",
    "- item",
    "? q",
    "",
    "0",
    "00",
    "0b101",
    "1.",
    ".5",
]


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_fast_frontmatter_equals_full_yaml(value: str) -> None:
    """The fast path either declines or gives exactly what the full YAML parse gives."""
    import yaml

    from server.notes.frontmatter import FrontmatterLoader, fast_frontmatter

    fm = f"# a comment\nkey: {value}\nother: plain\n"
    try:
        full = yaml.load(fm, Loader=FrontmatterLoader)
    except yaml.YAMLError:
        full = "ERROR"
    fast = fast_frontmatter(fm)
    if fast is not None:
        assert full != "ERROR" and fast == full and type(fast["key"]) is type(full["key"])


def test_fast_frontmatter_declines_block_structures() -> None:
    from server.notes.frontmatter import fast_frontmatter

    assert fast_frontmatter("tags:\n  - a\n  - b\n") is None
    assert fast_frontmatter("a: 1\nnested:\n  b: 2\n") is None
    assert fast_frontmatter("a: 1\n  continuation\n") is None
    assert fast_frontmatter("a: 1\nb: [x, y]\nc: 'q'\n") == {"a": 1, "b": ["x", "y"], "c": "q"}


from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalar = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=15),
    st.integers(-10_000, 10_000).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["yes", "no", "true", "null", "~", "2026-10-02", "1:30", "0x10"]),
)
_value = st.one_of(
    _scalar,
    st.lists(_scalar, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
    _scalar.map(lambda x: f'"{x}"'),
    _scalar.map(lambda x: f"'{x}'"),
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), _value, max_size=6))
@example({"_": "[\xa0]"})  # YAML keeps a no-break space; str.strip() dropped it
@example({"t": "[a\u3000, b]"})
def test_fast_frontmatter_property(entries: dict[str, str]) -> None:
    import yaml

    from server.notes.frontmatter import FrontmatterLoader, fast_frontmatter

    fm = "".join(f"{k}: {v}\n" for k, v in entries.items())
    fast = fast_frontmatter(fm)
    if fast is None:
        return
    full = yaml.load(fm, Loader=FrontmatterLoader) or {}
    assert fast == full
    assert [type(v) for v in fast.values()] == [type(v) for v in full.values()]
