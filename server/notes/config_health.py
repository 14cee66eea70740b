"""`health:` in the vault config (the library health check, server/services/health.py). Its
problems are the health check's own (`Config.health_problems`): defaults stand in for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.notes.config_source import BlockParser
from server.notes.config_types import DocType

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


def parse_health_block(
    data: dict[str, Any], p: BlockParser, types: dict[str, DocType]
) -> dict[str, Any]:
    """`health:` problems are the health check's own (Config.health_problems)."""
    out: dict[str, Any] = {}
    hp = BlockParser(p.file, p.loc)
    health = _parse_health(hp.mapping(data.get("health"), "health"), hp, types)
    if health is not None:
        out["health"] = health
    if hp.problems:
        out["health_problems"] = tuple(hp.problems)
    return out


def _stale_rule(spec: dict[str, Any], base: StaleRule, p: BlockParser, *path: str) -> StaleRule:
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
    spec: dict[str, Any], p: BlockParser, types: dict[str, DocType]
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
