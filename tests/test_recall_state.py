"""What recall says about its own state: why it is off, how far indexing is, and that a stop
keeps what was embedded. Through the real server; the embedding runs with the hash-ngrams
model (no model to load) where the meaning of the vectors does not matter."""

from __future__ import annotations

from typing import Any

import pytest

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
