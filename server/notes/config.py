"""vault.config.yaml -> a typed, immutable Config; a store that re-reads it when the file changes.

A config error names the file, the line and what is wrong. The store keeps serving the last good
config until the file is fixed, so a typo made while the assistant is working never takes the
server down.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from server.notes.config_access import (
    PROMPT_NAMES,
    check_rules_path,
    parse_globs,
    parse_prompts,
    parse_rules,
)
from server.notes.config_health import (
    DEFAULT_OPEN,
    HealthConfig,
    StaleRule,
    parse_health_block,
)
from server.notes.config_last_good import (
    LAST_GOOD,
    read_last_good,
    rules_of,
    stand_in,
    write_last_good,
)
from server.notes.config_model import CONFIG_NAMES, Author, Config, Limits
from server.notes.config_recall import (
    DEFAULT_MODEL,
    EMBEDDING_MODELS,
    HASH_MODEL,
    SEMANTIC_KEYS,
    SemanticConfig,
    parse_semantic,
)
from server.notes.config_source import (
    BlockParser,
    ConfigError,
    ConfigProblem,
    duplicate_keys,
    load_yaml,
)
from server.notes.config_tags import (
    TAG_MAX_CHARS,
    VOCABULARY_HINT,
    TagsConfig,
    load_vocabulary,
    normalize_tag,
    obsidian_tag_problem,
    parse_tags,
    parse_vocabulary,
    tag_problem,
)
from server.notes.config_types import (
    CONTEXT_KINDS,
    DEFAULT_CONTEXT,
    ContextItem,
    DocType,
    parse_context,
    parse_types,
)
from server.notes.paths import PathPolicy, PathRefused
from server.notes.recordings_config import parse_recordings

# Every block's names, re-exported: callers import the config from here, whichever module of
# the block holds them.
__all__ = [
    "CONFIG_NAMES",
    "CONTEXT_KINDS",
    "DEFAULT_CONTEXT",
    "DEFAULT_MODEL",
    "DEFAULT_OPEN",
    "EMBEDDING_MODELS",
    "HASH_MODEL",
    "KNOWN_KEYS",
    "LAST_GOOD",
    "PROMPT_NAMES",
    "SEMANTIC_KEYS",
    "TAG_MAX_CHARS",
    "VOCABULARY_HINT",
    "Author",
    "Config",
    "ConfigError",
    "ConfigProblem",
    "ConfigStore",
    "ContextItem",
    "DocType",
    "HealthConfig",
    "Limits",
    "SemanticConfig",
    "StaleRule",
    "TagsConfig",
    "config_notice",
    "find_config_file",
    "load_config",
    "load_vocabulary",
    "normalize_tag",
    "obsidian_tag_problem",
    "parse_vocabulary",
    "tag_problem",
]

log = logging.getLogger("vaultwatch.config")


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


def _parse(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    """The Config fields a config file sets: one small parser per block, in the file's order of
    importance (each reports its own problems to `p`; recall and health keep theirs apart)."""
    for key in data:
        if key not in KNOWN_KEYS:
            p.fail(f"unknown key {key!r}; known keys: {', '.join(sorted(KNOWN_KEYS))}", key)
    out: dict[str, Any] = {}
    out.update(_parse_author(data, p))
    out.update(parse_rules(data, p))
    out.update(parse_tags(data, p))
    out["private"] = parse_globs(data, p, "private")
    out["protected"] = parse_globs(data, p, "protected")
    out.update(_parse_extensions(data, p))
    check_rules_path(out, p)
    out.update(parse_prompts(data, p, out))
    types = parse_types(data, p)
    out["types"] = types
    out.update(parse_context(data, p, types))
    out.update(_parse_limits(data, p))
    out.update(parse_semantic(data, p))
    out.update(parse_health_block(data, p, types))
    out.update(_parse_recordings_block(data, p))
    out.update(_parse_http(data, p))
    out.update(_parse_resident(data, p))
    return out


def _parse_author(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    author = p.mapping(data.get("ai_author"), "ai_author")
    if not author:
        return {}
    name, email = author.get("name"), author.get("email")
    if not isinstance(name, str) or not isinstance(email, str) or "@" not in email:
        p.fail("ai_author needs name and email, e.g. {name: Claude, email: a@b}", "ai_author")
        return {}
    return {"ai_author": Author(name=name, email=email)}


def _parse_extensions(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    exts = p.str_list(data.get("extensions"), "extensions")
    if not exts:
        return {}
    return {"extensions": tuple(e if e.startswith(".") else "." + e for e in exts)}


def _parse_limits(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
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


def _parse_recordings_block(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    """`recordings:` problems are the transcriber's own (Config.recordings_problems)."""
    rp = BlockParser(p.file, p.loc)
    rec = parse_recordings(data.get("recordings"), rp)
    out: dict[str, Any] = {} if rec is None else {"recordings": rec}
    if rp.problems:
        out["recordings_problems"] = tuple(rp.problems)
    return out


def _parse_http(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    http = p.mapping(data.get("http"), "http")
    if not http:
        return {}
    port = http.get("port")
    if not isinstance(port, int) or not 0 < port < 65536:
        p.fail("http.port must be a TCP port number (1-65535)", "http", "port")
        return {}
    return {"http_port": port}


def _parse_resident(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
    resident = p.mapping(data.get("resident"), "resident")
    if not resident:
        return {}
    minutes = resident.get("idle_minutes")
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes <= 0:
        p.fail("resident.idle_minutes must be a number of minutes above 0", "resident")
        return {}
    return {"resident_idle_minutes": float(minutes)}


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
    data, loc = load_yaml(path, path.name)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(path.name, 1, "the config must be a mapping of keys")])
    parser = BlockParser(path.name, loc, root)
    twice = duplicate_keys(loc.node, path.name)
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
                    self._config = stand_in(
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
            self._kept = read_last_good(self.root)
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
        rules = rules_of(cfg)
        if self._kept is None:
            self._kept = read_last_good(self.root)
        if rules == self._kept:
            return
        try:
            write_last_good(self.root, rules)
        except OSError as exc:  # the config itself is fine; only the next start is less safe
            log.warning("cannot keep the config's private rules in .git/vaultwatch: %s", exc)
            return
        self._kept = rules
