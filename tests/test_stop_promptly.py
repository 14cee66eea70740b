"""The server exits promptly when its client closes stdin, also while recall indexes (issue 28:
it took 2-4 s, so clients had to signal it): the indexer sees the stop between steps of a batch,
drops the batch it was in, and the next start embeds it."""

from __future__ import annotations

from typing import Any

import numpy as np

from server.index.embedders import HashEmbedder
from server.index.semantic import STEP, SemanticIndex
from server.index.vectors import SqliteVectors
from server.vault import Vault


def test_a_stop_is_seen_between_steps_of_a_batch(make_vault: Any) -> None:
    sections = "".join(
        f"## Part {i}\n\nPart {i} says enough to be its own unit.\n\n" for i in range(100)
    )
    root = make_vault({"long.md": "# Long\n\n" + sections, "short.md": "# Short\n\nhello\n"})
    vault = Vault(root)
    docs = {p: e.doc for p, e in vault.entries().items()}
    calls: list[int] = []

    class StopsAfterOneStep(HashEmbedder):
        """A real embedder that asks the index to stop once it has encoded once, as the server
        does when stdin closes mid-batch."""

        sem: SemanticIndex | None = None

        def encode(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            if self.sem is not None:
                self.sem.stop(wait=0)
            return super().encode(texts)

    emb = StopsAfterOneStep()
    store = SqliteVectors(vault.state / "t.sqlite", emb.name, emb.dim)
    sem = SemanticIndex(emb, store, root)
    emb.sem = sem
    sem.reconcile(docs)
    assert calls == [STEP], calls  # one step of the batch, then stopped
    assert sem._loaded() == {}  # the batch it stopped in is not stored half-done
    sem.close()

    plain = HashEmbedder()  # the next start embeds everything
    again = SemanticIndex(
        plain, SqliteVectors(vault.state / "t.sqlite", plain.name, plain.dim), root
    )
    assert again.reconcile(docs) == 2 and set(again._loaded()) == {"long.md", "short.md"}
    again.close()
    vault.close()


def test_a_write_is_never_cut_short_by_a_stop(make_vault: Any) -> None:
    """A write's own re-embed (partial) is not interrupted: written means recallable."""
    sections = "".join(
        f"## Part {i}\n\nPart {i} says enough to be its own unit.\n\n" for i in range(100)
    )
    root = make_vault({"long.md": "# Long\n\n" + sections})
    vault = Vault(root)
    emb = HashEmbedder()
    sem = SemanticIndex(emb, SqliteVectors(vault.state / "t.sqlite", emb.name, emb.dim), root)
    sem.stop(wait=0)
    assert sem.reconcile({p: e.doc for p, e in vault.entries().items()}, partial=True) == 1
    assert set(sem._loaded()) == {"long.md"}
    sem.close()
    vault.close()
