"""Beside the Obsidian Git plugin: its backup-and-sync loop runs on the vault while our server
writes and the owner types, and a second machine (its own clone, its own server, its own
plugin) pushes AI commits to the same remote. In merge mode and in rebase mode.

The plugin's command sequence is its own (Vinzent03/obsidian-git, src/main.ts `commitAndSync`
and src/gitManager/simpleGit.ts `commitAll`, `pull`, `push`): `git status`, `git add -A`,
`git commit -m "vault backup: <date>"`, then `git rev-parse <branch>`, `git fetch`,
`git rev-parse <tracking>` and, when they differ, `git merge <tracking>` or
`git rebase <tracking>` (the "sync method" setting), then `git push`. A command that fails
(git's index locked by another git, a rebase refused over the owner's unsaved typing, a push
behind the remote) is shown as an error and tried again by the next backup: so here.

The owner does not type into a note while the plugin backs up and syncs, from its `git add -A`
to the end of its merge or rebase (a flock between the two scripts): a rebase that finds a note
changed under it stops half-way and waits for the owner, whose `git rebase --abort` then
discards what they typed, and one started over a line typed since the backup refuses to run
("You have unstaged changes"; on a loaded machine that was every rebase of a run). Those
hazards are the plugin's and the owner's, not ours; here the AI's writes are what is under
test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from .conftest import git, second_machine, start_hogs, stop_hogs
from .servers import HttpServer

AI_SECONDS = float(os.environ.get("VAULTWATCH_OBSIDIAN_SECONDS", "8"))

PLUGIN = r"""
import datetime, fcntl, subprocess, sys, time
from pathlib import Path
root, mode, stop, log = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
once = len(sys.argv) > 5
syncing = open(str(root) + ".syncing", "a")  # held from the backup to the end of the sync

def git(*args):
    r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    out.write(f"{' '.join(args)} -> {r.returncode} {r.stderr.strip()[:300]!r}\n")
    out.flush()
    return r

with log.open("a") as out:
    while True:
        fcntl.flock(syncing, fcntl.LOCK_EX)
        git("status", "--porcelain")
        git("add", "-A")
        git("commit", "-m", f"vault backup: {datetime.datetime.now():%Y-%m-%d %H:%M:%S}")
        branch = git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
        tracking = git("rev-parse", "--abbrev-ref", "@{u}").stdout.strip()
        local = git("rev-parse", branch).stdout.strip()
        git("fetch")
        upstream = git("rev-parse", tracking).stdout.strip()
        if tracking and local != upstream:
            git(mode, tracking)
        fcntl.flock(syncing, fcntl.LOCK_UN)
        git("push")
        if once or stop.exists():
            break
        time.sleep(0.15)
"""

OWNER = r"""
import fcntl, random, sys, time
from pathlib import Path
note, stop, log = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
syncing = open(sys.argv[4], "a")
rng = random.Random(3)
k = 0
with log.open("w") as out:
    while not stop.exists():
        fcntl.flock(syncing, fcntl.LOCK_SH)  # not while the plugin backs up and syncs
        with note.open("a", encoding="utf-8") as fh:   # how Obsidian saves a typed line
            fh.write(f"- owner line {k}\n")
        fcntl.flock(syncing, fcntl.LOCK_UN)
        out.write(f"{k}\n"); out.flush()
        k += 1
        time.sleep(rng.uniform(0.2, 0.6))
"""

NOTE = "# {t}\n\n## Log\n"


def _run_git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


async def _ai_writes(url: str, token: str, who: str, path: str, seconds: float) -> list[str]:
    """append_section calls for `seconds`, one line each; each call's error text, or ''."""
    out: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name=who, version="1"),
        ) as c,
    ):
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            r = await c.call_tool(
                "append_section", {"path": path, "heading": "Log", "content": f"- {who} line {i}"}
            )
            out.append(str(r.content[0].text) if r.is_error else "")  # type: ignore[union-attr]
            i += 1
    return out


def _commits(root: Path) -> list[dict[str, Any]]:
    """Every non-merge commit of HEAD: sha, author, committer, trailers, the lines it adds."""
    fmt = (
        "%x1e%H%x1f%an%x1f%cn%x1f%(trailers:key=Vaultwatch-Tool,valueonly,separator=)%x1f"
        "%(trailers:key=Vaultwatch-Client,valueonly,separator=)%x1f"
    )
    out = git(root, "log", "--no-merges", "-p", "--no-renames", f"--format={fmt}")
    commits = []
    for rec in out.split("\x1e")[1:]:
        sha, author, committer, tool, client, patch = rec.split("\x1f")
        added = [
            ln[1:] for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")
        ]
        files = re.findall(r"^diff --git a/(\S+)", patch, re.M)
        commits.append(
            {
                "sha": sha,
                "author": author,
                "committer": committer,
                "tool": tool.strip(),
                "client": client.strip(),
                "added": added,
                "files": files,
            }
        )
    return commits


@pytest.mark.slow
@pytest.mark.load
@pytest.mark.parametrize("mode", ["merge", "rebase"])
def test_beside_obsidian_git_nothing_is_lost(make_vault: Any, tmp_path: Path, mode: str) -> None:
    root = make_vault(
        {"a/ai.md": NOTE.format(t="A"), "a/owner.md": NOTE.format(t="O"), "b/ai.md": "# B\n"}
    )
    (root / "b/ai.md").write_text(NOTE.format(t="B"))
    git(root, "commit", "-qam", "notes")
    other, _ = second_machine(root, tmp_path)
    stop = tmp_path / "STOP"
    logs = {name: tmp_path / f"{name}.log" for name in ("plugin-a", "plugin-b", "owner")}

    a, b = HttpServer(root), HttpServer(other)
    # every core busy (as on a loaded CI machine): the windows between two gits' steps open up
    hogs = start_hogs()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PLUGIN, str(root), mode, str(stop), str(logs["plugin-a"])]
        ),
        subprocess.Popen(
            [sys.executable, "-c", PLUGIN, str(other), mode, str(stop), str(logs["plugin-b"])]
        ),
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                OWNER,
                str(root / "a/owner.md"),
                str(stop),
                str(logs["owner"]),
                f"{root}.syncing",
            ]
        ),
    ]
    try:

        async def both() -> list[list[str]]:
            out: list[list[str]] = [[], []]

            async def one(i: int, srv: HttpServer, who: str, path: str) -> None:
                out[i] = await _ai_writes(srv.url, srv.token, who, path, AI_SECONDS)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 0, a, "ai-a", "a/ai.md")
                tg.start_soon(one, 1, b, "ai-b", "b/ai.md")
            return out

        results = anyio.run(both)
    finally:
        stop_hogs(hogs)
        stop.write_text("")
        for p in procs:
            p.wait(60)
        a.stop()
        b.stop()

    # no AI call failed, whatever the plugin was doing (a rebase, a merge, its git add -A)
    for who, rs in zip(("ai-a", "ai-b"), results, strict=True):
        assert rs and not [e for e in rs if e], (who, [e for e in rs if e][:3])
    plugin_a = logs["plugin-a"].read_text()
    done = re.findall(rf"^{mode} \S+ -> 0", plugin_a, re.M)
    assert done, f"the plugin never completed a {mode}:\n{plugin_a[-3000:]}"

    # the last syncs, one machine at a time, as the plugin's next backups would make them
    for _ in range(3):
        for vault, log in ((root, logs["plugin-a"]), (other, logs["plugin-b"])):
            subprocess.run(
                [sys.executable, "-c", PLUGIN, str(vault), mode, str(stop), str(log), "once"],
                check=True,
            )
    assert _run_git(root, "rev-parse", "HEAD").stdout == _run_git(other, "rev-parse", "HEAD").stdout
    assert git(root, "status", "--porcelain") == "", git(root, "status")

    commits = _commits(root)
    ai = [c for c in commits if c["tool"]]
    ai_lines = [f"- ai-a line {i}" for i in range(len(results[0]))]
    ai_lines += [f"- ai-b line {i}" for i in range(len(results[1]))]
    owner_lines = [f"- owner line {k}" for k in logs["owner"].read_text().split()]
    assert len(owner_lines) > 3
    tree = "".join((root / p).read_text() for p in ("a/ai.md", "a/owner.md", "b/ai.md"))

    # nothing lost: every AI line, in exactly one AI commit and in the tree
    for line in ai_lines:
        by = [c["sha"] for c in ai if line in c["added"]]
        assert len(by) == 1, (line, by)
        assert f"{line}\n" in tree, line
    # every line the owner typed, committed and in the tree
    committed = git(root, "show", "HEAD:a/owner.md")  # (some through a merge commit)
    for line in owner_lines:
        where = f"\n{(root / 'a/owner.md').read_text()[-400:]}\n{plugin_a[-2000:]}"
        assert f"{line}\n" in tree, f"{line} is not in the tree{where}"
        assert f"{line}\n" in committed, f"{line} is not committed{where}"
    # no AI line in anyone else's commit (the plugin's `git add -A` never took one). Known
    # exception where /proc cannot show the merge running (SECURITY.md; on Linux the write
    # waits for it, 0 in 244 merges): a `git merge` that our commit meets half-way (it fails to move the branch it read at its start, "cannot lock ref
    # 'HEAD'") leaves the merged notes in its working tree, and the next backup commits them
    # again on a parallel branch. Such a copy is allowed only for a line its AI commit had
    # committed first, on a branch the copy does not descend from.
    first = {ln: c["sha"] for c in ai for ln in c["added"]}
    for c in commits:
        if not c["tool"]:
            leaked = [ln for ln in c["added"] if re.match(r"- ai-[ab] line", ln)]
            taken = [
                ln
                for ln in leaked
                if ln not in first
                or _run_git(root, "merge-base", "--is-ancestor", c["sha"], first[ln]).returncode
                == 0
                or _run_git(root, "merge-base", "--is-ancestor", first[ln], c["sha"]).returncode
                == 0
            ]
            assert not taken, (c["sha"], c["committer"], taken[:3])
    # no empty AI commit, and each keeps its author and trailers (rebased or not)
    assert len(ai) == len(ai_lines)
    for c in ai:
        assert c["files"] and c["author"] == "Claude", c
        assert c["tool"] == "append_section" and c["client"].split("/")[0] in ("ai-a", "ai-b"), c
    if mode == "rebase":  # some AI commits were rewritten by the plugin's rebase, and kept
        assert any(c["committer"] != "Claude" for c in ai), "no AI commit was rebased"
    # no temp file of ours was ever committed
    assert "vaultwatch-tmp" not in git(root, "log", "--all", "--name-only", "--format=")
    assert _run_git(root, "fsck", "--strict").returncode == 0
