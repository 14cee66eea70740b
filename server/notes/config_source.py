"""The vault config's YAML read with line numbers: every problem names file:line.

`load_yaml` composes the nodes (for the lines) and loads the data; `BlockParser` is what each
block's parser reports its problems to; `duplicate_keys` refuses a key written twice (YAML would
keep the last, and a second `private:` would open the first one's folders).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from server.core.errors import VaultwatchError


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


class Located:
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


class BlockParser:
    def __init__(self, file: str, located: Located, root: Path | None = None) -> None:
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


def load_yaml(path: Path, display: str) -> tuple[Any, Located]:
    return parse_yaml(path.read_text(encoding="utf-8"), display)


def parse_yaml(text: str, display: str) -> tuple[Any, Located]:
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
    return data, Located(node)


def duplicate_keys(node: yaml.Node | None, display: str) -> list[ConfigProblem]:
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
