"""The diff renderer on its own: the anchored line matcher yields a correct edit script for any
input, word marks land on the changed words, big changes fall back to plain colours."""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.services.history import FileChange, commit_changes_upto
from app.ui.widgets.diffview import (
    RICH_LINES,
    WORD_ADD,
    LineMatcher,
    render_commit,
    render_lines,
    render_split,
)

lines = st.lists(
    st.sampled_from(["a", "b", "c", "# h", "", "- x", "unique1", "unique2"]), max_size=40
)


def apply(ops: Sequence[tuple[str, int, int, int, int]], a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for op, a1, a2, b1, b2 in ops:
        if op == "equal":
            assert a[a1:a2] == b[b1:b2]
            out += a[a1:a2]
        else:
            out += b[b1:b2]
    return out


@settings(max_examples=300, deadline=None)
@given(lines, lines)
def test_the_opcodes_turn_old_into_new(a: list[str], b: list[str]) -> None:
    ops = LineMatcher(a, b).get_opcodes()
    assert apply(ops, a, b) == b
    # contiguous and complete on both sides
    if not ops:
        assert a == b == []
        return
    assert (ops[0][1], ops[0][3]) == (0, 0) and (ops[-1][2], ops[-1][4]) == (len(a), len(b))
    for (_, _, a2, _, b2), (_, n1, _, m1, _) in itertools.pairwise(ops):
        assert (a2, b2) == (n1, m1)


def test_a_long_note_with_every_other_line_changed_keeps_every_unchanged_line() -> None:
    old = [f"line {k}" for k in range(5_000)]
    new = [f"line {k}{' (edited)' if k % 2 else ''}" for k in range(5_000)]
    ops = LineMatcher(old, new).get_opcodes()
    kept = sum(a2 - a1 for op, a1, a2, _, _ in ops if op == "equal")
    # as many as difflib's own answer (2,500: every unchanged line), which takes difflib 35 s
    assert kept == 2_500


def test_moved_block_is_matched_on_its_unique_lines() -> None:
    old = ["intro", "## A", "alpha", "## B", "beta", "end"]
    new = ["intro", "## B", "beta", "## A", "alpha", "end"]
    assert apply(LineMatcher(old, new).get_opcodes(), old, new) == new


def _plain(change: FileChange, **kw: object) -> list[str]:
    return [c.plain for c in render_lines([change], **kw)]  # type: ignore[arg-type]


def test_unified_diff_marks_the_changed_word() -> None:
    ch = FileChange(
        "n.md", "M", None, "# T\n\nthe quick fox\nsame\n", "# T\n\nthe slow fox\nsame\n"
    )
    out = render_lines([ch])
    text = [c.plain for c in out]
    assert text[0] == "MODIFIED  n.md"
    assert "- the quick fox" in text and "+ the slow fox" in text
    added = out[text.index("+ the slow fox")]
    marked = [added.plain[s.start : s.end] for s in added.spans if s.style == WORD_ADD]
    assert marked == ["slow"]


def test_added_and_renamed_files_are_titled() -> None:
    assert _plain(FileChange("new.md", "A", None, "", "x\n"))[:3] == [
        "ADDED  new.md",
        "@@ -1,0 +1,1 @@",
        "+ x",
    ]
    assert _plain(FileChange("b.md", "R", "a.md", "x\n", "x\n"))[:2] == [
        "RENAMED  a.md → b.md",
        "(no text change)",
    ]


def test_side_by_side_puts_old_left_and_new_right() -> None:
    ch = FileChange("n.md", "M", None, "keep\nold line\n", "keep\nnew line\n")
    row = next(t for t in _plain(ch, split=True, width=60) if "old line" in t)
    left, right = row.split("│")
    assert "old line" in left and "new line" in right


def test_a_big_change_drops_syntax_colours_but_keeps_every_line() -> None:
    n = RICH_LINES + 100
    ch = FileChange(
        "big.md",
        "M",
        None,
        "".join(f"# {k}\n" for k in range(n)),
        "".join(f"# {k}!\n" for k in range(n)),
    )
    out = render_lines([ch], context=0)
    assert sum(1 for c in out if c.plain.startswith("+ ")) == n
    heading = next(c for c in out if c.plain == "+ # 0!")
    assert not any(s.style == "bold" for s in heading.spans)  # no markdown colours past the limit
    small = render_lines([FileChange("s.md", "M", None, "# 0\n", "# 0!\n")])
    assert any(s.style == "bold" for s in next(c for c in small if c.plain == "+ # 0!").spans)


def _divider_cells(row: str) -> int:
    from rich.cells import cell_len

    return cell_len(row[: row.index("│")])


def test_side_by_side_wraps_in_step_and_measures_cells() -> None:
    old = "---\ntags: [system-design, 面试]\n---\n# 离线同步\n\n" + "A long prose line. " * 8 + "\n"
    new = old.replace("面试]", "面试, crdt]") + "closed: 2026-12-03\n"
    ch = FileChange("study/离线同步.md", "M", None, old, new)
    rows = _plain(ch, split=True, width=60)
    assert rows[0] == "MODIFIED  study/离线同步.md"  # a file label, as in the unified view
    assert rows[1].startswith("@@ -1,") and "+1," in rows[1]  # hunks with line numbers
    body = [r for r in rows if "│" in r]
    assert not any("…" in r for r in rows)  # nothing is cut ...
    assert any("crdt]" in r.split("│")[1] for r in body)  # ... a tag added at the end shows
    assert any("closed: 2026-12-03" in r.split("│")[1] for r in body)
    # the divider stays in one column on Chinese lines and on wrapped ones
    assert {_divider_cells(r) for r in body} == {_divider_cells(body[0])}
    for side in (0, 1):  # every word of the wrapped prose line, in order, on both sides
        text = " ".join(" ".join(r.split("│")[side].split()) for r in body)
        assert text.count("A long prose line.") == 8


def test_wrapped_unified_lines_keep_their_gutter() -> None:
    """A wrapped changed line: `+` on its first row only, its other rows blank under the gutter
    in the line's colours (a repeated `+` read as two changed lines: audit 3 N10)."""
    from textual.content import Content

    from app.ui.widgets.lines import hang

    ch = FileChange("n.md", "M", None, "a\n", "a\n" + "added words " * 10 + "\n")
    added = next(c for c in render_lines([ch]) if c.plain.startswith("+ "))
    rows = hang(added, 30)
    assert len(rows) > 1 and rows[0].plain.startswith("+ ")
    assert all(r.plain.startswith("  ") for r in rows[1:]), [r.plain for r in rows]
    # the pad under the gutter keeps the added line's colours (it still reads as one line)
    assert all(any(sp.start == 0 and "diff-added" in str(sp.style) for sp in r.spans) for r in rows)
    assert all(r.cell_length <= 30 for r in rows)
    assert " ".join(r.plain[2:].strip() for r in rows).split() == ["added", "words"] * 10
    other = hang(Content("abc123  a long commit subject that goes on past the edge"), 30)
    assert [r.plain[:2] for r in other[1:]] == ["  "] * (len(other) - 1)
    # an indented line (the context preview's YAML) hangs under its own text, Chinese too
    nested = hang(Content("      title: " + "离线同步与冲突解决" * 4), 30)
    assert len(nested) > 1 and all(r.cell_length <= 30 for r in nested)
    assert all(r.plain.startswith("      ") and r.plain[6] != " " for r in nested[1:])
    assert "".join(r.plain.strip() for r in nested) == "title: " + "离线同步与冲突解决" * 4


def test_a_commit_of_thousands_of_files_is_shown_in_part_and_says_so(tmp_path: Path) -> None:
    """An import commit of a whole vault: the pane reads and draws a bounded part of it, names
    how many files it left out, and the jump marks point at the files it drew."""
    vault = tmp_path / "v"
    vault.mkdir()
    for i in range(400):
        (vault / f"n{i:03}.md").write_text(f"# Note {i}\n\n" + "a line\n" * 30)
    subprocess.run(["git", "init", "-q"], cwd=vault, check=True)
    subprocess.run(["git", "add", "-A"], cwd=vault, check=True)
    subprocess.run(
        ["git", "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "import"],
        cwd=vault,
        check=True,
    )
    changes, total = commit_changes_upto(vault, "HEAD", 100)
    assert (len(changes), total) == (100, 400)
    lines, marks = render_commit(changes, total, most_lines=500)
    text = [c.plain for c in lines]
    shown = len(marks["file"])
    assert 0 < shown < 100 and len(lines) < 600
    assert all(text[i].startswith("ADDED") for i in marks["file"])
    assert text[-1] == f"… {400 - shown} more files not shown: this commit changed 400 files " + (
        "(git show --stat lists them all)"
    )
    every, n = commit_changes_upto(vault, "HEAD", None)
    assert n == 400 and len(every) == 400
    small, marks = render_commit(every[:1], 1)
    assert "more file" not in small[-1].plain and marks["file"] == [0]


def test_chinese_prose_wraps_between_characters_in_the_split_diff_and_pairs() -> None:
    """Audit 3 N9: a Chinese line wider than its half wraps between characters (it wrapped only
    at spaces: `- ` alone on a row, the sides out of step), never before `，。」`, and each
    row is exactly half wide on both sides."""
    from rich.cells import cell_len

    old = "## 要点\n- 第一，先把问题定义清楚，再讨论方案；不要一上来就比较工具。\n"
    new = "## 要点\n- 第一，先把行程目的定清楚：看红叶还是吃东西。\n"
    rows = render_split(FileChange("n.md", "M", None, old, new), 60)
    body = [r.plain for r in rows if "│" in r.plain]
    halves = {cell_len(r.split("│")[0]) for r in body}
    assert len(halves) == 1, halves
    left = [r.split("│")[0].rstrip() for r in body]
    assert "-" not in [x.strip() for x in left], left  # the mark never alone on a row
    for side in (0, 1):
        for r in body:
            text = r.split("│")[side].strip()
            assert not text or text[0] not in "，。；：」", (side, text)
    joined = "".join(r.split("│")[0].strip() for r in body)
    assert "第一，先把问题定义清楚，再讨论方案；不要一上来就比较工具。" in joined.replace(" ", "")


def test_one_wrapping_rule_for_cells_and_cjk() -> None:
    """app.services.cell_wrap: rows within the width in cells, breaks between CJK characters and at
    spaces, never before closing or after opening punctuation, a long URL cut at the width."""
    from rich.cells import cell_len

    from app.services.cell_wrap import wrap_text

    text = "他说：「先把问题定义清楚。」然后再讨论方案，最后写 CRDT notes down."
    for width in range(8, 30):  # narrower, `楚。」` (6 cells) alone must be cut
        rows = wrap_text(text, width)
        assert all(cell_len(r) <= width for r in rows), (width, rows)
        assert "".join(rows).replace(" ", "") == text.replace(" ", "")
        assert all(r[0] not in "，。」：" for r in rows[1:] if r), (width, rows)
        assert all(r[-1] not in "「" for r in rows if r), (width, rows)
    assert wrap_text("see https://example.com/" + "a" * 40, 20)[1].startswith("https:")
