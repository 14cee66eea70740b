"""vault.config.yaml -> a typed, immutable Config; a store that re-reads it when the file changes.

A config error names the file, the line and what is wrong. The store keeps serving the last good
config until the file is fixed, so a typo made while the assistant is working never takes the
server down.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from server.core.errors import VaultwatchError
from server.core.gitrepo import GitError, load_state_json, state_dir, write_state
from server.notes.paths import (
    NOTE_EXTENSIONS,
    PathPolicy,
    PathRefused,
    is_note,
    matches_any,
    normalize_glob,
    normalize_rel,
)
from server.notes.recordings_config import RecordingsConfig, parse_recordings

log = logging.getLogger("vaultwatch.config")

CONFIG_NAMES = ("vault.config.yaml", "prep.config.yaml")
CONTEXT_KINDS = ("rules", "latest", "where", "recent", "tags")
# The MCP prompts (slash commands in Claude Code) whose text a vault may give as a note of its
# own (`prompts: {start: prompts/start.md}`); the server's own text stands in for the others.
PROMPT_NAMES = ("start", "remember")


@dataclass(frozen=True)
class ConfigProblem:
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


class ConfigError(VaultwatchError):
    """The config does not load; `problems` say where (file:line) and what is wrong."""

    code = "bad_config"

    def __init__(self, problems: list[ConfigProblem], vocabulary: str | None = None) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems
        self.vocabulary = vocabulary  # the vocabulary file the config names, if it got that far


# The embedding models recall can load (server/index/embedders.py builds one per name). Named
# here so the config is checked without importing the embedder, and numpy with it, at start.
DEFAULT_MODEL = "use-multilingual-v3"
HASH_MODEL = "hash-ngrams"
EMBEDDING_MODELS = (DEFAULT_MODEL, HASH_MODEL)


@dataclass(frozen=True)
class Author:
    name: str = "Claude"
    email: str = "claude@vaultwatch.local"


@dataclass(frozen=True)
class DocType:
    name: str
    folder: str
    filename: str | None = None
    required: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    values: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    description: str | None = None


@dataclass(frozen=True)
class TagsConfig:
    vocabulary: str | None = None
    unknown: str = "create"  # "reject" | "create"


@dataclass(frozen=True)
class ContextItem:
    kind: str  # one of CONTEXT_KINDS
    title: str
    type: str | None = None
    count: int = 3
    where: dict[str, Any] = field(default_factory=dict)
    fields: tuple[str, ...] = ()
    days: int = 30


@dataclass(frozen=True)
class Limits:
    result_chars: int = 40_000
    batch_ops: int = 200


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


# `health:` (the library health check, server/services/health.py): what counts as an orphan, a
# stale open item and a near-duplicate. Defaults are for a notes vault looked at weekly.
DEFAULT_OPEN = ("open", "todo", "doing", "in-progress", "waiting", "next")


@dataclass(frozen=True)
class StaleRule:
    """A note whose `field` holds one of `open` and that has not changed in `days` is stale."""

    days: int = 30
    field: str = "status"
    open: tuple[str, ...] = DEFAULT_OPEN


@dataclass(frozen=True)
class HealthConfig:
    orphan_days: int = 30
    # Whole-note cosine of recall's stored vectors at or above which two notes are listed as
    # near-duplicates. Measured with the default model: tests/apisix_docs (71 pages in English
    # and Chinese) has 10 pairs at 0.85 or more, all a page and its translation, while the
    # closest two different pages score 0.81; a real 346-note help vault (English + Chinese)
    # has 10, seven translations and three pages that overlap (0.85-0.89); example_vault's
    # closest pair of different notes is 0.72. Lower finds more translations (their median is
    # 0.77) and more merely related notes.
    duplicate_score: float = 0.85
    stale: StaleRule = StaleRule()
    types: dict[str, StaleRule] = field(default_factory=dict)  # per doc type

    def stale_rule(self, type_name: str | None) -> StaleRule:
        return self.types.get(type_name or "", self.stale)


DEFAULT_CONTEXT = (
    ContextItem(kind="rules", title="Rules"),
    ContextItem(kind="recent", title="Recently changed", count=10),
    ContextItem(kind="tags", title="Top tags", days=30, count=15),
)


@dataclass(frozen=True)
class Config:
    ai_author: Author = Author()
    rules: str = "CLAUDE.md"
    prompts: dict[str, str] = field(default_factory=dict)  # prompt name -> the note with its text
    tags: TagsConfig = TagsConfig()
    private: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    types: dict[str, DocType] = field(default_factory=dict)
    context: tuple[ContextItem, ...] = DEFAULT_CONTEXT
    limits: Limits = Limits()
    semantic: SemanticConfig = SemanticConfig()
    health: HealthConfig = HealthConfig()
    recordings: RecordingsConfig = field(default_factory=RecordingsConfig)
    extensions: tuple[str, ...] = NOTE_EXTENSIONS
    http_port: int | None = None
    # how long the vault's resident server (server/protocol/resident.py) stays with no client
    resident_idle_minutes: float = 10.0
    vocabulary: dict[str, str] = field(default_factory=dict)  # casefolded tag -> as written
    # Problems in the `semantic:` block. They switch recall off (and say so, with file:line)
    # instead of failing the whole config: recall is one tool, and a model name typed wrong
    # must not close every note in a vault that has no earlier good config.
    recall_problems: tuple[ConfigProblem, ...] = ()
    # Problems in the `health:` block: the health check uses its defaults for those values and
    # says so; like recall's, they never fail the whole config (no note is closed over them).
    health_problems: tuple[ConfigProblem, ...] = ()
    # Problems in the `recordings:` block: the transcriber uses its defaults and says so.
    recordings_problems: tuple[ConfigProblem, ...] = ()
    source: str | None = None
    loaded_at: str = ""
    # Not "": this is not the vault's config but what stands in while it does not load:
    # "last_good" (the private and protected rules kept from the last config that loaded) or
    # "closed" (none kept: every path is refused).
    standing_in: str = ""

    @functools.cached_property
    def type_folders(self) -> tuple[tuple[str, str], ...]:
        """(folder + '/', type name), deepest folder first: a note's type by folder is the
        first whose folder holds it (the first of two types on one folder, as declared)."""
        return tuple(
            (t.folder + "/", t.name)
            for t in sorted(self.types.values(), key=lambda t: -len(t.folder))
        )

    def protected_paths(self) -> tuple[str, ...]:
        """Files only the owner may write: rules, config, vocabulary, plus any configured."""
        own = [self.rules, *self.prompts.values(), self.source or CONFIG_NAMES[0]]
        if self.tags.vocabulary:
            own.append(self.tags.vocabulary)
        return tuple(dict.fromkeys([*own, *self.protected]))


# ---------------------------------------------------------------------------------------------
# Parsing with line numbers


class _Located:
    """Maps a key path such as ('types', 'session', 'folder') to its line in the YAML source."""

    def __init__(self, node: yaml.Node | None) -> None:
        self.node = node

    def line(self, *path: str | int) -> int | None:
        node = self.node
        best = node.start_mark.line + 1 if node is not None else None
        for key in path:
            if isinstance(node, yaml.MappingNode):
                nxt = None
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == key:
                        best, nxt = k.start_mark.line + 1, v
                        break
                node = nxt
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                node = node.value[key] if key < len(node.value) else None
                if node is not None:
                    best = node.start_mark.line + 1
            else:
                node = None
            if node is None:
                break
        return best


class _Parser:
    def __init__(self, file: str, located: _Located, root: Path | None = None) -> None:
        self.file = file
        self.loc = located
        self.root = root  # the vault: a glob written as its absolute path is refused
        self.problems: list[ConfigProblem] = []

    def fail(self, message: str, *path: str | int) -> None:
        self.problems.append(ConfigProblem(self.file, self.loc.line(*path), message))

    def str_list(self, value: Any, *path: str | int) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            return tuple(str(v) for v in value)
        self.fail(f"{'.'.join(map(str, path))} must be a list of names", *path)
        return ()

    def mapping(self, value: Any, *path: str | int) -> dict[str, Any]:
        if value is None:
            return {}
        if isinstance(value, dict):
            return value
        self.fail(f"{'.'.join(map(str, path))} must be a mapping (key: value lines)", *path)
        return {}

    def positive_int(self, value: Any, default: int, *path: str | int) -> int:
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        self.fail(f"{'.'.join(map(str, path))} must be a whole number above 0", *path)
        return default


KNOWN_KEYS = frozenset(
    {
        "ai_author",
        "rules",
        "prompts",
        "tags",
        "private",
        "protected",
        "types",
        "context",
        "limits",
        "semantic",
        "health",
        "recordings",
        "extensions",
        "http",
        "resident",
    }
)


def _parse(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    """The Config fields a config file sets: one small parser per block, in the file's order of
    importance (each reports its own problems to `p`; recall and health keep theirs apart)."""
    for key in data:
        if key not in KNOWN_KEYS:
            p.fail(f"unknown key {key!r}; known keys: {', '.join(sorted(KNOWN_KEYS))}", key)
    out: dict[str, Any] = {}
    out.update(_parse_author(data, p))
    out.update(_parse_rules(data, p))
    out.update(_parse_tags(data, p))
    out["private"] = _parse_globs(data, p, "private")
    out["protected"] = _parse_globs(data, p, "protected")
    out.update(_parse_extensions(data, p))
    _check_rules_path(out, p)
    out.update(_parse_prompts(data, p, out))
    types = _parse_types(data, p)
    out["types"] = types
    out.update(_parse_context(data, p, types))
    out.update(_parse_limits(data, p))
    out.update(_parse_semantic(data, p))
    out.update(_parse_health_block(data, p, types))
    out.update(_parse_recordings_block(data, p))
    out.update(_parse_http(data, p))
    out.update(_parse_resident(data, p))
    return out


def _parse_author(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    author = p.mapping(data.get("ai_author"), "ai_author")
    if not author:
        return {}
    name, email = author.get("name"), author.get("email")
    if not isinstance(name, str) or not isinstance(email, str) or "@" not in email:
        p.fail("ai_author needs name and email, e.g. {name: Claude, email: a@b}", "ai_author")
        return {}
    return {"ai_author": Author(name=name, email=email)}


def _parse_rules(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    """The rules file, spelt as a path from the model is (so `./CLAUDE.md` is `CLAUDE.md`, and
    protected as the owner's): get_context shows its text to the assistant, so it must be a
    path a note read could take: inside the vault, no dot-folder (.git holds the token)."""
    if "rules" not in data:
        return {}
    if isinstance(data["rules"], str) and data["rules"].strip():
        try:
            return {"rules": normalize_rel(data["rules"])}
        except PathRefused as exc:
            p.fail(f"rules: {exc.message}; the rules file must be a note, e.g. CLAUDE.md", "rules")
            return {}
    p.fail("rules must be the path of the rules file, e.g. CLAUDE.md", "rules")
    return {}


def _check_rules_path(out: dict[str, Any], p: _Parser) -> None:
    """The rules file's text goes to the assistant: never one of the private notes, and a note
    (what the assistant could read anyway)."""
    rules = out.get("rules")
    if rules is None:
        return
    if matches_any(rules, out["private"]):
        p.fail(
            f"rules names {rules!r}, which is private; get_context would show it to the "
            "assistant. Name a rules file outside the private folders",
            "rules",
        )
    extensions = out.get("extensions", NOTE_EXTENSIONS)
    if not is_note(rules, extensions):
        p.fail(
            f"rules names {rules!r}, which is not a note (notes end in "
            f"{', '.join(extensions)}); name a note such as CLAUDE.md",
            "rules",
        )


def _parse_prompts(data: dict[str, Any], p: _Parser, out: dict[str, Any]) -> dict[str, Any]:
    """`prompts: {start: prompts/start.md, remember: ...}`: the notes whose text the MCP
    prompts send the assistant, checked as the rules file is (a note inside the vault, no
    dot-folder, never private); they are the owner's, like the rules file."""
    block = p.mapping(data.get("prompts"), "prompts")
    if not block:
        return {}
    prompts: dict[str, str] = {}
    for name, raw in block.items():
        if name not in PROMPT_NAMES:
            p.fail(f"prompts: unknown prompt {name!r}; known: {', '.join(PROMPT_NAMES)}", "prompts")
            continue
        if not isinstance(raw, str) or not raw.strip():
            p.fail(
                f"prompts.{name} must be the path of a note, e.g. prompts/{name}.md",
                "prompts",
                name,
            )
            continue
        try:
            rel = normalize_rel(raw)
        except PathRefused as exc:
            p.fail(f"prompts.{name}: {exc.message}; it must be a note", "prompts", name)
            continue
        extensions = out.get("extensions", NOTE_EXTENSIONS)
        if matches_any(rel, out["private"]):
            p.fail(
                f"prompts.{name} names {rel!r}, which is private; the prompt would show it to "
                "the assistant. Name a note outside the private folders",
                "prompts",
                name,
            )
        elif not is_note(rel, extensions):
            p.fail(
                f"prompts.{name} names {rel!r}, which is not a note (notes end in "
                f"{', '.join(extensions)})",
                "prompts",
                name,
            )
        else:
            prompts[name] = rel
    return {"prompts": prompts}


def _parse_globs(data: dict[str, Any], p: _Parser, key: str) -> tuple[str, ...]:
    """`private:` or `protected:`, each glob spelt as `normalize_glob` spells it, so every way of
    writing a folder protects it the same; one it cannot read fails the config (closed)."""
    out: list[str] = []
    for i, raw in enumerate(p.str_list(data.get(key), key)):
        try:
            glob = normalize_glob(raw)
        except PathRefused as exc:
            p.fail(f"{key} glob {raw!r} {exc.message}", key, i)
            continue
        flat = raw.strip().replace("\\", "/")
        if p.root is not None and flat.startswith("/") and _inside(p.root, flat):
            p.fail(
                f"{key} glob {raw!r} is the absolute path of a folder of this vault; write it "
                "relative to the vault root, e.g. 'private/'",
                key,
                i,
            )
            continue
        out.append(glob)
    return tuple(dict.fromkeys(out))


def _inside(root: Path, absolute: str) -> bool:
    """Whether the absolute path `absolute` is the vault root or in it (either spelling of the
    root: as given and with symlinks resolved)."""
    for base in {str(root), os.path.realpath(root)}:
        base = base.rstrip("/")
        if absolute == base or absolute.startswith(base + "/"):
            return True
    return False


def _parse_tags(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    tags = p.mapping(data.get("tags"), "tags")
    if not tags:
        return {}
    vocab = tags.get("vocabulary")
    unknown = tags.get("unknown", "create")
    if vocab is not None and not isinstance(vocab, str):
        p.fail("tags.vocabulary must be a file path such as tags.yaml", "tags", "vocabulary")
        vocab = None
    elif vocab is not None:
        # spelt as a model's path is, so `./tags.yaml` is the protected `tags.yaml`, and one that
        # leaves the vault or names a dot-folder (.git holds the token) fails the config
        try:
            vocab = normalize_rel(vocab)
        except PathRefused as exc:
            p.fail(f"tags.vocabulary: {exc.message}; {VOCABULARY_HINT}", "tags", "vocabulary")
            vocab = None
    if unknown not in ("reject", "create"):
        p.fail("tags.unknown must be 'reject' or 'create'", "tags", "unknown")
        unknown = "create"
    return {"tags": TagsConfig(vocabulary=vocab, unknown=unknown)}


def _parse_extensions(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    exts = p.str_list(data.get("extensions"), "extensions")
    if not exts:
        return {}
    return {"extensions": tuple(e if e.startswith(".") else "." + e for e in exts)}


def _parse_types(data: dict[str, Any], p: _Parser) -> dict[str, DocType]:
    types: dict[str, DocType] = {}
    for name, spec in p.mapping(data.get("types"), "types").items():
        doc_type = _parse_type(str(name), p.mapping(spec, "types", name), p, name)
        if doc_type is not None:
            types[str(name)] = doc_type
    return types


def _parse_type(name: str, spec: dict[str, Any], p: _Parser, key: Any) -> DocType | None:
    """One `types:` entry (`key` as written in the file, for the problem's location)."""
    folder = spec.get("folder")
    if not isinstance(folder, str) or not folder.strip("/"):
        p.fail(f"types.{key}.folder is required (the folder its notes live in)", "types", key)
        return None
    filename = spec.get("filename")
    if filename is not None and (not isinstance(filename, str) or "/" in filename):
        p.fail(
            f"types.{key}.filename must be a pattern like '{{date}}-{{slug}}.md'",
            "types",
            key,
            "filename",
        )
        filename = None
    values: dict[str, tuple[Any, ...]] = {}
    for fname, allowed in p.mapping(spec.get("values"), "types", key, "values").items():
        if not isinstance(allowed, list) or not allowed:
            p.fail(
                f"types.{key}.values.{fname} must be a list of allowed values",
                "types",
                key,
                "values",
                fname,
            )
            continue
        values[str(fname)] = tuple(allowed)
    return DocType(
        name=name,
        folder=unicodedata.normalize("NFC", folder.strip("/")),
        filename=filename,
        required=p.str_list(spec.get("required"), "types", key, "required"),
        dates=p.str_list(spec.get("dates"), "types", key, "dates"),
        values=values,
        description=spec.get("description") if isinstance(spec.get("description"), str) else None,
    )


def _parse_context(data: dict[str, Any], p: _Parser, types: dict[str, DocType]) -> dict[str, Any]:
    if "context" not in data:
        return {}
    items: list[ContextItem] = []
    raw_items = data["context"]
    if not isinstance(raw_items, list):
        p.fail("context must be a list of blocks", "context")
        raw_items = []
    for i, raw in enumerate(raw_items):
        item = _parse_context_item(raw, i, p, types)
        if item is not None:
            items.append(item)
    return {"context": tuple(items)}


def _parse_limits(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    limits = p.mapping(data.get("limits"), "limits")
    if not limits:
        return {}
    parsed = Limits(
        result_chars=p.positive_int(limits.get("result_chars"), 40_000, "limits", "result_chars"),
        batch_ops=p.positive_int(limits.get("batch_ops"), 200, "limits", "batch_ops"),
    )
    if parsed.result_chars < 2_000:
        p.fail("limits.result_chars must be at least 2000", "limits", "result_chars")
    return {"limits": parsed}


SEMANTIC_KEYS = frozenset(
    {"enabled", "model", "backend", "url", "path", "api_key_env", "collection"}
)


def _parse_semantic(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    """`semantic:` problems are recall's own (Config.recall_problems): they turn recall off and
    leave the rest of the config applied."""
    out: dict[str, Any] = {}
    rp = _Parser(p.file, p.loc)
    sem = rp.mapping(data.get("semantic"), "semantic")
    if sem:
        out["semantic"] = _semantic_config(sem, rp)
    if rp.problems:
        out["semantic"] = replace(out.get("semantic", SemanticConfig()), enabled=False)
        out["recall_problems"] = tuple(rp.problems)
    return out


def _semantic_config(sem: dict[str, Any], rp: _Parser) -> SemanticConfig:
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


def _parse_health_block(
    data: dict[str, Any], p: _Parser, types: dict[str, DocType]
) -> dict[str, Any]:
    """`health:` problems are the health check's own (Config.health_problems)."""
    out: dict[str, Any] = {}
    hp = _Parser(p.file, p.loc)
    health = _parse_health(hp.mapping(data.get("health"), "health"), hp, types)
    if health is not None:
        out["health"] = health
    if hp.problems:
        out["health_problems"] = tuple(hp.problems)
    return out


def _parse_recordings_block(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    """`recordings:` problems are the transcriber's own (Config.recordings_problems)."""
    rp = _Parser(p.file, p.loc)
    rec = parse_recordings(data.get("recordings"), rp)
    out: dict[str, Any] = {} if rec is None else {"recordings": rec}
    if rp.problems:
        out["recordings_problems"] = tuple(rp.problems)
    return out


def _parse_http(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    http = p.mapping(data.get("http"), "http")
    if not http:
        return {}
    port = http.get("port")
    if not isinstance(port, int) or not 0 < port < 65536:
        p.fail("http.port must be a TCP port number (1-65535)", "http", "port")
        return {}
    return {"http_port": port}


def _parse_resident(data: dict[str, Any], p: _Parser) -> dict[str, Any]:
    resident = p.mapping(data.get("resident"), "resident")
    if not resident:
        return {}
    minutes = resident.get("idle_minutes")
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes <= 0:
        p.fail("resident.idle_minutes must be a number of minutes above 0", "resident")
        return {}
    return {"resident_idle_minutes": float(minutes)}


def _stale_rule(spec: dict[str, Any], base: StaleRule, p: _Parser, *path: str) -> StaleRule:
    where = ".".join(path)
    days = p.positive_int(spec.get("stale_days"), base.days, *path, "stale_days")
    fld = spec.get("status_field", base.field)
    if not isinstance(fld, str) or not fld.strip():
        p.fail(f"{where}.status_field must be a field name, e.g. status", *path, "status_field")
        fld = base.field
    opened = base.open
    if "open" in spec:
        raw = spec["open"]
        if not isinstance(raw, list) or not raw or not all(isinstance(v, str) for v in raw):
            p.fail(
                f"{where}.open must be a list of the status values that count as open, "
                "e.g. [open, todo]",
                *path,
                "open",
            )
        else:
            opened = tuple(v.strip() for v in raw)
    return StaleRule(days=days, field=fld.strip(), open=opened)


def _parse_health(
    spec: dict[str, Any], p: _Parser, types: dict[str, DocType]
) -> HealthConfig | None:
    if not spec:
        return None
    allowed = {"orphan_days", "duplicate_score", "stale_days", "status_field", "open", "types"}
    for key in spec:
        if key not in allowed:
            p.fail(
                f"unknown key {key!r} in health; known keys: {', '.join(sorted(allowed))}",
                "health",
                key,
            )
    default = HealthConfig()
    orphan_days = p.positive_int(
        spec.get("orphan_days"), default.orphan_days, "health", "orphan_days"
    )
    score = spec.get("duplicate_score", default.duplicate_score)
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 < score <= 1:
        p.fail(
            "health.duplicate_score must be a number above 0 and at most 1 (e.g. 0.9): the "
            "recall score at which two notes count as near-duplicates",
            "health",
            "duplicate_score",
        )
        score = default.duplicate_score
    stale = _stale_rule(spec, StaleRule(), p, "health")
    per_type: dict[str, StaleRule] = {}
    for name, tspec in p.mapping(spec.get("types"), "health", "types").items():
        if str(name) not in types:
            known = ", ".join(sorted(types)) or "none are configured"
            p.fail(
                f"health.types names unknown type {name!r} (types: {known})",
                "health",
                "types",
                name,
            )
            continue
        tspec = p.mapping(tspec, "health", "types", name)
        extra = set(tspec) - {"stale_days", "status_field", "open"}
        if extra:
            p.fail(
                f"unknown key {sorted(extra)[0]!r} in health.types.{name}; known keys: "
                "open, stale_days, status_field",
                "health",
                "types",
                name,
            )
        per_type[str(name)] = _stale_rule(tspec, stale, p, "health", "types", str(name))
    return HealthConfig(
        orphan_days=orphan_days, duplicate_score=float(score), stale=stale, types=per_type
    )


def _parse_context_item(
    raw: Any, i: int, p: _Parser, types: dict[str, DocType]
) -> ContextItem | None:
    if raw == "rules":
        return ContextItem(kind="rules", title="Rules")
    if not isinstance(raw, dict):
        p.fail("a context block is 'rules' or a mapping with a title", "context", i)
        return None
    title = str(raw.get("title") or f"Block {i + 1}")
    type_name = raw.get("type")
    if type_name is not None and type_name not in types:
        p.fail(f"context block {title!r} names unknown type {type_name!r}", "context", i, "type")
        return None
    if "latest" in raw:
        if type_name is None:
            p.fail(f"context block {title!r}: latest needs a type", "context", i)
            return None
        n = p.positive_int(raw["latest"], 1, "context", i, "latest")
        return ContextItem(kind="latest", title=title, type=type_name, count=n)
    if "where" in raw:
        where = p.mapping(raw["where"], "context", i, "where")
        return ContextItem(
            kind="where",
            title=title,
            type=type_name,
            where=where,
            fields=p.str_list(raw.get("fields"), "context", i, "fields"),
            count=p.positive_int(raw.get("limit"), 20, "context", i, "limit"),
        )
    if "recent" in raw:
        n = p.positive_int(raw["recent"], 10, "context", i, "recent")
        return ContextItem(kind="recent", title=title, type=type_name, count=n)
    if "tags" in raw:
        spec = p.mapping(raw["tags"], "context", i, "tags")
        return ContextItem(
            kind="tags",
            title=title,
            days=p.positive_int(spec.get("days"), 30, "context", i, "tags", "days"),
            count=p.positive_int(spec.get("limit"), 15, "context", i, "tags", "limit"),
        )
    if raw.get("rules"):
        return ContextItem(kind="rules", title=title)
    p.fail(
        f"context block {title!r} needs one of: latest, where, recent, tags, rules", "context", i
    )
    return None


def _load_yaml(path: Path, display: str) -> tuple[Any, _Located]:
    return _parse_yaml(path.read_text(encoding="utf-8"), display)


def _parse_yaml(text: str, display: str) -> tuple[Any, _Located]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        # The context mark is where the broken construct starts (an unclosed '[' on line 3),
        # which is where the owner has to look; the problem mark is often the end of the file.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        reason = f"{context}: {problem}" if context else problem
        raise ConfigError([ConfigProblem(display, line, f"YAML syntax error: {reason}")]) from exc
    return data, _Located(node)


def _duplicate_keys(node: yaml.Node | None, display: str) -> list[ConfigProblem]:
    """Every key written twice in one mapping of the config, at any depth. YAML keeps the last
    silently, so a second `private:` further down would replace the first and open its folders:
    the config does not load instead (failing closed), naming both lines. Walked on the composed
    nodes the config is parsed from (each node once: aliases share them); merge keys (`<<`) are
    YAML's own way to override and are left alone."""
    problems: list[ConfigProblem] = []
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(node, "")] if node is not None else []
    while stack:
        cur, where = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, yaml.SequenceNode):
            stack += [(v, f"{where}[{i}]") for i, v in enumerate(cur.value)]
        elif isinstance(cur, yaml.MappingNode):
            first: dict[str, int] = {}
            for k, v in cur.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    name = f"{where}.{k.value}" if where else k.value
                    line = k.start_mark.line + 1
                    if k.value in first:
                        problems.append(
                            ConfigProblem(
                                display,
                                line,
                                f"{name}: appears twice (first on line {first[k.value]}, again "
                                "here); YAML would keep only the last, so merge them into one",
                            )
                        )
                    else:
                        first[k.value] = line
                    stack.append((v, name))
                else:
                    stack.append((v, where))
    return sorted(problems, key=lambda p: p.line or 0)


def load_vocabulary(path: Path, display: str) -> dict[str, str]:
    """A tag vocabulary: a YAML list of tags, a mapping tag -> description, or {tags: ...}."""
    return parse_vocabulary(path.read_text(encoding="utf-8"), display)


def parse_vocabulary(text: str, display: str) -> dict[str, str]:
    """The vocabulary in `text` (casefolded tag -> as written), or ConfigError."""
    data, loc = _parse_yaml(text, display)
    if isinstance(data, dict) and set(data) == {"tags"}:
        data = data["tags"]
    if isinstance(data, dict):
        names = [str(k) for k in data]
    elif isinstance(data, list) and all(isinstance(v, str | int) for v in data):
        names = [str(v) for v in data]
    elif data is None:
        names = []
    else:
        raise ConfigError([ConfigProblem(display, loc.line(), "must be a list of tags")])
    return {normalize_tag(n).casefold(): normalize_tag(n) for n in names if normalize_tag(n)}


def normalize_tag(tag: str) -> str:
    return unicodedata.normalize("NFC", str(tag).strip().lstrip("#").strip())


TAG_MAX_CHARS = 64
# A tag is a word (Obsidian's #tag): characters that mean something to YAML or to a tag list
# (flow brackets, anchors, aliases, quotes, comments, "key: value") have no place in one.
_TAG_FORBIDDEN = set("[]{},:#&*!|>'\"%@`\\")


def tag_problem(tag: str) -> str | None:
    """Why `tag` (as normalize_tag gives it) cannot be a tag, or None. The AI's tags end up in
    the owner's vocabulary file; one that breaks its YAML would make the next server start
    without the config."""
    if not tag:
        return "is empty"
    if len(tag) > TAG_MAX_CHARS:
        return f"is longer than {TAG_MAX_CHARS} characters"
    if any(unicodedata.category(c)[0] in "CZ" and c not in " \u200d" for c in tag):
        return "contains a control, format or line-break character"  # (a ZWJ in emoji is fine)
    bad = sorted({c for c in tag if c in _TAG_FORBIDDEN})
    if bad:
        return f"contains {' '.join(bad)}, which YAML and tag lists give a meaning"
    if tag[0] in "-?" or tag != tag.strip():
        return "starts with '-', '?' or a space"
    return obsidian_tag_problem(tag)


def obsidian_tag_problem(tag: str) -> str | None:
    """Why Obsidian cannot use `tag` as a tag, or None. Its tags are letters (of any script),
    digits, `_`, `-` and `/` for nesting: no spaces (`#has space` is the tag `#has`, and a
    frontmatter tag with a space is flagged invalid), and not only digits (`#1984` is no tag,
    the inline reader here skips it too)."""
    if any(c.isspace() for c in tag):
        return (
            "has a space, and Obsidian tags cannot (they are letters, digits, _, - and / for "
            f"nesting): write it as {'-'.join(tag.split())!r}"
        )
    if tag.replace("/", "").replace("-", "").replace("_", "").isdigit():
        return f"is only digits, and an Obsidian tag needs a letter too, such as 'y{tag}'"
    return None


def find_config_file(root: Path) -> Path | None:
    for name in CONFIG_NAMES:
        if (root / name).is_file():
            return root / name
    return None


def load_config(root: Path) -> Config:
    """Read the vault's config (and vocabulary). Raises ConfigError with every problem found."""
    loaded_at = datetime.now().astimezone().isoformat(timespec="seconds")
    path = find_config_file(root)
    if path is None:
        return Config(loaded_at=loaded_at)
    data, loc = _load_yaml(path, path.name)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(path.name, 1, "the config must be a mapping of keys")])
    parser = _Parser(path.name, loc, root)
    twice = _duplicate_keys(loc.node, path.name)
    fields = _parse(data, parser)
    if twice or parser.problems:
        raise ConfigError([*twice, *parser.problems])
    cfg = Config(**fields, source=path.name, loaded_at=loaded_at)
    if cfg.tags.vocabulary:
        vpath = _vocabulary_path(root, cfg, path.name, loc.line("tags", "vocabulary"))
        if not vpath.is_file():
            raise ConfigError(
                [
                    ConfigProblem(
                        path.name,
                        loc.line("tags", "vocabulary"),
                        f"tags.vocabulary names {cfg.tags.vocabulary!r}, which does not exist",
                    )
                ],
                vocabulary=cfg.tags.vocabulary,
            )
        try:
            vocabulary = load_vocabulary(vpath, cfg.tags.vocabulary)
        except ConfigError as exc:
            exc.vocabulary = cfg.tags.vocabulary  # so the store watches the file to be fixed
            raise
        cfg = Config(**{**fields, "vocabulary": vocabulary}, source=path.name, loaded_at=loaded_at)
    return cfg


VOCABULARY_HINT = "name a YAML file in the vault outside the private folders, e.g. tags.yaml"


def _vocabulary_path(root: Path, cfg: Config, source: str, line: int | None) -> Path:
    """The vocabulary file on disk, checked as a note read is (PathPolicy.resolve): list_tags
    shows its unused tags to the assistant and a new tag is appended to it as the AI, so a
    private file, a file outside the vault or a symlink (the write would replace the link
    with a file) fails the config, closed."""
    rel = cfg.tags.vocabulary or ""
    policy = PathPolicy(root, cfg.private, cfg.extensions)
    try:
        vp = policy.resolve(rel, note=False)
    except PathRefused as exc:
        why = exc.message
    else:
        if vp.link is None and not vp.disk.is_symlink():
            return vp.disk
        why = f"{rel!r} is a symlink; name the file itself"
    raise ConfigError(
        [ConfigProblem(source, line, f"tags.vocabulary: {why}; {VOCABULARY_HINT}")],
        vocabulary=rel,
    )


def _signature(root: Path, vocabulary: str | None) -> tuple[Any, ...]:
    sig: list[Any] = []
    for name in (*CONFIG_NAMES, vocabulary):
        if name is None:
            continue
        try:
            st = os.stat(root / name)
            sig.append((name, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            sig.append((name, None))
    return tuple(sig)


LAST_GOOD = "last_good_rules.json"


def _last_good_path(root: Path) -> Path:
    """In the vault's own git dir (a worktree's is not `<root>/.git`, which is then a file:
    the rules were silently never kept there)."""
    try:
        return state_dir(root) / LAST_GOOD
    except GitError:  # a `.git` file that points nowhere: nowhere to keep them
        return root / ".git" / "vaultwatch" / LAST_GOOD


def _rules_of(cfg: Config) -> dict[str, Any]:
    """What of a config must outlive a broken one: what is private and what is the owner's."""
    return {
        "private": list(cfg.private),
        "protected": list(cfg.protected_paths()),
        "rules": cfg.rules,
        "vocabulary": cfg.tags.vocabulary,
        "source": cfg.source,
    }


def _read_last_good(root: Path) -> dict[str, Any] | None:
    try:
        data = load_state_json(_last_good_path(root))
    except (OSError, ValueError):  # StateDamaged is a ValueError
        return None
    ok = isinstance(data, dict) and all(
        isinstance(data.get(k), list) and all(isinstance(v, str) for v in data[k])
        for k in ("private", "protected")
    )
    return data if ok else None


def _write_last_good(root: Path, rules: dict[str, Any]) -> None:
    """Kept in .git/vaultwatch/ (never a note, never committed), written atomically, 0600."""
    path = _last_good_path(root)
    if not path.parent.parent.is_dir():
        return  # not a git repo (yet): nowhere private to keep it
    # never through a link in the state folder: the rules would go where it points (issue 27)
    write_state(path, json.dumps(rules, ensure_ascii=False).encode("utf-8"))


def _stand_in(root: Path, loaded_at: str) -> Config:
    """The config while the vault's own does not load: never wider than the last good one."""
    kept = _read_last_good(root)
    if kept is None:
        return Config(standing_in="closed", loaded_at=loaded_at)
    rules = kept.get("rules")
    try:  # kept by an older version as written in the config: spelt as the matcher reads them
        private = tuple(normalize_glob(g) for g in kept["private"])
    except PathRefused:
        return Config(standing_in="closed", loaded_at=loaded_at)
    return Config(
        rules=rules if isinstance(rules, str) and rules else "CLAUDE.md",
        private=private,
        protected=tuple(kept["protected"]),
        standing_in="last_good",
        loaded_at=loaded_at,
    )


def config_notice(cfg: Config, errors: list[ConfigProblem]) -> str | None:
    """One sentence for every tool error and for stderr while the config does not load: what
    is wrong, what is in force meanwhile, and how to fix it."""
    if not errors:
        return None
    first = str(errors[0])
    first = first if len(first) <= 300 else first[:300] + "…"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    if cfg.standing_in == "closed":
        meanwhile = "no earlier config is known, so every note is refused until it loads"
    elif cfg.standing_in == "last_good":
        meanwhile = (
            "the last good private and protected rules (kept in .git/vaultwatch/"
            f"{LAST_GOOD}) stay in force; types, tags and context are off"
        )
    else:
        meanwhile = "the last good config stays in force"
    return (
        f"The vault config does not load: {first}{more}; {meanwhile}. The owner fixes this "
        f"by correcting {errors[0].file} (it applies on the next call, no restart needed)."
    )


class ConfigStore:
    """The current config of one vault, re-read when its file or vocabulary changes.

    `current()` costs a few stat calls, so tools call it on every request; that is what makes a
    change on disk take effect without a restart.

    Fail closed: a config that does not load never widens what the AI may see or write. Inside
    one process the last good config stays in force; across processes the private and protected
    rules of the last good config are kept in .git/vaultwatch/ and stand in for it, and with
    none kept every path is refused (`Config.standing_in`).
    """

    def __init__(
        self,
        root: Path,
        on_reload: Callable[[Config | None, list[ConfigProblem]], None] | None = None,
    ) -> None:
        self.root = root
        self.on_reload = on_reload
        self._lock = threading.Lock()
        self.errors: list[ConfigProblem] = []
        self._good: Config | None = None
        self._config = Config()
        self._vocabulary: str | None = None  # the vocabulary file to watch
        self._kept: dict[str, Any] | None = None  # the rules last written to .git/vaultwatch
        self._sig: tuple[Any, ...] | None = None
        self.current()

    @property
    def notice(self) -> str | None:
        return config_notice(self._config, self.errors)

    @property
    def problems(self) -> list[ConfigProblem]:
        """Everything wrong with the config on disk: why it does not load, or, when it does,
        the problems that only switched recall off."""
        return self.errors or [*self._config.recall_problems, *self._config.health_problems]

    def current(self) -> Config:
        with self._lock:
            sig = _signature(self.root, self._vocabulary)
            if sig == self._sig:
                return self._config
            first = self._sig is None
            self._sig = sig
            try:
                cfg = load_config(self.root)
                self._refuse_vanished(cfg)
            except (ConfigError, OSError, UnicodeDecodeError) as exc:
                self.errors = (
                    exc.problems
                    if isinstance(exc, ConfigError)
                    else [ConfigProblem(CONFIG_NAMES[0], None, f"cannot read: {exc}")]
                )
                vocabulary = exc.vocabulary if isinstance(exc, ConfigError) else None
                if vocabulary and vocabulary != self._vocabulary:
                    self._vocabulary = vocabulary
                    self._sig = _signature(self.root, vocabulary)
                if self._good is None:
                    self._config = _stand_in(
                        self.root, datetime.now().astimezone().isoformat(timespec="seconds")
                    )
                if self.on_reload and not first:
                    self.on_reload(None, self.errors)
                return self._config
            self._good = self._config = cfg
            self.errors = []
            self._remember(cfg)
            # The vocabulary file may have been named only by the new config.
            self._vocabulary = cfg.tags.vocabulary
            self._sig = _signature(self.root, cfg.tags.vocabulary)
            if self.on_reload and not first:
                self.on_reload(cfg, [])
            return cfg

    def _refuse_vanished(self, cfg: Config) -> None:
        """No config file, where one was in force: moved, deleted or lost in a checkout. The
        defaults would have no private folders, so it counts as a config that does not load."""
        if cfg.source is not None:
            return
        if self._kept is None:
            self._kept = _read_last_good(self.root)
        was = (self._good.source if self._good else None) or (self._kept or {}).get("source")
        if isinstance(was, str) and was:
            raise ConfigError(
                [
                    ConfigProblem(
                        was,
                        None,
                        "is missing; restore it (an empty file "
                        "means the built-in defaults, with no private folders)",
                    )
                ]
            )

    def _remember(self, cfg: Config) -> None:
        """Keep this config's private and protected rules for the next process (written only
        when they change, so a reload costs nothing more)."""
        rules = _rules_of(cfg)
        if self._kept is None:
            self._kept = _read_last_good(self.root)
        if rules == self._kept:
            return
        try:
            _write_last_good(self.root, rules)
        except OSError as exc:  # the config itself is fine; only the next start is less safe
            log.warning("cannot keep the config's private rules in .git/vaultwatch: %s", exc)
            return
        self._kept = rules
