"""What recall says about its own state: why it is off, how far indexing is, and that a stop
keeps what was embedded. Through the real server; the embedding runs with the hash-ngrams
model (no model to load) where the meaning of the vectors does not matter."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from server.core.state_files import state_dir
from server.index.semantic import BATCH
from server.index.vectors import SqliteVectors
from server.index.watch import TreeWatcher
from server.services import recall as recall_mod
from server.vault import Vault

pytestmark = pytest.mark.anyio


async def test_recall_off_by_the_environment_says_so_not_the_config(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit: with VAULTWATCH_SEMANTIC=off, recall blamed the config ("semantic.enabled: false
    in the config"), which said nothing of the kind; the owner would look in the wrong place."""
    root = make_vault({"a.md": "# A\n\nsome text\n"})
    monkeypatch.setenv("VAULTWATCH_SEMANTIC", "off")
    async with connect(root) as s:
        msg = await s.error("recall", query="text")
    assert "VAULTWATCH_SEMANTIC=off" in msg and "search_text" in msg, msg
    assert "semantic.enabled: false in the config" not in msg, msg
    # off in the config (and not by the environment): the config is the reason given
    monkeypatch.delenv("VAULTWATCH_SEMANTIC")
    (root / "vault.config.yaml").write_text("semantic: {enabled: false}\n")
    async with connect(root) as s:
        msg = await s.error("recall", query="text")
    assert "semantic.enabled: false" in msg and "VAULTWATCH_SEMANTIC" not in msg, msg


def bulk(n: int) -> dict[str, str]:
    """`n` notes of four sections, embedded with the hash-ngrams model (no model to load; it
    embeds a few hundred a second, so indexing outlasts the first calls)."""
    para = "A paragraph of plain prose about topic {t}, long enough to be embedded on its own. "
    notes = {
        f"n/{i}.md": f"# Note {i}\n\n"
        + "\n\n".join(f"## Part {k}\n\n" + para.format(t=i * 10 + k) * 4 for k in range(4))
        + "\n"
        for i in range(n)
    }
    return {**notes, "vault.config.yaml": "semantic: {model: hash-ngrams}\n"}


@pytest.mark.semantic
async def test_while_indexing_recall_says_how_far_and_how_long_is_left(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit: 6,106 notes took 719 s to embed, and every not-ready call waited 3 s and said
    "call recall again in a few seconds": a model spent minutes in such calls. The answer says
    n of N, the time left at the rate so far, and to use search_text meanwhile."""
    monkeypatch.setattr(recall_mod, "READY_WAIT_S", 0.5)
    root = make_vault(bulk(1500))
    async with connect(root) as s:
        seen: list[dict[str, Any]] = []
        for _ in range(400):
            r = await s.call("recall", query="topic")
            seen.append(r)
            if r["ready"] or "left" in r["hint"]:
                break
            await anyio.sleep(0.05)
        s.vault.close()
    r = seen[-1]
    assert r["ready"] is False, "indexing 1,500 notes ended before a rate was known"
    assert r["total"] == 1500 and 0 < r["indexed"] < 1500, r
    assert f"indexed {r['indexed']:,} of 1,500 notes" in r["hint"], r["hint"]
    assert "notes/s" in r["hint"] and "left" in r["hint"] and "search_text" in r["hint"]
    assert "a few seconds" not in r["hint"], r["hint"]
    # before the rate was known: progress and what to do, never "0 of N" while still counting
    for early in seen[:-1]:
        assert "search_text" in early["hint"] and early.get("indexed") != 0, early


@pytest.mark.semantic
async def test_a_stop_mid_index_is_quiet_and_the_next_start_resumes(
    connect: Any, make_vault: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Audit: a client that disconnected mid-index left two tracebacks on stderr ("semantic
    indexing failed ... ValueError: I/O operation on closed file", the change watcher closed
    under the indexer), and the next session showed 0 of 6,106. The indexer stops quietly; what
    it embedded is stored batch by batch and the next start embeds only the rest."""
    root = make_vault(bulk(1200))
    vault = Vault(root)
    vault.start_semantic()
    sem = vault.semantic()
    assert sem is not None
    while sem.indexed < 3 * BATCH:
        assert sem.indexing and sem.error is None
        await anyio.sleep(0.02)
    # the server's stop waits a while for the indexer; here it is still inside a batch when the
    # indexes close under it, as on a loaded machine with the real model
    assert vault.close(wait=0.0) is False
    assert sem.thread is not None
    sem.thread.join(30)
    sem.close()
    assert not sem.indexing and sem.error is None and not sem.ready
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not failures, [r.getMessage() for r in failures]
    kept = len(SqliteVectors(state_dir(root) / "index.sqlite", "hash-ngrams", 256).load())
    assert 3 * BATCH <= kept < 1200

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(recall_mod, "READY_WAIT_S", 0.0)
    try:
        async with connect(root) as s:
            for _ in range(1000):
                r = await s.call("recall", query="topic")
                if r["ready"] or "indexed" in r:
                    break
                assert "checking which of 1,200 notes" in r["hint"], r["hint"]
                await anyio.sleep(0.01)
            s.vault.close()
    finally:
        monkeypatch.undo()
    if not r["ready"]:  # it counted what was kept, and goes on from there
        assert r["indexed"] >= kept and r["total"] == 1200, (r, kept)


def test_a_closed_change_watcher_answers_walk_everything(tmp_path: Path) -> None:
    """The vault closes its change watcher while recall's indexer may still ask it what changed
    (the traceback above: reading the closed inotify queue). A closed watcher now says "walk
    everything", which is always a right answer, instead of raising into the indexer."""
    w = TreeWatcher.create()
    if w is None:
        pytest.skip("no inotify on this system: the index walks instead, nothing to close")
    assert w.watch("", "", str(tmp_path))
    (tmp_path / "a.md").write_text("# A\n")
    w.close()
    changes = w.drain()
    assert changes.overflow and not changes.files
