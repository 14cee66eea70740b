"""The blocks that say what the assistant may see and whose files are whose: `private:`,
`protected:`, the rules file (`rules:`) and the prompt notes (`prompts:`). A glob or path here
that cannot be read fails the whole config (closed), never only this block.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from server.notes.config_source import BlockParser
from server.notes.paths import (
    NOTE_EXTENSIONS,
    PathRefused,
    is_note,
    matches_any,
    normalize_glob,
    normalize_rel,
)

# The MCP prompts (slash commands in Claude Code) whose text a vault may give as a note of its
# own (`prompts: {start: prompts/start.md}`); the server's own text stands in for the others.
PROMPT_NAMES = ("start", "remember")


def parse_rules(data: dict[str, Any], p: BlockParser) -> dict[str, Any]:
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


def check_rules_path(out: dict[str, Any], p: BlockParser) -> None:
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


def parse_prompts(data: dict[str, Any], p: BlockParser, out: dict[str, Any]) -> dict[str, Any]:
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


def parse_globs(data: dict[str, Any], p: BlockParser, key: str) -> tuple[str, ...]:
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
