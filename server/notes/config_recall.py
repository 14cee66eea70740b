"""`semantic:` in the vault config: recall's embedding model and where its vectors live. Its
problems are recall's own (`Config.recall_problems`): they switch recall off, never the config."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from server.notes.config_source import BlockParser

# The embedding models recall can load (server/index/embedders.py builds one per name). Named
# here so the config is checked without importing the embedder, and numpy with it, at start.
DEFAULT_MODEL = "use-multilingual-v3"


HASH_MODEL = "hash-ngrams"


EMBEDDING_MODELS = (DEFAULT_MODEL, HASH_MODEL)


@dataclass(frozen=True)
class SemanticConfig:
    """`semantic:` in the config: recall's embedding model and where its vectors live."""

    enabled: bool = True
    model: str = DEFAULT_MODEL
    backend: str = "sqlite"  # or "qdrant"
    url: str | None = None  # qdrant server
    path: str | None = None  # qdrant local mode folder (relative to .git/vaultwatch)
    api_key_env: str | None = None  # name of the environment variable holding the key
    collection: str | None = None  # default: one per vault, from its folder name


SEMANTIC_KEYS = frozenset(
    {"enabled", "model", "backend", "url", "path", "api_key_env", "collection"}
)


def parse_semantic(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    """`semantic:` problems are recall's own (Config.recall_problems): they turn recall off and
    leave the rest of the config applied."""
    out: dict[str, Any] = {}
    rp = BlockParser(p.file, p.loc)
    sem = rp.mapping(data.get("semantic"), "semantic")
    if sem:
        out["semantic"] = _semantic_config(sem, rp)
    if rp.problems:
        out["semantic"] = replace(out.get("semantic", SemanticConfig()), enabled=False)
        out["recall_problems"] = tuple(rp.problems)
    return out


def _semantic_config(sem: dict[str, Any], rp: BlockParser) -> SemanticConfig:
    for key in sem:
        if key not in SEMANTIC_KEYS:
            rp.fail(
                f"unknown key {key!r}; known keys: {', '.join(sorted(SEMANTIC_KEYS))}",
                "semantic",
                key,
            )
    backend = sem.get("backend", "sqlite")
    if backend not in ("sqlite", "qdrant"):
        rp.fail("semantic.backend must be sqlite (the default) or qdrant", "semantic", "backend")
        backend = "sqlite"
    if backend == "qdrant" and not (sem.get("url") or sem.get("path")):
        rp.fail(
            "semantic.backend qdrant needs url: (a Qdrant server) or path: (local mode)",
            "semantic",
            "backend",
        )
        backend = "sqlite"
    strings = {k: sem.get(k) for k in ("model", "url", "path", "api_key_env", "collection")}
    for k, v in strings.items():
        if v is not None and not isinstance(v, str):
            rp.fail(f"semantic.{k} must be text", "semantic", k)
            strings[k] = None
    if strings["model"] is not None and strings["model"] not in EMBEDDING_MODELS:
        models = ", ".join(sorted(EMBEDDING_MODELS))
        rp.fail(
            f"semantic.model {strings['model']!r} is not a known embedding model; "
            f"use one of: {models}",
            "semantic",
            "model",
        )
        strings["model"] = None
    return SemanticConfig(
        enabled=sem.get("enabled", True) is not False,
        model=strings["model"] or DEFAULT_MODEL,
        backend=backend,
        url=strings["url"],
        path=strings["path"],
        api_key_env=strings["api_key_env"],
        collection=strings["collection"],
    )
