"""The shell review as owners use `git log -p` (issue 33, audit 3 N24): one note by path, who
wrote a run of lines said once above it, colour and a pager on a terminal only, NO_COLOR
respected; `vaultwatch --help` describes each command; revert takes one SHA and says so."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import vaultwatch_cli as run

pytestmark = pytest.mark.anyio

VAULTWATCH = str(Path(sys.executable).parent / "vaultwatch")


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault({"w.md": "# W\n\n## Log\n- one\n", "a.md": "# A\n\n## Log\n"})


async def ai_writes(connect: Any, vault: Path) -> dict[str, Any]:
    async with connect(vault) as s:
        w = await s.call("append_section", path="w.md", heading="Log", content="- two\n- three")
        await s.call("append_section", path="a.md", heading="Log", content="- in a")
    return w


def on_a_terminal(vault: Path, *args: str, env: dict[str, str]) -> str:
    """`vaultwatch ARGS` with stdout on a pseudo-terminal (24 rows): what it printed there."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [VAULTWATCH, *args],
        cwd=vault,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        env={**os.environ, "VAULTWATCH_SEMANTIC": "off", "COLUMNS": "80", "LINES": "24", **env},
    )
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        proc.wait(30)
        assert proc.returncode == 0, seen.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    return seen.decode(errors="replace")


async def test_review_one_note_with_whose_lines_said_once(connect: Any, vault: Path) -> None:
    w = await ai_writes(connect, vault)
    r = run(vault, "review", "w.md")
    assert r.returncode == 0, r.stderr
    assert "w.md" in r.stdout and "a.md" not in r.stdout
    who = f"┌ AI {w['commit'][:8]} append_section"
    assert r.stdout.count(who) == 1, r.stdout  # once above the run of two lines
    assert "  + - two\n  + - three\n" in r.stdout
    assert "⟵" not in r.stdout  # no suffix on every line
    assert "\x1b[" not in r.stdout  # piped: plain
    both = run(vault, "review", str(vault), "a.md")
    assert both.returncode == 0 and "a.md" in both.stdout and "w.md" not in both.stdout
    nope = run(vault, "review", "nope.md")
    assert nope.returncode == 1 and "nope.md: no AI changes to review" in nope.stderr


async def test_review_colours_and_pages_on_a_terminal_only(
    connect: Any, vault: Path, tmp_path: Path
) -> None:
    async with connect(vault) as s:
        await s.call(
            "append_section",
            path="w.md",
            heading="Log",
            content="\n".join(f"- line {i}" for i in range(40)),
        )
    assert "\x1b[32m" in run(vault, "review", "--color=always").stdout
    assert "\x1b[" not in run(vault, "review").stdout
    seen = tmp_path / "paged"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {seen}\necho PAGED\n")
    pager.chmod(0o755)
    shown = on_a_terminal(vault, "review", env={"PAGER": str(pager)})
    assert "PAGED" in shown, shown[-500:]
    assert "\x1b[32m  + - line 0" in seen.read_text()  # colour on a terminal, through the pager
    plain = on_a_terminal(vault, "review", env={"PAGER": str(pager), "NO_COLOR": "1"})
    assert "PAGED" in plain
    assert "\x1b[" not in seen.read_text()
    never = on_a_terminal(vault, "review", "--color=never", env={"PAGER": str(pager)})
    assert "PAGED" in never and "\x1b[" not in seen.read_text()


def test_help_describes_each_command_and_revert_takes_one_sha(vault: Path) -> None:
    h = run(vault, "--help")
    assert h.returncode == 0
    for name in ("review", "revert", "mv", "rm", "reads", "context", "stats", "health"):
        line = next((ln for ln in h.stdout.splitlines() if ln.strip().startswith(name + " ")), "")
        assert len(line.split()) > 2, (name, h.stdout)
    rh = run(vault, "revert", "--help")
    assert "[VAULT] SHA [--path PATH]" in rh.stdout and "SHA ...]" not in rh.stdout
    two = run(vault, "revert", "abc123", "def456")
    assert two.returncode == 1 and "revert takes one commit" in two.stderr, two.stderr


async def test_undo_one_hunk_from_the_shell_with_the_dashboards_refusals(
    connect: Any, vault: Path
) -> None:
    from .conftest import git

    w = await ai_writes(connect, vault)
    async with connect(vault) as s:
        a2 = await s.call("append_section", path="a.md", heading="Log", content="- ai on a")
    (vault / "a.md").write_text((vault / "a.md").read_text().replace("- ai on a", "- mine now"))
    listed = run(vault, "review", "w.md")
    assert "hunk 1 of 1" in listed.stdout
    head = git(vault, "rev-parse", "HEAD")
    for args, why in (
        (["undo", w["commit"][:8], "--path", "w.md", "--hunk", "2"], "has no hunk 2"),
        (["undo", a2["commit"][:8], "--path", "w.md", "--hunk", "1"], "has no lines of"),
        # the owner changed a line the AI wrote there: refused as the dashboard refuses it
        (["undo", a2["commit"][:8], "--path", "a.md", "--hunk", "1"], "undo refused"),
    ):
        r = run(vault, *args)
        assert r.returncode == 1 and why in r.stderr, (args, r.stderr)
    assert git(vault, "rev-parse", "HEAD") == head
    ok = run(vault, "undo", w["commit"][:8], "--path", "w.md", "--hunk", "1")
    assert ok.returncode == 0, ok.stderr
    assert (vault / "w.md").read_text() == "# W\n\n## Log\n- one\n"
    assert "Vaultwatch-Action: undo" in git(vault, "log", "-1", "--format=%B")


async def test_review_wraps_cjk_prose_on_a_terminal_with_the_gutter_once(
    connect: Any, vault: Path, tmp_path: Path
) -> None:
    """A Chinese line longer than the terminal is wrapped between characters (the pager has no
    space to break at), the rows after the first indented under the text, not given another
    `+`; piped, the line stays whole as git's does."""
    import re

    from app.services.cell_wrap import cells

    prose = "行前准备清单：护照、签证、保险、现金、充电器、转换插头、常用药品、雨伞、" * 3
    async with connect(vault) as s:
        await s.call("append_section", path="w.md", heading="Log", content=f"- {prose}")
    seen = tmp_path / "paged"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {seen}\n")
    pager.chmod(0o755)
    on_a_terminal(vault, "review", "w.md", env={"PAGER": str(pager), "LINES": "5"})
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", r) for r in seen.read_text().splitlines()]
    at = next(i for i, r in enumerate(lines) if r.startswith("  + - 行前"))
    rows = [lines[at]]
    for r in lines[at + 1 :]:
        if not r.startswith("    "):
            break
        rows.append(r)
    assert len(rows) == 3, lines  # 3 × 38 characters in rows of at most 80 cells
    assert "".join(r[4:] for r in rows) == f"- {prose}".rstrip()  # nothing lost or added
    assert all(cells(r) <= 80 for r in rows), [cells(r) for r in rows]
    assert not any(r.lstrip().startswith("+") for r in rows[1:])  # the gutter once
    piped = run(vault, "review", "w.md")
    assert f"  + - {prose}\n" in piped.stdout  # whole when piped


def test_the_shell_measures_a_decomposed_name_as_the_screens_do() -> None:
    """A macOS (NFD) name: `é` is `e` and a combining accent, one cell. The shell's tables
    counted the accent as a cell of its own and pushed the next column out of line."""
    import unicodedata

    from rich.cells import cell_len

    from app.cli.common import _columns

    name = unicodedata.normalize("NFD", "café-notes.md")
    rows = _columns(["note", "reads"], [[name, 3], ["plain.md", 12]])
    assert len({cell_len(r) for r in rows}) == 1, rows  # every row as wide: columns line up
