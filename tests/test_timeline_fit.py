"""Timeline cells cut tight around wide characters: a Chinese character that does not fit
before the `…` leaves its spare cell after the ellipsis, not a space before it
(`2026-09-01-孤立 …`, `tag '编 …` were seen at 120 columns)."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.cells import cell_len
from textual.content import Content

from app.services.feed import Row
from app.ui.widgets.cells import fit
from app.ui.widgets.timeline import cells, fit_line, widths

WHEN = datetime(2026, 12, 4, 12, 29, 51, tzinfo=UTC)


def test_fit_cuts_right_after_the_last_character_that_fits() -> None:
    for text in ("2026-09-01-孤立的想法.md  想法/", "tag '编程' is not in the vocabulary", "ab孤c"):
        for width in range(1, cell_len(text) + 3):
            got = fit(Content(text), width).plain
            assert cell_len(got) == width, (text, width, got)
            if cell_len(text) <= width:
                assert got == text + " " * (width - cell_len(text))
                continue
            kept = got.rstrip(" ")
            assert kept.endswith("…"), (text, width, got)
            head = kept[:-1]
            assert text.startswith(head), (text, width, got)
            # tight: the next character would not have fitted before the ellipsis
            assert cell_len(head) + 1 + cell_len(text[len(head)]) > width, (text, width, got)


def test_timeline_lines_have_no_space_before_the_ellipsis() -> None:
    rows = [
        Row(
            "e:1",
            WHEN,
            "rejected",
            "claude-code",
            ("想法/2026-12-04-新想法.md",),
            "create_doc: unknown_tag: tag '编程' is not in the vocabulary",
        ),
        Row(
            "e:2",
            WHEN,
            "conflict",
            "claude-code",
            ("想法/2026-09-01-孤立的想法.md",),
            "update_frontmatter: the note changed after the AI read it; nothing written",
        ),
    ]
    for width in range(60, 201):
        for row in rows:
            line = fit_line(cells(row, WHEN), width)
            assert line.cell_length == width
            text = line.plain
            wide_then_gap = [
                i
                for i in range(1, len(text) - 1)
                if text[i : i + 2] == " …" and cell_len(text[i - 1]) == 2
            ]
            assert not wide_then_gap, (width, text)
            assert "立 …" not in line.plain and "编 …" not in line.plain, (width, line.plain)


def test_a_narrow_note_column_keeps_the_file_name_whole_or_cut_in_its_middle() -> None:
    for path in ("项目/二〇二六年/第四季度/离线同步设计.md", "资料/读书笔记/第07章-读书笔记.md"):
        row = Row("c:1", WHEN, "revert", "王小明", (path,), "Revert")
        for width in range(80, 201):
            note_w = widths(width)[3]
            note = fit(cells(row, WHEN, None, note_w)[3], note_w).plain.rstrip(" ")
            name = note.split("  ")[0]
            assert name.endswith(".md"), (width, note)  # the extension stays: cut in the middle
            assert not note.endswith(" …"), (width, note)  # no folder shown as a lone …
