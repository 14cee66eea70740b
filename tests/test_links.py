"""Link resolution and rewriting (server/notes/links.py) on a corpus of tricky cases: aliases,
headings, embeds, spaces, unicode names, one name in two folders, links in code, relative
`../` links, notes that move themselves."""

from __future__ import annotations

import pytest

from server.notes.links import LinkIndex, parse_links, rewrite_links

FILES = [
    "people/Ada Lovelace.md",
    "projects/engine.md",
    "projects/notes/design.md",
    "inbox/idea.md",
    "inbox/engine.md",
    "img/diagram one.png",
    "读书/三体.md",
    "index.md",
]


def move(text: str, source: str, moves: dict[str, str], files: list[str] = FILES) -> str:
    before = LinkIndex(files)
    after = LinkIndex([moves.get(f, f) for f in files])
    return rewrite_links(text, source, moves.get(source, source), moves, before, after)


def test_resolution_by_name_path_and_relative_link() -> None:
    idx = LinkIndex(FILES)
    links = parse_links(
        "[[Ada Lovelace]] [[people/Ada Lovelace|Ada]] [[ada lovelace#Life]] ![[diagram one.png]] "
        "[d](notes/design.md) [up](../index.md) [[三体]] [[nowhere]]"
    )
    got = [idx.resolve(link, "projects/engine.md") for link in links]
    assert got == [
        "people/Ada Lovelace.md",
        "people/Ada Lovelace.md",
        "people/Ada Lovelace.md",
        "img/diagram one.png",
        "projects/notes/design.md",
        "index.md",
        "读书/三体.md",
        None,
    ]


def test_a_name_in_two_folders_prefers_the_linking_notes_folder() -> None:
    idx = LinkIndex(FILES)
    (link,) = parse_links("[[engine]]")
    assert idx.resolve(link, "inbox/idea.md") == "inbox/engine.md"
    assert idx.resolve(link, "projects/notes/design.md") == "inbox/engine.md"  # shortest path
    assert len(idx.candidates(link, "index.md")) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [[Ada Lovelace]].", "see [[Ada King]]."),
        ("[[Ada Lovelace|the countess]]", "[[Ada King|the countess]]"),
        ("[[Ada Lovelace#Early life|life]]", "[[Ada King#Early life|life]]"),
        ("[[people/Ada Lovelace]]", "[[archive/Ada King]]"),
        ("![[Ada Lovelace]]", "![[Ada King]]"),
        ("[[Ada Lovelace.md]]", "[[Ada King.md]]"),
        ("[A](people/Ada%20Lovelace.md)", "[A](archive/Ada%20King.md)"),
        ("[A](<people/Ada Lovelace.md#Life>)", "[A](<archive/Ada King.md#Life>)"),
        ('[A](people/Ada%20Lovelace.md#Life "t")', '[A](archive/Ada%20King.md#Life "t")'),
        (
            "`[[Ada Lovelace]]` and\n```\n[[Ada Lovelace]]\n```\n",
            "`[[Ada Lovelace]]` and\n```\n[[Ada Lovelace]]\n```\n",
        ),
        (
            "[[nowhere]] [web](https://x.test/Ada Lovelace.md)",
            "[[nowhere]] [web](https://x.test/Ada Lovelace.md)",
        ),
    ],
)
def test_links_to_a_renamed_note(text: str, expected: str) -> None:
    assert move(text, "index.md", {"people/Ada Lovelace.md": "archive/Ada King.md"}) == expected


def test_a_note_that_moves_keeps_its_relative_links_working() -> None:
    text = "[d](notes/design.md) ![](../img/diagram%20one.png) [[engine]] [[Ada Lovelace]]"
    out = move(text, "projects/engine.md", {"projects/engine.md": "archive/2026/engine.md"})
    assert out == (
        "[d](../../projects/notes/design.md) ![](../../img/diagram%20one.png) "
        "[[engine]] [[Ada Lovelace]]"
    )
    # [[engine]] means the note itself (its own folder wins) before and after: left alone


def test_a_bare_name_made_ambiguous_by_the_move_gets_its_full_path() -> None:
    files = ["a/Plan.md", "b/Other.md", "index.md"]
    out = move("[[Plan]] and [[Other]]", "index.md", {"b/Other.md": "b/Plan.md"}, files)
    # a/Plan.md's bare link is now ambiguous; the renamed note too
    assert out == "[[a/Plan]] and [[b/Plan]]"


def test_unicode_and_embeds_of_attachments() -> None:
    out = move(
        "![[diagram one.png|300]] [[三体]]",
        "index.md",
        {"img/diagram one.png": "img/图 1.png", "读书/三体.md": "读书/三体 (刘慈欣).md"},
    )
    assert out == "![[图 1.png|300]] [[三体 (刘慈欣)]]"


def test_folder_move_rewrites_path_links_and_relative_links_inside() -> None:
    moves = {
        "projects/engine.md": "work/engine.md",
        "projects/notes/design.md": "work/notes/design.md",
    }
    assert move(
        "[[projects/notes/design]] [e](../engine.md)", "projects/notes/design.md", moves
    ) == ("[[work/notes/design]] [e](../engine.md)")
    assert move("[p](projects/notes/design.md)", "index.md", moves) == "[p](work/notes/design.md)"


def test_backlinks() -> None:
    idx = LinkIndex(FILES)
    texts = {
        "index.md": "[[Ada Lovelace]] and `[[Ada Lovelace]]`",
        "inbox/idea.md": "[x](../people/Ada%20Lovelace.md)",
        "projects/engine.md": "nothing",
    }
    got = [(src, link.target) for src, link in idx.backlinks("people/Ada Lovelace.md", texts)]
    assert got == [("inbox/idea.md", "../people/Ada Lovelace.md"), ("index.md", "Ada Lovelace")]


# Obsidian's documented form inside tables: the pipe is escaped so the table keeps its cells.
TABLE = (
    "| Link | Image |\n| --- | --- |\n"
    "| [[Ada Lovelace\\|the countess]] | ![[diagram one.png\\|100]] |\n"
    "| [[Ada Lovelace#Life\\|life]] | [[engine]] |\n"
)


def test_escaped_pipes_in_tables_are_alias_separators() -> None:
    links = parse_links(TABLE)
    got = [(lk.target, lk.heading, lk.alias, lk.embed) for lk in links]
    assert got == [
        ("Ada Lovelace", None, "the countess", False),
        ("diagram one.png", None, "100", True),
        ("Ada Lovelace", "Life", "life", False),
        ("engine", None, None, False),
    ]
    idx = LinkIndex(FILES)
    assert [idx.resolve(lk, "index.md") for lk in links[:3]] == [
        "people/Ada Lovelace.md",
        "img/diagram one.png",
        "people/Ada Lovelace.md",
    ]


def test_a_move_keeps_the_escaped_pipe_of_a_table_link() -> None:
    moves = {"people/Ada Lovelace.md": "archive/Ada King.md", "img/diagram one.png": "img/d1.png"}
    out = move(TABLE, "index.md", moves)
    assert "| [[Ada King\\|the countess]] | ![[d1.png\\|100]] |" in out
    assert "| [[Ada King#Life\\|life]] | [[engine]] |" in out


@pytest.mark.parametrize(
    ("text", "linked"),
    [
        # a run closes only on a run of the same length
        ("``a ` [[Ada Lovelace]] ``` [[engine]] `` b", []),
        ("`` x ``` y `` [[Ada Lovelace]]", ["Ada Lovelace"]),
        # an unmatched run is literal text: the links after it are links
        ("x ``` not closed [[Ada Lovelace]]", ["Ada Lovelace"]),
        # never across a blank line
        ("`open\n\n[[Ada Lovelace]] and `x`", ["Ada Lovelace"]),
        ("`one line\nnext` [[engine]]", ["engine"]),
        # the help vault's table: `` ``` `` is one span, the links after it are links
        (
            "| `==Text==` | [[Ada Lovelace\\|Highlights]] |\n"
            "| `` ``` `` | [[engine#Code blocks\\|Code blocks]] |\n"
            "| `- [ ]` | [[三体#Task lists\\|Incomplete task]] |\n"
            "| `> [!note]` | [[index]] |\n",
            ["Ada Lovelace", "engine", "三体", "index"],
        ),
    ],
)
def test_code_spans_as_commonmark_has_them(text: str, linked: list[str]) -> None:
    assert [lk.target for lk in parse_links(text)] == linked
