"""The persisted parse cache: a fresh server parses only what changed while no server ran."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from server.index.doc_index import DocIndex
from server.notes.note import Doc
from server.notes.parsecache import ParseCache
from server.vault import Vault

from .conftest import REPO

pytestmark = pytest.mark.anyio

NOTES = {
    "a.md": "---\ntitle: Alpha\ntags: [x, y/z]\nscore: 4\n---\n# A\nbody #inline\n",
    "b/b.md": "---\ntype: session\ndate: 2026-10-01\n---\n# Bee\n[[a]]\n",
    "b/c.md": "no frontmatter, just text\n",
    "broken.md": "---\nkey: [unclosed\n---\nbody\n",
    "odd.md": "---\n1: one\nset: !!set {a, b}\n---\nyaml a JSON row cannot hold\n",
    "中文/笔记.md": "---\ntags: 同步\n---\n# 标题\n",
}


def cache_file(root: Path) -> Path:
    return root / ".git" / "vaultwatch" / "parsed.sqlite"


def fresh(root: Path) -> Vault:
    """A new Vault object: what a new server process starts with."""
    return Vault(root)


def parsed_now(root: Path) -> dict[str, Doc]:
    """Every note parsed from scratch, without any cache: what the cache must reproduce."""
    idx = DocIndex(root)
    v = Vault(root)
    pol = v.policy
    want = v._want()
    out = dict(idx.refresh(want, want_key=1, target_ok=pol.target_allowed))
    v.close()
    return out


def rows(root: Path) -> dict[str, tuple[int, int]]:
    with sqlite3.connect(cache_file(root)) as db:
        return {p: (m, s) for p, m, s in db.execute("SELECT path, mtime_ns, size FROM notes")}


def test_cache_survives_a_restart_and_is_used(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    v = fresh(root)
    v.entries()
    assert v.index.last.parsed == len(NOTES) and v.index.last.cached == 0
    v.close()
    assert cache_file(root).exists()
    # The note whose frontmatter JSON cannot hold exactly is left out and parsed each time.
    assert set(rows(root)) == set(NOTES) - {"odd.md"}
    v2 = fresh(root)
    docs = {p: e.doc for p, e in v2.entries().items()}
    assert v2.index.last.parsed == 1  # odd.md only
    assert v2.index.last.cached == len(NOTES) - 1
    assert docs == parsed_now(root)  # the same Docs a full parse gives, field for field
    v2.close()


def test_cache_file_is_private_to_the_owner(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    v = fresh(root)
    v.entries()
    v.close()
    for p in cache_file(root).parent.glob("parsed.sqlite*"):
        assert p.stat().st_mode & 0o777 == 0o600, p


def test_edits_while_no_server_ran_are_seen(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    v = fresh(root)
    v.entries()
    v.close()
    # edited with the same size and the old mtime put back: only ctime tells
    a = root / "a.md"
    st = a.stat()
    a.write_text(NOTES["a.md"].replace("Alpha", "Omega"), encoding="utf-8")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    (root / "new.md").write_text("---\ntitle: Fresh\n---\n", encoding="utf-8")
    (root / "b" / "c.md").rename(root / "b" / "moved.md")
    (root / "中文" / "笔记.md").unlink()
    v2 = fresh(root)
    docs = {p: e.doc for p, e in v2.entries().items()}
    assert docs["a.md"].title == "Omega"
    assert docs["new.md"].title == "Fresh"
    assert "b/moved.md" in docs and "b/c.md" not in docs
    assert "中文/笔记.md" not in docs
    assert docs == parsed_now(root)
    # a.md, new.md, b/moved.md and odd.md parsed; the rest came from the cache
    assert v2.index.last.parsed == 4
    v2.close()
    assert set(rows(root)) == set(docs) - {"odd.md"}  # the deleted and renamed rows are gone


async def test_a_broken_cache_is_rebuilt_without_an_error(
    make_vault: Callable[..., Path], connect: Callable[..., object]
) -> None:
    root = make_vault(NOTES)
    v = fresh(root)
    v.entries()
    v.close()
    good = cache_file(root).read_bytes()
    breakages: dict[str, Callable[[], object]] = {
        "garbage": lambda: cache_file(root).write_bytes(b"not a database" * 100),
        "truncated": lambda: cache_file(root).write_bytes(good[: len(good) // 2]),
        "empty": lambda: cache_file(root).write_bytes(b""),
        "older version": lambda: _set_version(root, "0-older"),
        "bad row": lambda: _set_row(root, "a.md", "[1, 2"),
        "wrong row shape": lambda: _set_row(root, "a.md", '{"x": 1}'),
    }
    for name, breakit in breakages.items():
        for suffix in ("-wal", "-shm"):
            Path(str(cache_file(root)) + suffix).unlink(missing_ok=True)
        if name in ("bad row", "wrong row shape"):
            cache_file(root).write_bytes(good)
        breakit()
        async with connect(root) as s:  # type: ignore[attr-defined]
            got = await s.call("list_docs", limit=50)
            assert {d["path"] for d in got["docs"]} == set(NOTES), name
            assert s.vault.index.last.cached == 0, name  # nothing wrong was served
            s.vault.close()
        v = fresh(root)
        v.entries()
        assert v.index.last.cached == len(NOTES) - 1, name  # and the rebuilt cache works
        v.close()


def _set_version(root: Path, version: str) -> None:
    with sqlite3.connect(cache_file(root)) as db:
        db.execute("UPDATE meta SET value=? WHERE key='version'", (version,))


def _set_row(root: Path, path: str, data: str) -> None:
    with sqlite3.connect(cache_file(root)) as db:
        db.execute("UPDATE notes SET data=? WHERE path=?", (data, path))


def test_a_parser_change_discards_the_rows(make_vault: Callable[..., Path], tmp_path: Path) -> None:
    root = make_vault(NOTES)
    path = tmp_path / "c.sqlite"
    one = DocIndex(root, cache=ParseCache(path, version="parser-1"))
    one.refresh()
    one.close()
    two = DocIndex(root, cache=ParseCache(path, version="parser-2"))
    two.refresh()
    assert two.last.cached == 0 and two.last.parsed == len(NOTES)
    two.close()


PRIVATE_CONFIG = 'private: ["secret/**"]\n'


def test_private_notes_never_enter_the_cache(make_vault: Callable[..., Path]) -> None:
    root = make_vault(
        {
            **NOTES,
            "vault.config.yaml": PRIVATE_CONFIG,
            "secret/diary.md": "---\ntitle: ZEBRAFISH\n---\n",
            "later/plan.md": "---\ntitle: Plan\n---\n",
        }
    )
    (root / "link.md").symlink_to(root / "secret" / "diary.md")
    v = fresh(root)
    assert "secret/diary.md" not in v.entries() and "link.md" not in v.entries()
    v.close()
    assert b"ZEBRAFISH" not in cache_file(root).read_bytes()
    assert not any(p.startswith("secret/") or p == "link.md" for p in rows(root))
    assert "later/plan.md" in rows(root)
    # The owner makes a folder private while no server runs: the next server must not serve
    # its notes from the cache, and their rows go.
    (root / "vault.config.yaml").write_text('private: ["secret/**", "later/**"]\n')
    v2 = fresh(root)
    assert "later/plan.md" not in v2.entries()
    v2.close()
    assert not any(p.startswith(("secret/", "later/")) for p in rows(root))


def test_private_rule_added_while_running_drops_rows(make_vault: Callable[..., Path]) -> None:
    root = make_vault({**NOTES, "later/plan.md": "---\ntitle: Plan\n---\n"})
    v = fresh(root)
    assert "later/plan.md" in v.entries()
    (root / "vault.config.yaml").write_text('private: ["later/**"]\n')
    assert "later/plan.md" not in v.entries()
    assert "later/plan.md" not in rows(root)
    v.close()


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from server.vault import Vault
    root, me, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for i in range(rounds):
        for k in range(10):
            (root / f"{me}-{k}.md").write_text(f"---\\ntitle: {me} {k} round {i}\\n---\\n")
        v = Vault(root)
        docs = v.entries()
        assert docs[f"{me}-0.md"].doc.title == f"{me} 0 round {i}", docs[f"{me}-0.md"].doc.title
        v.close()
    """
)


def test_two_processes_writing_the_cache_at_once(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), me, "8"],
            cwd=REPO,
            env={**os.environ, "VAULTWATCH_SEMANTIC": "off"},
            stderr=subprocess.PIPE,
        )
        for me in ("p", "q")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    with sqlite3.connect(cache_file(root)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    v = fresh(root)
    docs = {p: e.doc for p, e in v.entries().items()}
    assert docs == parsed_now(root)
    assert docs["p-3.md"].title == "p 3 round 7" and docs["q-9.md"].title == "q 9 round 7"
    assert v.index.last.parsed == 1  # odd.md: every other note came from the shared cache
    v.close()


def test_a_fresh_process_does_not_reindex_unchanged_notes(make_vault: Callable[..., Path]) -> None:
    root = make_vault(NOTES)
    v = fresh(root)
    v.searchable_entries()
    v.close()
    v2 = fresh(root)
    entries = v2.entries()
    assert v2.search.sync({p: e.doc for p, e in entries.items()}, v2.index.generation) == 0
    v2.close()
