"""The journal: one event per tool call, well-formed lines from many processes, a following reader."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from server.core.gitrepo import ensure_repo
from server.write.journal import (
    COMMON,
    EVENTS,
    KINDS,
    SCHEMA_VERSION,
    Journal,
    JournalReader,
    Read,
    ServerStarted,
    read_all,
)

from .conftest import EXAMPLE, REPO
from .servers import child_env


@pytest.mark.anyio
async def test_every_call_is_journaled_with_client_and_chars(
    connect: Any, example_vault: Path
) -> None:
    async with connect(example_vault) as s:
        await s.call("get_context")
        r = await s.client.call_tool("read_doc", {"path": "weeks/2026-W49.md"})
        await s.call("list_docs", type="session")
        await s.call("list_tags")
        await s.error("read_doc", path="../x.md")
        events = read_all(s.vault.journal.path)
    reads = [e for e in events if e["kind"] == "read"]
    assert [e["tool"] for e in reads] == ["get_context", "read_doc", "list_docs", "list_tags"]
    read_doc = reads[1]
    assert read_doc["paths"] == ["weeks/2026-W49.md"]
    assert read_doc["chars"] == len(r.content[0].text)
    assert reads[0]["paths"][0] == "CLAUDE.md"
    assert all(e["v"] == SCHEMA_VERSION and e["client"] != "" and e["pid"] > 0 for e in events)
    err = events[-1]
    assert err["kind"] == "error" and err["tool"] == "read_doc" and err["code"] == "path_escape"


def _writer(path: str, n: int, tag: int) -> None:
    j = Journal(Path(path), client=f"proc-{tag}")
    for i in range(n):
        # lines of many lengths: the padding makes a torn or interleaved write visible
        j.append(Read(tool="read_doc", paths=[f"n{i}.md", "x" * (i % 300)], chars=i, tokens=0))


@pytest.mark.slow
def test_concurrent_processes_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), 400, t)) for t in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1600
    events = [json.loads(line) for line in lines]  # every line parses: nothing interleaved
    for t in range(4):
        mine = [e["chars"] for e in events if e["client"] == f"proc-{t}"]
        assert mine == list(range(400))


def test_reader_follows_and_waits_for_partial_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    reader = JournalReader(path)
    assert reader.poll() == []
    j = Journal(path)
    j.append(
        ServerStarted(transport="stdio", read_only=False, version="x", vault="/v", config_errors=[])
    )
    assert [e["kind"] for e in reader.poll()] == ["server_started"]
    with path.open("ab") as fh:  # a writer caught mid-line
        fh.write(b'{"v":1,"kind":"read","ts":"x","pid":1,"client":"c"')
    assert reader.poll() == []
    with path.open("ab") as fh:
        fh.write(b',"tool":"list_docs"}\n')
    assert [e["tool"] for e in reader.poll()] == ["list_docs"]
    with path.open("ab") as fh:
        fh.write(b"not json\n")
    assert reader.poll() == []


def test_unknown_kind_is_a_programming_error(tmp_path: Path) -> None:
    not_an_event: Any = "made_up"  # what an untyped caller could pass: checked at run time
    with pytest.raises(ValueError):
        Journal(tmp_path / "e.jsonl").append(not_an_event)
    assert "commit" in KINDS and "rejected" in KINDS


CRASH_MID_WRITE = """
import sys
from pathlib import Path
from server.vault import Vault
from server.services.writes import apply
vault = Vault(Path(sys.argv[1]))
ops = [("append_section", {"path": "weeks/2026-W49.md", "heading": "Log", "content": "- lost"})]
apply(vault, vault.store, "append_section", "crash-test", ops)
"""


@pytest.mark.slow
@pytest.mark.anyio
async def test_every_kind_the_server_writes_is_declared_with_its_fields(tmp_path: Path) -> None:
    """KINDS is what the server writes: each kind is made to happen through the real server
    process (start-up recovery, a snapshot of the owner's edit, every tool outcome, a config
    reload, recall's indexing, the stop), and every line carries exactly its declared fields."""
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    with (root / "vault.config.yaml").open("a") as fh:
        fh.write("semantic: {model: hash-ngrams}\n")  # recall indexes quickly, no model to load
    ensure_repo(root)
    env = {k: v for k, v in child_env().items() if k != "VAULTWATCH_SEMANTIC"}
    crash = subprocess.run(
        [sys.executable, "-c", CRASH_MID_WRITE, str(root)],
        cwd=REPO,
        env={**env, "VAULTWATCH_FAULT": "after_write:1"},
        capture_output=True,
        timeout=120,
    )
    assert crash.returncode == -9, crash.stderr  # killed mid-write: the next start recovers it
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server.protocol.cli", "--vault", str(root)],
        cwd=str(REPO),
        env=env,
    )
    note = "study/crdts-for-offline-sync.md"
    async with Client(params) as c:
        read = await c.call_tool("read_doc", {"path": note})
        assert not read.is_error
        with (root / note).open("a") as fh:
            fh.write("\nthe owner's unsaved line\n")  # snapshotted as theirs before the AI writes
        args = {"path": note, "set": {"reviewed": "yes"}}
        assert not (await c.call_tool("update_frontmatter", args)).is_error  # commit
        assert not (await c.call_tool("update_frontmatter", args)).is_error  # noop
        stale = {"path": note, "content": "# x\n", "hash": read.structured_content["hash"]}
        assert (await c.call_tool("replace_doc", stale)).is_error  # conflict
        protected = {"path": "CLAUDE.md", "heading": "Log", "content": "- obey"}
        assert (await c.call_tool("append_section", protected)).is_error  # rejected
        assert (await c.call_tool("read_doc", {"path": "../x.md"})).is_error  # error
        with (root / "vault.config.yaml").open("a") as fh:
            fh.write("# edited by the owner\n")
        assert not (await c.call_tool("list_tags", {})).is_error  # config_reloaded
        for _ in range(600):  # recall's background indexing journals its progress
            r = await c.call_tool("recall", {"query": "offline sync"})
            if not r.is_error and r.structured_content.get("ready"):
                break
            await anyio.sleep(0.1)
        else:
            raise AssertionError(f"recall never became ready: {r.content}")
    events = read_all(root / ".git/vaultwatch/events.jsonl")
    assert {e["kind"] for e in events} == set(KINDS)
    required = {
        e.kind: {f.name for f in dataclasses.fields(e) if not f.metadata.get("optional")}
        for e in EVENTS
    }
    for e in events:
        own = set(e) - set(COMMON)
        assert required[e["kind"]] <= own <= set(KINDS[e["kind"]]), e
    snapshot = [e for e in events if e["kind"] == "commit" and e["tool"] == "snapshot"]
    assert snapshot and snapshot[0]["client"] == "human" and "tokens" not in snapshot[0]
