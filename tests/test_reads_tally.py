"""The Reads screen counts the journal's reads again whenever it opens and whenever an event
arrives; the count is kept per vault (`reads.vault_note_reads`) and only events added since
are counted. What it gives must always be what a whole count gives now: a note made private
drops out at once (and comes back when it is not), a rename since is followed, a list that
is not the one counted is counted whole. Real vault in real git, events made by the real
read tools through the SDK's in-memory client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import Implementation

from server.core.state_files import state_dir
from server.protocol.tools import build_server
from server.services.reads import Moves, note_reads, reads_report, vault_note_reads
from server.vault import Vault
from server.write.journal import read_all

from .conftest import git

pytestmark = pytest.mark.anyio

CONFIG = 'private: ["private/**"]\n'


async def _read(root: Path, *paths: str) -> None:
    vault = Vault(root)
    try:
        async with Client(
            build_server(vault), client_info=Implementation(name="claude-code", version="1")
        ) as c:
            for p in paths:
                r = await c.call_tool("read_doc", {"path": p})
                assert not r.is_error, r.content
    finally:
        vault.close()


def _events(root: Path) -> list[dict[str, Any]]:
    return read_all(state_dir(root) / "events.jsonl")


def _whole(v: Vault, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The count made from nothing, on the vault's rules and renames now."""
    got = note_reads(events, v.policy.is_private, Moves.of(v, events))
    return {p: n.as_json() for p, n in got.items()}


def _kept(v: Vault, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {p: n.as_json() for p, n in vault_note_reads(v, events).items()}


async def test_the_kept_count_is_always_the_whole_count(make_vault: Any) -> None:
    root = make_vault(
        {
            "vault.config.yaml": CONFIG,
            "study/a.md": "# A\n",
            "study/b.md": "# B\n",
            "study/c.md": "# C\n",
            "private/salary.md": "# Salary\n",
        }
    )
    await _read(root, "study/a.md", "study/a.md", "study/c.md")
    events = _events(root)
    v = Vault(root)
    try:
        first = _kept(v, events)
        assert set(first) == {"study/a.md", "study/c.md"} and first == _whole(v, events)

        # study/c.md made private: gone from the count at once, though its reads were counted
        (root / "vault.config.yaml").write_text('private: ["private/**", "study/c.md"]\n')
        assert set(_kept(v, list(events))) == {"study/a.md"}
        assert [n.path for n in reads_report(v, list(events)).most] == ["study/a.md"]
        # and back when it is not private any more
        (root / "vault.config.yaml").write_text(CONFIG)
        assert _kept(v, list(events)) == first

        # more reads arrive: the dashboard's list grows (the same events, then new ones)
        await _read(root, "study/b.md", "study/a.md")
        grown = events + _events(root)[len(events) :]
        assert _kept(v, grown) == _whole(v, grown)
        assert _kept(v, grown)["study/a.md"]["reads"] == 3

        # a rename since: a.md's reads count under its new name
        git(root, "mv", "study/a.md", "study/a2.md")
        git(root, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "rename")
        renamed = _kept(v, grown)
        assert renamed == _whole(v, grown) and renamed["study/a2.md"]["reads"] == 3
        assert "study/a.md" not in renamed

        # as many events, the same first one, but another last one: counted whole
        other = [*grown[:-1], {**grown[-1], "paths": ["study/c.md"]}]
        assert _kept(v, other) == _whole(v, other)
        assert _kept(v, other)["study/c.md"]["reads"] == 2
    finally:
        v.close()
