"""A note's frontmatter: where it is (the `---` fences), what it says (YAML read safely, dates kept
as the owner wrote them, a fast path for the plain `key: value` lines most notes have), its
tags, and its values as JSON. A frontmatter that cannot be read is a problem reported, never an
exception."""

from __future__ import annotations

import functools
import re
import unicodedata
from datetime import date, datetime
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it


class FrontmatterLoader(_Base):
    """Safe loader that keeps dates as the strings the owner wrote.

    A date like 2026-13-45 would otherwise crash the whole parse; as text it is reported by
    validation instead, and `as_date` turns valid ones into dates where a query needs them.
    A key written twice in one mapping is noted in `twice` (YAML keeps the last silently).
    """

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is None:
                continue
            if key in seen and not hasattr(self, "twice"):
                self.twice = (key, seen[key], key_node.start_mark.line + 1)
            seen.setdefault(key, key_node.start_mark.line + 1)
        return super().construct_mapping(node, deep=deep)


FrontmatterLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in _Base.yaml_implicit_resolvers.items()
}

FM_MAX_CHARS = 64 * 1024

FM_OPEN = re.compile(r"\A---[ \t]*\r?\n")
FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.M)


def split_frontmatter(text: str) -> tuple[str | None, int, int]:
    """(yaml text or None, yaml start, body start). An unclosed fence means no frontmatter."""
    m = FM_OPEN.match(text)
    if not m:
        return None, 0, 0
    close = FM_CLOSE.search(text, m.end())
    if close is None:
        return None, 0, 0
    return text[m.end() : close.start()], m.end(), close.end()


# --- a fast path for the frontmatter most notes have -------------------------------------------
# `key: value` lines with plain, simply-quoted or flow-list values cover nearly every note, and
# PyYAML's Python-level constructor is most of a cold scan's time on them (`uv run python -m
# bench --only read`: cold scan). Such lines are read here, and
# each plain scalar is resolved with PyYAML's own resolver and constructors, so the result is
# exactly what the full parse gives (a property test holds the two paths equal). Anything else
# (block lists, nesting, anchors, multi-line strings, comments after values) takes the full parse.

_FAST_KEY = re.compile(r"([^\W\d][\w.-]*):(?:[ \t]+(.*?))?[ \t]*\Z")
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_SCALARS: Any = None


def _plain_ok(v: str, in_flow: bool) -> bool:
    if not v or v[0] in _INDICATORS or v[0].isspace() or v[-1] == ":":
        return False
    if ": " in v or " #" in v or "\t" in v:
        return False
    return not (in_flow and any(c in v for c in ",[]{}"))


class _Decline(Exception):
    """The fast path cannot read this value the way YAML would: use the full parse."""


@functools.lru_cache(maxsize=8192)  # scalars are immutable; dates, states, numbers repeat a lot
def _resolve_plain(v: str) -> Any:
    global _SCALARS
    if _SCALARS is None:
        _SCALARS = FrontmatterLoader("")  # an instance only for its resolver and constructors
    tag = _SCALARS.resolve(yaml.ScalarNode, v, (True, False))
    construct = _SCALARS.yaml_constructors.get(tag)
    if construct is None:
        raise _Decline(tag)
    return construct(_SCALARS, yaml.ScalarNode(tag, v))


def _fast_value(v: str | None) -> tuple[bool, Any]:
    if v is None or v == "":
        return True, None
    if v[0] == '"':
        inner = v[1:-1]
        ok = len(v) >= 2 and v[-1] == '"' and '"' not in inner and "\\" not in inner
        return ok, inner
    if v[0] == "'":
        inner = v[1:-1]
        return len(v) >= 2 and v[-1] == "'" and "'" not in inner, inner
    if v[0] == "[":
        if v[-1] != "]" or any(c in v[1:-1] for c in "[]{}\"'"):
            return False, None
        # YAML's blanks are spaces and tabs only: str.strip() would also drop a no-break or
        # ideographic space, which YAML keeps as (part of) a value
        inner = v[1:-1].strip(" \t")
        if not inner:
            return True, []
        items = [x.strip(" \t") for x in inner.split(",")]
        if items and items[-1] == "":
            items.pop()  # a trailing comma is allowed in flow sequences
        if not all(_plain_ok(x, True) for x in items):
            return False, None
        return True, [_resolve_plain(x) for x in items]
    if not _plain_ok(v, False):
        return False, None
    return True, _resolve_plain(v)


def fast_frontmatter(fm: str) -> dict[str, Any] | None:
    """The frontmatter as the full YAML parse would give it, or None to ask for that parse."""
    out: dict[str, Any] = {}
    for line in fm.splitlines():
        if not line.strip() or line.startswith("#"):
            continue  # blank lines and whole-line comments
        m = _FAST_KEY.match(line)
        if m is None:
            return None
        try:
            ok, value = _fast_value(m.group(2))
        except (_Decline, ValueError):
            return None
        key = _resolve_plain(m.group(1))  # keys resolve as YAML does: `no:` is False
        if not ok or key in out:
            return None  # a key written twice: the full parse says where
        out[key] = value
    return out


def parse_frontmatter(fm: str | None) -> tuple[dict[str, Any], str | None]:
    if fm is None or not fm.strip():
        return {}, None
    if len(fm) > FM_MAX_CHARS:
        return {}, f"frontmatter is larger than {FM_MAX_CHARS // 1024} KB; not parsed"
    fast = fast_frontmatter(fm)
    if fast is not None:
        return fast, None
    loader = FrontmatterLoader(fm)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at frontmatter line {mark.line + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or "cannot be parsed"
        return {}, f"broken YAML{line}: {reason}"
    except RecursionError:
        return {}, "broken YAML: nested too deeply"
    except Exception as exc:  # a constructor error inside libyaml: still just a broken note
        return {}, f"broken YAML: {exc}"
    finally:
        loader.dispose()
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, "frontmatter is not a mapping of keys"
    if not jsonable_ok(data):
        return {}, "frontmatter is too large or too deeply nested (YAML aliases?); not used"
    twice = getattr(loader, "twice", None)
    # kept as YAML reads it (the last), and said: Obsidian calls such properties invalid, and
    # an edit of either line could report a change the note does not show
    problem = (
        f"frontmatter key {twice[0]!r} is written twice (frontmatter lines {twice[1]} and "
        f"{twice[2]}); YAML reads only the last"
        if twice
        else None
    )
    return {str(k): v for k, v in data.items()}, problem


def jsonable_ok(value: Any, limit: int = 5_000) -> bool:
    """False for values that would explode when serialised (alias bombs, deep nesting)."""
    seen = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        seen += 1
        if seen > limit or depth > 20:
            return False
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list | tuple):
            stack.extend((x, depth + 1) for x in v)
    return True


def to_json(value: Any) -> Any:
    """Frontmatter values -> JSON (dates as ISO strings)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def frontmatter_tags(fm: dict[str, Any]) -> list[str]:
    raw = fm.get("tags", fm.get("tag"))
    if raw is None:
        return []
    items = (
        re.split(r"[,\s]+", raw)
        if isinstance(raw, str)
        else raw
        if isinstance(raw, list)
        else [raw]
    )
    out = []
    for item in items:
        if item is None or isinstance(item, dict | list):
            continue
        t = unicodedata.normalize("NFC", str(item).strip().lstrip("#"))
        if t:
            out.append(t)
    return out
