"""The vault config as the server uses it: one immutable `Config`, each block a dataclass of
its own module (config_access, config_tags, config_types, config_recall, config_health,
recordings_config); config.py reads the file into it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from server.notes.config_health import HealthConfig
from server.notes.config_recall import SemanticConfig
from server.notes.config_source import ConfigProblem
from server.notes.config_tags import TagsConfig
from server.notes.config_types import DEFAULT_CONTEXT, ContextItem, DocType
from server.notes.paths import NOTE_EXTENSIONS
from server.notes.recordings_config import RecordingsConfig

CONFIG_NAMES = ("vault.config.yaml", "prep.config.yaml")


@dataclass(frozen=True)
class Author:
    name: str = "Claude"
    email: str = "claude@vaultwatch.local"


@dataclass(frozen=True)
class Limits:
    result_chars: int = 40_000
    batch_ops: int = 200


@dataclass(frozen=True)
class Config:
    ai_author: Author = Author()
    rules: str = "CLAUDE.md"
    prompts: dict[str, str] = field(default_factory=dict)  # prompt name -> the note with its text
    tags: TagsConfig = field(default_factory=TagsConfig)
    private: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    types: dict[str, DocType] = field(default_factory=dict)
    context: tuple[ContextItem, ...] = DEFAULT_CONTEXT
    limits: Limits = Limits()
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    health: HealthConfig = field(default_factory=HealthConfig)
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
