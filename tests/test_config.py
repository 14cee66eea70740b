"""Config: typed, errors with file and line, reloaded on change, last good kept on error."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from server.notes.config import ConfigError, load_config
from server.vault import Vault
from server.write.journal import read_all

GOOD = """\
rules: RULES.md
tags: {vocabulary: tags.yaml, unknown: reject}
private: ["private/**"]
types:
  session:
    folder: sessions
    filename: "{date}-{slug}.md"
    required: [date, kind]
    dates: [date]
    values: {kind: [mock, leetcode]}
context:
  - rules
  - {title: Recent sessions, type: session, latest: 2}
limits: {result_chars: 30000}
"""


def bump(p: Path, text: str) -> None:
    """Write and move the mtime forward, so the change is visible even within one clock tick."""
    p.write_text(text, encoding="utf-8")
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_full_config_parses(tmp_path: Path) -> None:
    (tmp_path / "vault.config.yaml").write_text(GOOD)
    (tmp_path / "tags.yaml").write_text("- crdt\n- 同步\n")
    cfg = load_config(tmp_path)
    assert cfg.rules == "RULES.md"
    assert cfg.tags.unknown == "reject" and set(cfg.vocabulary) == {"crdt", "同步"}
    s = cfg.types["session"]
    assert (s.folder, s.required, s.dates, s.values) == (
        "sessions",
        ("date", "kind"),
        ("date",),
        {"kind": ("mock", "leetcode")},
    )
    assert [c.kind for c in cfg.context] == ["rules", "latest"]
    assert cfg.limits.result_chars == 30000 and cfg.limits.batch_ops == 200
    assert "RULES.md" in cfg.protected_paths() and "tags.yaml" in cfg.protected_paths()


def test_prep_config_is_the_fallback_name(tmp_path: Path) -> None:
    (tmp_path / "prep.config.yaml").write_text("rules: PREP.md\n")
    assert load_config(tmp_path).rules == "PREP.md"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("types:\n  session:\n    folder: [a\n", 3, "YAML syntax error"),
        ("rules: CLAUDE.md\ntypo_key: 1\n", 2, "unknown key 'typo_key'"),
        ("types:\n  session:\n    required: [date]\n", 2, "folder is required"),
        ("tags:\n  unknown: maybe\n", 2, "'reject' or 'create'"),
        ("limits:\n  result_chars: -5\n", 2, "whole number"),
        ("context:\n  - {title: X, type: nope, latest: 1}\n", 2, "unknown type 'nope'"),
        ("tags: {vocabulary: missing.yaml}\n", 1, "does not exist"),
        ("resident:\n  idle_minutes: 0\n", 1, "resident.idle_minutes must be a number"),
    ],
)
def test_errors_name_file_line_and_problem(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    (tmp_path / "vault.config.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    p = info.value.problems[0]
    assert p.file == "vault.config.yaml" and p.line == line and words in p.message
    assert f"vault.config.yaml:{line}:" in str(p)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("private:\n  - Secret/\nlimits: {}\nprivate:\n  - health/\n", 4, "private: appears twice"),
        ("rules: A.md\nrules: B.md\n", 2, "first on line 1"),
        ("tags:\n  unknown: reject\n  unknown: create\n", 3, "tags.unknown: appears twice"),
        (
            "types:\n  s: {folder: a}\n  s: {folder: b}\n",
            3,
            "types.s: appears twice (first on line 2",
        ),
        ("context:\n  - {title: X, title: Y, recent: 1}\n", 2, "context[0].title: appears"),
        ("semantic:\n  model: hash-ngrams\n  model: x\n", 3, "semantic.model: appears twice"),
    ],
)
def test_a_key_written_twice_does_not_load(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    """YAML keeps the last of two equal keys: a second `private:` further down would replace
    the first and open its folders, silently. The config does not load instead (fail closed)."""
    (tmp_path / "vault.config.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    p = info.value.problems[0]
    assert p.line == line and words in p.message, str(p)


def test_anchors_and_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    (tmp_path / "vault.config.yaml").write_text(
        "types:\n  a: &base {folder: a, required: [date]}\n  b: {<<: *base, folder: b}\n"
        "private: &p [Secret/]\nprotected: *p\n"
    )
    cfg = load_config(tmp_path)
    assert cfg.types["b"].folder == "b" and cfg.types["b"].required == ("date",)
    assert cfg.private == cfg.protected == ("Secret/",)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("semantic:\n  model: use-multilingual-v4\n", 2, "not a known embedding model"),
        ("semantic:\n  backend: pinecone\n", 2, "sqlite (the default) or qdrant"),
        ("semantic: 5\n", 1, "must be a mapping"),
    ],
)
def test_a_wrong_semantic_block_switches_recall_off_not_the_config(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    """Recall is one tool: a model name typed wrong turns recall off with file:line, and the
    rest of the config (private folders first) loads. Before, it failed the whole config, and a
    vault with no earlier good config then refused every note."""
    (tmp_path / "vault.config.yaml").write_text('private: ["diary/"]\n' + text)
    cfg = load_config(tmp_path)
    assert cfg.private == ("diary/",) and not cfg.semantic.enabled
    p = cfg.recall_problems[0]
    assert p.file == "vault.config.yaml" and p.line == line + 1 and words in p.message


@pytest.mark.anyio
async def test_a_semantic_typo_in_a_new_vault_breaks_only_recall(
    connect: Any, make_vault: Any
) -> None:
    root = make_vault(
        {
            "vault.config.yaml": 'private: ["diary/"]\nsemantic:\n  model: use-multilingual-v4\n',
            "notes/a.md": "# Alpha\n\nbread baking\n",
            "diary/secret.md": "# Secret\n\nbread baking\n",
        }
    )
    async with connect(root) as s:
        assert [d["path"] for d in (await s.call("list_docs"))["docs"]] == ["notes/a.md"]
        hits = (await s.call("search_text", query="bread"))["hits"]
        assert [h["path"] for h in hits] == ["notes/a.md"]
        assert "private" in await s.error("read_doc", path="diary/secret.md")
        msg = await s.error("recall", query="baking bread")
        assert "recall is off" in msg and "vault.config.yaml:3" in msg and "search_text" in msg
        warnings = (await s.call("get_context")).get("warnings", [])
        assert any("vault.config.yaml:3" in w for w in warnings)


def test_reload_without_restart_and_keep_last_good(tmp_path: Path) -> None:
    cfg_file = tmp_path / "vault.config.yaml"
    (tmp_path / "tags.yaml").write_text("- crdt\n")
    bump(cfg_file, GOOD)
    vault = Vault(tmp_path)
    assert vault.config.rules == "RULES.md"

    bump(cfg_file, GOOD.replace("RULES.md", "OTHER.md"))
    assert vault.config.rules == "OTHER.md"

    bump(cfg_file, "types: [broken\n")
    assert vault.config.rules == "OTHER.md"  # last good config stays in force
    assert vault.config_errors and vault.config_errors[0].line == 1

    bump(tmp_path / "tags.yaml", "- crdt\n- 架构\n")  # config still broken: nothing applies
    bump(cfg_file, GOOD)
    assert vault.config.rules == "RULES.md" and not vault.config_errors
    assert "架构" in vault.config.vocabulary

    events = [e for e in read_all(vault.journal.path) if e["kind"] == "config_reloaded"]
    assert [e["ok"] for e in events] == [True, False, True]
    assert "vault.config.yaml:1" in events[1]["errors"][0]


def test_vocabulary_change_alone_reloads(tmp_path: Path) -> None:
    bump(tmp_path / "vault.config.yaml", GOOD)
    bump(tmp_path / "tags.yaml", "- crdt\n")
    vault = Vault(tmp_path)
    assert set(vault.config.vocabulary) == {"crdt"}
    time.sleep(0.01)
    bump(tmp_path / "tags.yaml", "crdt: sync types\nnew-tag: added by hand\n")
    assert set(vault.config.vocabulary) == {"crdt", "new-tag"}


def test_no_config_means_defaults(tmp_path: Path) -> None:
    cfg = load_config(tmp_path)
    assert cfg.types == {} and cfg.rules == "CLAUDE.md" and cfg.source is None
