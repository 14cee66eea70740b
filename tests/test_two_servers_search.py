"""Two servers on one vault share one search index (Claude Desktop and Claude Code, or the
dashboard's server and a client): what either one indexed, the other finds, under its own path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from server.index.search import Wants
from server.notes.note import Doc, parse_doc
from server.vault import Vault

pytestmark = pytest.mark.anyio

NOTES = {"a.md": "# A\n\nalpha note\n", "b.md": "# B\n\nbeta note\n"}


async def found(s: Any, query: str) -> list[str]:
    res = await s.call("search_text", query=query)
    assert res["total"] == len(res["hits"]), res
    return [h["path"] for h in res["hits"]]


async def test_a_note_the_other_server_indexed_first_is_found(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(NOTES)
    async with connect(root) as a, connect(root) as b:
        assert await found(b, "alpha") == ["a.md"]  # b opens the index and maps its rows
        await a.call("create_doc", path="c.md", body="# C\n\nmangoword\n")
        (root / "d.md").write_text("# D\n\npapayaword\n", encoding="utf-8")  # the owner
        assert await found(a, "papayaword") == ["d.md"]  # a indexes d.md before b sees it
        listed = {d["path"] for d in (await b.call("list_docs"))["docs"]}
        assert {"c.md", "d.md"} <= listed
        assert await found(b, "mangoword") == ["c.md"]
        assert await found(b, "papayaword") == ["d.md"]
        assert await found(b, "alpha") == ["a.md"]


async def test_an_edit_and_a_delete_by_the_other_server_are_seen(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(NOTES)
    async with connect(root) as a, connect(root) as b:
        assert await found(b, "beta") == ["b.md"]
        assert await found(a, "beta") == ["b.md"]
        (root / "b.md").write_text("# B\n\ngammaword now\n", encoding="utf-8")
        (root / "a.md").unlink()
        assert await found(a, "gammaword") == ["b.md"]  # a re-indexes b.md, drops a.md
        assert await found(b, "gammaword") == ["b.md"]
        assert await found(b, "beta") == []
        assert await found(b, "alpha") == []


class Paths:
    """A ranker that keeps the paths the index hands it."""

    def __init__(self) -> None:
        self.matches: list[str] = []
        self.visited: list[str] = []

    def start(self, matches: list[str], titles: list[str], whole: list[str]) -> int | None:
        self.matches = sorted(matches)
        return None

    def visit(self, path: str, body: float, title: bool) -> Wants:
        self.visited.append(path)
        return Wants.ALL


def doc(root: Path, rel: str, text: str) -> Doc:
    p = root / rel
    p.write_text(text, encoding="utf-8")
    st = p.stat()
    return parse_doc(rel, p.read_bytes(), disk=rel, mtime_ns=st.st_mtime_ns, full=False)


def test_a_row_id_reused_by_the_other_server_is_never_shown_under_the_old_path(
    make_vault: Any,
) -> None:
    """Between b's sync and b's query the other server deletes the newest row and indexes
    another note, which SQLite gives the same row id: b must name that note, not the gone one
    (which could be a note b's owner made private, or one that no longer says this)."""
    root = make_vault({})
    a, b = Vault(root), Vault(root)
    try:
        x = doc(root, "x.md", "# X\n\nold words\n")
        y = doc(root, "y.md", "# Y\n\nmore old words\n")
        b.search.sync({"x.md": x, "y.md": y})
        a.search.sync({"x.md": x, "y.md": y})
        (root / "y.md").unlink()
        a.search.sync({"x.md": x})  # y.md's row, the newest, is gone
        z = doc(root, "z.md", "# Z\n\nkiwiword\n")
        a.search.sync({"x.md": x, "z.md": z})  # z.md takes the row id y.md had
        got = Paths()
        b.search.search('"kiwiword"', None, got)
        assert got.matches == ["z.md"] and got.visited == ["z.md"]
        assert b.search.best('"kiwiword"', 5).keys() == {"z.md"}
        got = Paths()
        b.search.search('"old"', None, got)
        assert got.matches == ["x.md"]
    finally:
        a.close()
        b.close()


def test_searching_after_ones_own_writes_reads_no_row_map_again(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The map is read again only when another server changed the rows: a vault of 10,000
    notes must not pay a reload per search for its own writes."""
    root = make_vault({})
    a, b = Vault(root), Vault(root)
    try:
        x = doc(root, "x.md", "# X\n\nlimeword\n")
        b.search.sync({"x.md": x})
        a.search.sync({"x.md": x})
        loads = 0
        load = b.search._load_known

        def counted() -> None:
            nonlocal loads
            loads += 1
            load()

        monkeypatch.setattr(b.search, "_load_known", counted)
        y = doc(root, "y.md", "# Y\n\nlimeword too\n")
        b.search.sync({"x.md": x, "y.md": y})
        for _ in range(3):
            got = Paths()
            b.search.search('"limeword"', None, got)
            assert got.matches == ["x.md", "y.md"]
        assert loads == 0
        a.search.sync({"x.md": x})  # the other server drops y.md
        got = Paths()
        b.search.search('"limeword"', None, got)
        assert got.matches == ["x.md"]
        assert loads == 1
    finally:
        a.close()
        b.close()
