"""Links read the way Obsidian reads them (issue 28): every wikilink and markdown-link form it
writes, names with dots, emoji, CJK and spaces, heading links as its autocomplete writes them,
and moves that keep each link in the form it was written, as the vault's `.obsidian/app.json`
says Obsidian writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from server.notes.links import LinkIndex, LinkSettings, link_settings, parse_links, rewrite_links

FILES = [
    "v1.2 notes.md",
    "Drawings/Drawing.excalidraw.md",
    "🗂️ 02.04 Projects.md",
    "Projects/🗂️ 02.04 Projects/Plan.md",
    "读书/三体.md",
    "读书/笔记/章节 一.md",
    "docs/guide/setup.md",
    "docs/index.md",
    "img/a b.png",
    "Node.js.md",
    "index.md",
]


def resolve(text: str, source: str, files: list[str] = FILES) -> list[str | None]:
    idx = LinkIndex(files)
    return [idx.resolve(link, source) for link in parse_links(text)]


@pytest.mark.parametrize(
    ("text", "source", "want"),
    [
        ("[[v1.2 notes]]", "index.md", "v1.2 notes.md"),
        ("[[v1.2 notes#Intro|v1.2]]", "docs/index.md", "v1.2 notes.md"),
        ("![[Drawing.excalidraw]]", "index.md", "Drawings/Drawing.excalidraw.md"),
        ("[[🗂️ 02.04 Projects]]", "读书/三体.md", "🗂️ 02.04 Projects.md"),
        ("[[Node.js]]", "index.md", "Node.js.md"),
        ("[[三体#^abc123]]", "index.md", "读书/三体.md"),
        ("[[章节 一]]", "index.md", "读书/笔记/章节 一.md"),
        # markdown links: shortest path (the name alone, wherever the note is) ...
        ("[s](setup.md)", "index.md", "docs/guide/setup.md"),
        ("[c](%E7%AB%A0%E8%8A%82%20%E4%B8%80.md)", "index.md", "读书/笔记/章节 一.md"),
        ("[c](章节%20一.md#第一节)", "docs/index.md", "读书/笔记/章节 一.md"),
        # ... absolute path in vault, from a note in any folder ...
        ("[s](docs/guide/setup.md)", "读书/三体.md", "docs/guide/setup.md"),
        ("[c](<读书/笔记/章节 一.md>)", "docs/guide/setup.md", "读书/笔记/章节 一.md"),
        # ... relative paths, with and without ./ and the extension
        ("[s](guide/setup.md)", "docs/index.md", "docs/guide/setup.md"),
        ("[i](../index)", "docs/guide/setup.md", "docs/index.md"),
        ("[i](./setup.md#Install)", "docs/guide/setup.md", "docs/guide/setup.md"),
        ("![a](../img/a%20b.png)", "docs/index.md", "img/a b.png"),
        ("[[../../index]]", "docs/guide/setup.md", "index.md"),
        # a partial path: the end of the file's path
        ("[[guide/setup]]", "读书/三体.md", "docs/guide/setup.md"),
        ("[[笔记/章节 一]]", "index.md", "读书/笔记/章节 一.md"),
        ("[[/docs/index]]", "docs/guide/setup.md", "docs/index.md"),
        ("[[INDEX]]", "docs/guide/setup.md", "index.md"),
    ],
)
def test_every_form_obsidian_writes_resolves(text: str, source: str, want: str) -> None:
    assert resolve(text, source) == [want]


def test_links_in_obsidian_comments_are_not_links() -> None:
    text = "[[三体]] %% ![[nowhere#x]] %% [[Home]] %%\nhidden [[gone]]\n%% [[v1.2 notes]]"
    assert [lk.target for lk in parse_links(text)] == ["三体", "Home", "v1.2 notes"]


def test_a_wikilink_followed_by_parentheses_is_a_wikilink_and_text() -> None:
    links = parse_links("see [[三体]](the novel) and ![[a b.png]](x)")
    assert [(lk.kind, lk.target) for lk in links] == [("wiki", "三体"), ("wiki", "a b.png")]
    assert resolve("[[三体]](index.md)", "docs/index.md") == ["读书/三体.md"]


def test_dotted_names_are_notes_and_real_extensions_attachments() -> None:
    links = parse_links(
        "[[v1.2 notes]] ![[Drawing.excalidraw]] [[Node.js]] ![[a b.png]] [d](x.pdf)"
    )
    assert [lk.is_attachment for lk in links] == [False, False, False, True, True]


def test_a_name_several_files_share_is_the_one_obsidian_opens() -> None:
    # as getFirstLinkpathDest was observed to pick (Obsidian 1.13.7): the root's exact path,
    # else the linking note's own folder (not an ancestor's), else the shortest path string
    files = ["a/Plan.md", "b/Plan.md", "Plan.md", "a/x.md"]
    assert resolve("[[Plan]] [p](Plan.md) [[nowhere]] [n](nowhere.md)", "a/x.md", files) == [
        "Plan.md",
        "Plan.md",
        None,
        None,
    ]
    files = ["a/Plan.md", "b/Plan.md", "a/x.md"]
    assert resolve("[[Plan]] [p](Plan.md)", "a/x.md", files) == ["a/Plan.md", "a/Plan.md"]
    files = ["a/b/Note.md", "zzzz/Note.md", "zzzz/deep/x.md", "b/Note.md", "x/b/Note.md"]
    assert resolve("[[Note]]", "zzzz/deep/x.md", files) == ["b/Note.md"]
    assert resolve("[[Note]]", "zzzz/deep/x.md", files[:3]) == ["a/b/Note.md"]
    # a path from the root wins over the same path beside the linking note
    assert resolve("[[b/Note]]", "x/y.md", files) == ["b/Note.md"]


def move(
    text: str,
    source: str,
    moves: dict[str, str],
    files: list[str] = FILES,
    settings: LinkSettings | None = None,
) -> str:
    before = LinkIndex(files)
    after = LinkIndex([moves.get(f, f) for f in files])
    out = rewrite_links(text, source, moves.get(source, source), moves, before, after, settings)
    # whatever the form, every link that resolved before resolves to where its file went
    for old, new in zip(parse_links(text), parse_links(out), strict=True):
        was = before.resolve(old, source)
        if was is not None:
            assert after.resolve(new, moves.get(source, source)) == moves.get(was, was), (old, new)
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # shortest stays shortest: the name alone, whatever folder the note went to
        ("[s](setup.md)", "[s](install.md)"),
        ("[[setup|the setup]]", "[[install|the setup]]"),
        # absolute stays absolute, relative stays relative
        ("[s](docs/guide/setup.md)", "[s](manual/install.md)"),
        ("[s](guide/setup.md#Step%201)", "[s](../manual/install.md#Step%201)"),
        ("[s](./guide/setup.md)", "[s](../manual/install.md)"),
        ("[[docs/guide/setup#Step 1]]", "[[manual/install#Step 1]]"),
        ("[[/docs/guide/setup]]", "[[/manual/install]]"),
        ("[[guide/setup]]", "[[../manual/install]]"),
        # encoded as written
        ("[s](<guide/setup.md>)", "[s](<../manual/install.md>)"),
    ],
)
def test_a_move_keeps_each_link_in_its_form(text: str, expected: str) -> None:
    moves = {"docs/guide/setup.md": "manual/install.md"}
    assert move(text, "docs/index.md", moves) == expected


def test_dotted_emoji_and_cjk_names_are_renamed_everywhere() -> None:
    moves = {
        "v1.2 notes.md": "archive/v1.3 notes.md",
        "Drawings/Drawing.excalidraw.md": "Drawings/Plan.excalidraw.md",
        "🗂️ 02.04 Projects.md": "🗂️ 02.05 Projects.md",
        "读书/笔记/章节 一.md": "读书/章节 二.md",
    }
    text = (
        "[[v1.2 notes#Intro|v1.2]] ![[Drawing.excalidraw]] [[🗂️ 02.04 Projects]] "
        "[c](%E7%AB%A0%E8%8A%82%20%E4%B8%80.md) [c](章节%20一.md)"
    )
    assert move(text, "index.md", moves) == (
        "[[v1.3 notes#Intro|v1.2]] ![[Plan.excalidraw]] [[🗂️ 02.05 Projects]] "
        "[c](%E7%AB%A0%E8%8A%82%20%E4%BA%8C.md) [c](章节%20二.md)"
    )


def test_a_name_made_ambiguous_follows_new_link_format() -> None:
    files = ["a/Plan.md", "b/Other.md", "c/index.md"]
    moves = {"b/Other.md": "b/Plan.md"}
    text = "[[Plan]] [p](Plan.md)"
    assert move(text, "c/index.md", moves, files) == "[[a/Plan]] [p](a/Plan.md)"
    relative = LinkSettings("relative", True)
    assert move(text, "c/index.md", moves, files, relative) == "[[../a/Plan]] [p](../a/Plan.md)"


def test_a_root_note_moving_keeps_folder_paths_as_the_vault_writes_them() -> None:
    files = ["index.md", "docs/guide/setup.md"]
    moves = {"index.md": "archive/index.md"}
    text = "[s](docs/guide/setup.md)"
    # Obsidian's default (shortest) wrote this as a path from the root: it stays one
    assert move(text, "index.md", moves, files) == text
    # a vault that writes relative links wrote a relative path: it follows the note
    relative = LinkSettings("relative", True)
    assert move(text, "index.md", moves, files, relative) == "[s](../docs/guide/setup.md)"


def test_link_settings_are_read_from_app_json(tmp_path: Path) -> None:
    assert link_settings(tmp_path) == LinkSettings("shortest", False)
    (tmp_path / ".obsidian").mkdir()
    app = tmp_path / ".obsidian" / "app.json"
    app.write_text(json.dumps({"newLinkFormat": "relative", "useMarkdownLinks": True}))
    assert link_settings(tmp_path) == LinkSettings("relative", True)
    app.write_text("{broken")
    assert link_settings(tmp_path) == LinkSettings("shortest", False)


def test_a_move_in_a_relative_vault_through_the_owner_action(make_vault: Any) -> None:
    from app.services.move_action import apply_move, plan_move

    root = make_vault(
        {
            ".obsidian/app.json": '{"newLinkFormat": "relative", "useMarkdownLinks": true}',
            "docs/index.md": "[s](setup.md) [t](../top.md)\n",
            "docs/setup.md": "# Setup\n",
            "top.md": "[i](docs/index.md)\n",
        }
    )
    plan = plan_move(root, "docs/setup.md", "manual/setup.md")
    assert plan.edits["docs/index.md"][1] == "[s](../manual/setup.md) [t](../top.md)\n"
    apply_move(root, plan)
    plan = plan_move(root, "top.md", "a/top.md")
    assert plan.edits["a/top.md"][1] == "[i](../docs/index.md)\n"
    assert "[t](../a/top.md)" in plan.edits["docs/index.md"][1]


def test_hex_colours_in_html_are_not_tags() -> None:
    from server.notes.note import parse_doc

    doc = parse_doc(
        "a.md",
        (
            b'<span style="color: #ff0000">red</span> #real\n'
            b'<font color= #00ff00>x</font>\n<div\n  style="background: #123abc">\n</div> #also\n'
        ),
    )
    assert doc.tags == ("real", "also")


def test_health_takes_heading_links_as_obsidians_autocomplete_writes_them(
    make_vault: Any,
) -> None:
    from server.services.health import check_root

    root = make_vault(
        {
            "版本.md": (
                "# 版本\n\n## dv版本0.5.3\n\n## Q&A: why?\n\n## 🎯 Goals\n\n"
                "![[pic.png]]^shot\n"  # a block id right after an embed, as Obsidian's help has
            ),
            "pic.png": b"\x89PNG",
            "links.md": (
                "[[版本#dv版本0 5 3]] [[版本#Q A why]] [[版本#Goals]] [[v1.2 notes]] "
                "![[Drawing.excalidraw]] [x](版本.md) [[版本#^shot]] [[版本#nowhere]]\n"
                "Made from a template: [[<% tp.date.now() %>]] [[{{date}}]]\n"
            ),
            "v1.2 notes.md": "[[links]]\n",
            "Drawing.excalidraw.md": "[[links]]\n",
        }
    )
    report = check_root(root)
    broken = [f.link for f in report.by_kind("broken_link")]
    assert broken == ["[[版本#nowhere]]"]
    assert report.by_kind("orphan") == []


@pytest.mark.anyio
async def test_get_context_shows_no_hex_colour_as_a_tag(connect: Any, make_vault: Any) -> None:
    root = make_vault(
        {
            "a.md": '# A\n\n<span style="color: #ff0000">red</span> #projectx\n',
            "b.md": "# B\n\n<font color= #00ff00>green</font> #projectx\n",
        }
    )
    async with connect(root) as s:
        ctx = await s.call("get_context")
    text = json.dumps(ctx)
    assert "projectx" in text
    assert "ff0000" not in text and "00ff00" not in text


def test_a_relative_path_a_root_path_would_shadow_gets_its_dot() -> None:
    # `guide/b.md` from docs/ would open the root's guide/b.md: the link is written ./guide/b.md
    files = ["docs/index.md", "docs/guide/a.md", "guide/b.md"]
    moves = {"docs/guide/a.md": "docs/guide/b.md"}
    assert move("[a](guide/a.md) [[guide/a]]", "docs/index.md", moves, files) == (
        "[a](./guide/b.md) [[./guide/b]]"
    )


def test_the_delete_preview_lists_every_link_obsidian_follows(make_vault: Any) -> None:
    from app.services.remove_action import plan_remove

    root = make_vault(
        {
            "notes/v1.2 notes.md": "# v1.2\n",
            "a.md": "[[v1.2 notes]] and [[v1.2 notes#Intro|intro]]\n",
            "deep/b.md": "text\n[n](v1.2%20notes.md) [n](<notes/v1.2 notes.md>)\n",
            "c.md": "%% [[v1.2 notes]] %% `[[v1.2 notes]]`\n",
        }
    )
    plan = plan_remove(root, "notes/v1.2 notes.md")
    assert [(src, line) for src, line, _ in plan.backlinks] == [
        ("a.md", 1),
        ("a.md", 1),
        ("deep/b.md", 2),
        ("deep/b.md", 2),
    ]
