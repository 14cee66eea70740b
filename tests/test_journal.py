"""The journal: one event per tool call, well-formed lines from many processes, a following reader."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from server.journal import KINDS, SCHEMA_VERSION, Journal, JournalReader, read_all


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
        j.append("read", tool="read_doc", paths=[f"n{i}.md"], chars=i, pad="x" * (i % 300))


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
    j.append("server_started", transport="stdio", read_only=False, version="x")
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
    with pytest.raises(ValueError):
        Journal(tmp_path / "e.jsonl").append("made_up")
    assert "commit" in KINDS and "rejected" in KINDS
