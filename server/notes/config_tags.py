"""`tags:` in the vault config, the tag vocabulary file, and what makes a string a tag."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.notes.config_source import BlockParser, ConfigError, ConfigProblem, parse_yaml
from server.notes.paths import PathRefused, normalize_rel


@dataclass(frozen=True)
class TagsConfig:
    vocabulary: str | None = None
    unknown: str = "create"  # "reject" | "create"


def parse_tags(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
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


def load_vocabulary(path: Path, display: str) -> dict[str, str]:
    """A tag vocabulary: a YAML list of tags, a mapping tag -> description, or {tags: ...}."""
    return parse_vocabulary(path.read_text(encoding="utf-8"), display)


def parse_vocabulary(text: str, display: str) -> dict[str, str]:
    """The vocabulary in `text` (casefolded tag -> as written), or ConfigError."""
    data, loc = parse_yaml(text, display)
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


VOCABULARY_HINT = "name a YAML file in the vault outside the private folders, e.g. tags.yaml"
