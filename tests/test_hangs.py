"""Nothing holds the vault for long: a failing edit_text's hint, a query of thousands of terms."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from server import edits
from server.edits import EditError, closest_line, edit_text
from server.gitrepo import state_dir

from .conftest import git

pytestmark = pytest.mark.anyio

TABLE_ROW = "| 2026-11-01 | mock | ok |"


def misquoted_table(chars: int) -> tuple[str, str]:
    """A note whose fifth line is a long table-like run, and an `old` that misquotes it every
    50 characters: the shape that made difflib's closest-line hint take 45 s at 5 KB."""
    line = (TABLE_ROW * (chars // len(TABLE_ROW) + 1))[:chars]
    old = "".join(c + ("~" if i % 50 == 49 else "") for i, c in enumerate(line))
    return f"# Note\n\nintro line\n\n{line}\n\nanother line\n", old


def test_the_closest_line_is_named_for_the_usual_mistakes() -> None:
    text = (
        "# Week\n\n## Log\n- Mon: one\n- Tue: two\n\n"
        "Offline sync merges each replica's changes with a causal clock, so no write is lost.\n"
        "离线同步用因果时钟合并每个副本的修改。\n"
    )
    cases = {
        "- Mon: uno": 4,  # a typo in a short line
        "offline sync merges each replica changes with a casual clock": 7,  # misquoted prose
        "离线同步用因果时钟合并副本修改": 8,  # Chinese, no spaces
        "  - Tue:   two  ": 5,  # spacing
    }
    for old, line in cases.items():
        with pytest.raises(EditError) as exc:
            edit_text(text, old, "x")
        assert exc.value.code == "no_match"
        assert exc.value.later is not None
        assert f"line {line}:" in exc.value.later(), old
    with pytest.raises(EditError) as exc:
        edit_text(text, "nothing like anything here", "x")
    assert exc.value.later is not None and exc.value.later() == ""


def test_the_hint_shows_where_a_long_line_matches() -> None:
    """A misquote from the middle of a 10 KB paragraph: the hint shows that part of the line."""
    words = [f"w{i:04d}" for i in range(2000)]
    line = " ".join(words)
    old = " ".join(words[1000:1030]).replace("w1010", "w1O10")
    best = closest_line(f"# T\n\n{line}\n", old)
    assert best is not None
    n, shown = best
    assert n == 3 and "w1000 w1001" in shown and len(shown) <= 210


def test_the_hint_is_bounded_on_long_repetitive_lines() -> None:
    """10 KB misquoted table line (523 s with difflib) and a 1.5 MB note of short lines: each hint
    comes back, and names the right line. Bounded wait, not a timing: the old code did not finish
    the first in 60 s."""
    text, old = misquoted_table(10_000)
    big = "".join(f"- item {i} of a long list\n" for i in range(60_000)) + "- the one I meant\n"
    results: list[Any] = []

    def run() -> None:
        results.append(closest_line(text, old))
        results.append(closest_line(big, "- the one I mint"))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the closest-line hint did not come back within 60 s"
    assert results[0] is not None and results[0][0] == 5
    assert results[0][1].startswith(TABLE_ROW[:10]) and len(results[0][1]) <= 210
    assert results[1] == (60_001, "- the one I meant")


def lock_is_free(root: Path) -> bool:
    """Whether another process could take the vault's write lock right now."""
    fd = os.open(state_dir(root) / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing the descriptor drops the lock if we took it
    return True


async def test_the_hint_is_built_after_the_write_lock_is_released(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other writer on the vault (other servers, the dashboard's revert) waits for the
    lock, so the hint, however long, is built after it is released. The real closest_line runs;
    the wrapper only looks at the lock while it does."""
    text, old = misquoted_table(2_000)
    root = make_vault({"notes/table.md": text, "notes/other.md": "# Other\n"})
    seen: list[bool] = []
    real = edits.closest_line

    def observed(text: str, old: str) -> tuple[int, str] | None:
        seen.append(lock_is_free(root))
        return real(text, old)

    monkeypatch.setattr(edits, "closest_line", observed)
    async with connect(root) as a, connect(root) as b:
        msg = await a.error("edit_text", path="notes/table.md", old=old, new="x")
        assert "rejected (no_match)" in msg and "The closest line is line 5:" in msg
        assert "\x00" not in msg
        # in a batch too, where the hint sits inside the merged message
        batch = await a.error("batch", ops=[
            {"tool": "edit_text", "args": {"path": "notes/table.md", "old": old, "new": "x"}},
            {"tool": "edit_text", "args": {"path": "notes/other.md", "old": "# Othre", "new": "y"}},
        ])  # fmt: skip
        assert "operation 1 (edit_text): old text was not found" in batch
        assert "The closest line is line 5:" in batch and "line 1: '# Other'" in batch
        assert "\x00" not in batch
        await b.call("append_section", path="notes/other.md", heading="Log", content="- b")
    assert seen == [True, True, True]
    assert git(root, "log", "--format=%s").split("\n")[0] == "append_section: notes/other.md § Log"


async def test_a_query_of_thousands_of_terms_is_refused_with_the_limit(
    connect: Any, make_vault: Any
) -> None:
    """10,000 prefix terms took 18-42 s holding the search index; one 1 MB term 12-36 s."""
    root = make_vault({"notes/a.md": "# A\n\noffline sync merges replicas\n"})
    async with connect(root) as s:
        many = " ".join(f"w{i}" for i in range(10_000))
        msg = await s.error("search_text", query=many)
        assert "10,000 words" in msg and "at most 64 terms" in msg and "distinctive" in msg
        msg = await s.error("search_text", query=" ".join(f"w{i}" for i in range(100)))
        assert "the query has 100 terms" in msg and "at most 64 terms" in msg
        msg = await s.error("search_text", query="a" * 1_000_000)
        assert "1,000,000 characters" in msg and "at most 1,000 characters" in msg
        # the limit itself is searchable, and so is a long Chinese phrase within the length cap
        ok = await s.call("search_text", query="offline " + " ".join(["sync"] * 63))
        assert [h["path"] for h in ok["hits"]] == ["notes/a.md"]
        await s.call("search_text", query='"' + "离线同步" * 200 + '"')
