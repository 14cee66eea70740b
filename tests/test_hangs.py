"""Nothing holds the vault for long (a failing edit_text's hint, a query of thousands of terms),
and the server always stops cleanly, even while recall is embedding the vault."""

from __future__ import annotations

import fcntl
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from server.core.gitrepo import ensure_repo
from server.core.state_files import state_dir
from server.notes.note import content_hash
from server.services import write_checks
from server.services.writes import apply, result_for
from server.vault import Vault
from server.write import edits
from server.write.edit_base import EditError
from server.write.edits import closest_line, edit_text
from server.write.journal import read_all

from .conftest import EXAMPLE, git

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
        batch = await a.error(
            "batch",
            ops=[
                {"tool": "edit_text", "args": {"path": "notes/table.md", "old": old, "new": "x"}},
                {
                    "tool": "edit_text",
                    "args": {"path": "notes/other.md", "old": "# Othre", "new": "y"},
                },
            ],
        )
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


# ------------------------------------------------------------------------------------------------
# The server stops cleanly while recall's background indexing runs


SERVER = str(Path(sys.executable).parent / "vaultwatch-server")
# Runs the server and records how it ended: the SDK client only closes the pipes (and signals
# the group after its grace period), it never says how the server exited. Core dumps are turned
# on, as on many developer machines, so an abort leaves its core in the vault (the server's
# working directory) unless the server turns them off itself.
RECORDER = r"""
import os, resource, signal, subprocess, sys
signal.signal(signal.SIGTERM, lambda *a: None)  # the client's SIGTERM is the server's to handle
resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
out = sys.argv[1]
p = subprocess.Popen(sys.argv[2:], stderr=subprocess.PIPE)
with open(out + ".pid", "w") as f:
    f.write(str(p.pid))
err = p.stderr.read()
rc = p.wait()
with open(out + ".tmp", "w") as f:
    f.write(f"{rc}\n" + err.decode(errors="replace"))
os.replace(out + ".tmp", out)
"""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "VAULTWATCH_"))}
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    return env


def core_limit(pid: int) -> str:
    line = next(
        ln
        for ln in Path(f"/proc/{pid}/limits").read_text().splitlines()
        if ln.startswith("Max core file size")
    )
    return " ".join(line.split()[4:6])


def interrupted(root: Path) -> bool:
    """Whether the server stopped before recall had embedded the whole vault."""
    events = read_all(root / ".git/vaultwatch/events.jsonl")
    assert [e["kind"] for e in events][-1] == "server_stopped"
    return not any(e["kind"] == "semantic_progress" and e["indexed"] == e["total"] for e in events)


@pytest.fixture
def fresh_vaults(tmp_path: Path) -> Callable[[int], Path]:
    """Copies of one example vault, none indexed yet: each server starts embedding from zero."""
    base = tmp_path / "base"
    shutil.copytree(EXAMPLE, base)
    ensure_repo(base)

    def make(i: int) -> Path:
        root = tmp_path / f"v{i}"
        shutil.copytree(base, root, symlinks=True)
        return root

    return make


@pytest.mark.semantic
@pytest.mark.slow
async def test_a_client_that_disconnects_at_once_sees_a_clean_exit(
    tmp_path: Path, fresh_vaults: Callable[[int], Path]
) -> None:
    """Connect over stdio, search, disconnect at once, 20 times: recall's indexer is still
    embedding each time. Before, the interpreter's shutdown killed it inside native code:
    `terminate called without an active exception`, SIGABRT (exit 134), and with core dumps on,
    a core file holding the bearer token in the vault."""
    runs, lanes = 20, 4

    async def one(i: int) -> tuple[int, str, bool]:
        root = fresh_vaults(i)
        rec = tmp_path / f"exit{i}"
        params = StdioServerParameters(
            command=sys.executable,
            # in-process: this is the server that exits when its one client leaves (a relayed
            # client's resident stops on its own schedule: test_resident.py)
            args=["-c", RECORDER, str(rec), SERVER, "--vault", str(root), "--in-process"],
            cwd=str(root),
            env=child_env(),
        )
        async with Client(params) as c:
            r = await c.call_tool("search_text", {"query": "CRDT"})
            assert not r.is_error
            pid = int(Path(f"{rec}.pid").read_text())
            assert core_limit(pid) == "0 0"  # no core file, whatever the shell allowed
        with anyio.fail_after(30):
            while not rec.exists():
                await anyio.sleep(0.05)
        status, _, err = rec.read_text().partition("\n")
        assert not [p.name for p in root.iterdir() if p.name.startswith("core")], err
        return int(status), err, interrupted(root)

    results: list[tuple[int, str, bool]] = []

    async def lane(first: int) -> None:
        for i in range(first, runs, lanes):
            results.append(await one(i))

    async with anyio.create_task_group() as tg:
        for k in range(lanes):
            tg.start_soon(lane, k)
    assert len(results) == runs
    for status, err, _ in results:
        assert "terminate called" not in err and status == 0, (status, err[-800:])
    # the point of the test: the servers stopped while the vault was still being embedded
    assert sum(cut for _, _, cut in results) >= runs // 2


@pytest.mark.semantic
@pytest.mark.slow
async def test_the_dashboards_http_child_stops_cleanly_on_sigterm(
    fresh_vaults: Callable[[int], Path],
) -> None:
    """The dashboard stops its server with SIGTERM to the group, often while it is indexing: here
    always, so the test proves the hard case on a fast machine too."""
    root = fresh_vaults(0)
    # Enough notes that the embedding outlasts one call on any machine: with the example's 30
    # alone, an idle fast machine finished indexing before the SIGTERM and tested nothing.
    bulk = root / "bulk"
    bulk.mkdir()
    para = "A paragraph of plain prose about topic {t}, long enough to be embedded on its own. "
    for i in range(400):
        body = "\n\n".join(f"## Part {k}\n\n" + para.format(t=i * 10 + k) * 6 for k in range(8))
        (bulk / f"n{i}.md").write_text(f"# Note {i}\n\n{body}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bulk notes")
    events = root / ".git/vaultwatch/events.jsonl"

    def cores_on() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    proc = subprocess.Popen(
        [SERVER, "--vault", str(root), "--http", "127.0.0.1:0", "--exit-with-parent"],
        cwd=root,
        env=child_env(),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=cores_on,
    )
    try:
        assert proc.stderr is not None
        url = ""
        with anyio.fail_after(60):
            while not url:
                line = await anyio.to_thread.run_sync(proc.stderr.readline)
                assert line, "the server exited before serving"
                url = m.group(1) if (m := re.search(r"at (http://\S+/mcp)", line)) else ""
        token = (root / ".git/vaultwatch/token").read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as c,
        ):
            assert not (await c.call_tool("search_text", {"query": "CRDT"})).is_error
        assert core_limit(proc.pid) == "0 0"
        # the kill lands mid-embedding: after recall's first batch, long before its last
        with anyio.fail_after(60):
            while not any(e["kind"] == "semantic_progress" for e in read_all(events)):
                await anyio.sleep(0.05)
        os.killpg(proc.pid, signal.SIGTERM)
        status = await anyio.to_thread.run_sync(lambda: proc.wait(30))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = proc.stderr.read()
    assert "terminate called" not in err and status == 0, (status, err[-800:])
    assert not [p.name for p in root.iterdir() if p.name.startswith("core")]
    assert interrupted(root)


def test_the_diff_of_a_large_rewrite_is_bounded(make_vault: Any) -> None:
    """A write's diff (in its result, and in the journal when rejected) is made under the write
    lock. difflib on a note where every other line changed is quadratic: 8,000 lines took 18 s,
    40,000 lines (1 MB) several minutes. The diff shown is cut to a few KB anyway."""
    old = "".join(f"- item {i} of a long list\n" for i in range(40_000))
    new = "".join(f"- item {i} of a long list{' x' if i % 2 else ''}\n" for i in range(40_000))
    root = make_vault({"notes/list.md": old})
    vault = Vault(root)
    results: list[Any] = []

    def run() -> None:
        args = {"path": "notes/list.md", "content": new, "hash": content_hash(old.encode())}
        results.append(apply(vault, vault.store, "replace_doc", "test", [("replace_doc", args)]))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the write's diff did not come back within 60 s"
    assert (root / "notes/list.md").read_text() == new and results[0].commit
    diff = result_for(results[0])["diff"]
    assert diff.startswith("--- a/notes/list.md\n+++ b/notes/list.md\n@@ -1,40000 +1,40000 @@\n")
    assert "-- item 1 of a long list\n+- item 1 of a long list x\n" in diff


def apply_unified(old: list[str], diff: str) -> list[str]:
    """Apply a unified diff to `old`, checking every context and removed line."""
    out: list[str] = []
    pos = 0
    for line in diff.splitlines(True)[2:]:
        if m := re.match(r"@@ -(\d+)(?:,(\d+))? ", line):
            start = int(m.group(1)) - (1 if m.group(2) != "0" else 0)
            out += old[pos:start]
            pos = start
            continue
        tag, body = line[0], line[1:]
        if tag in " -":
            assert old[pos] == body
            pos += 1
        if tag in " +":
            out.append(body)
    return out + old[pos:]


@pytest.mark.parametrize("align", [1_000, 3, 0])
def test_the_bounded_diff_turns_old_into_new(align: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether difflib aligns the changed stretch or lines are paired by position."""
    monkeypatch.setattr(write_checks, "DIFF_ALIGN_LINES", align)
    rng = random.Random(align)
    for _ in range(500):
        old = [rng.choice(["a\n", "b\n", "c\n", "- [ ] x\n", "\n"]) for _ in range(30)]
        new = list(old)
        for _ in range(rng.randrange(6)):
            k = rng.randrange(len(new) + 1)
            new[k : k + rng.randrange(2)] = rng.choice([[], ["x\n"], ["a\n", "y\n"]])
        diff = write_checks.unified_diff(old, new, "n.md")
        assert apply_unified(old, diff) == new and (diff == "") == (old == new)


@pytest.mark.semantic  # with the hash embedder: no model to load
def test_closing_while_recall_is_still_starting_leaves_no_indexer_behind(tmp_path: Path) -> None:
    """The first tool call starts recall in a thread ("semantic-start"): it builds the index and
    then starts the indexer. A client that disconnects in that moment closed the vault while the
    starter still ran; close saw no indexer and said all was stopped, and the starter then
    started one, which the interpreter's shutdown killed inside the model's native code
    (SIGABRT, the 'terminate called' above, once in 20 under load). Closing now waits for the
    starter, and nothing starts after it."""
    root = tmp_path / "v"
    shutil.copytree(EXAMPLE, root)
    for i in range(300):  # enough notes that the starter is still listing them at close
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nabout topic {i % 17}\n")
    (root / "vault.config.yaml").write_text(
        (root / "vault.config.yaml").read_text() + "\nsemantic: {model: hash-ngrams}\n"
    )
    ensure_repo(root)
    for _ in range(15):
        before = set(threading.enumerate())
        vault = Vault(root)
        vault.start_semantic_soon()
        assert vault.close(wait=5.0)
        threading.Event().wait(0.3)  # a starter left running would have started its indexer by now
        late = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
        assert not late, late
