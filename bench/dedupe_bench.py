"""Search before store, measured: how often `create_doc` would refuse a note the vault already
holds (caught), and how often it would refuse one it does not (false refusals), with the real
check (`dedupe.near_notes`) on real vaults. Printed only.

- tests/apisix_docs: both languages in one vault. Caught: each page created again with the
  page itself left out, its translation in the vault; a catch is a refusal that names the
  translation. False: each page created with itself and its translation left out, so nothing
  in the vault is that page; any refusal is false. 142 creates each, by meaning (recall
  indexed) and by words alone (recall not ready).
- example_vault: each note created again with itself left out (false refusals; its notes are
  all different), and each one's first section rewritten in other words is not measured here
  (tests/test_supersede_dedupe.py holds a rewrite and a translation).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from server.core.gitrepo import ensure_repo
from server.notes.bundled import make_demo_vault
from server.notes.note import decode
from server.services import dedupe
from server.vault import Vault

REPO = Path(__file__).resolve().parent.parent
APISIX = REPO / "tests" / "apisix_docs"


def _indexed(root: Path) -> Vault:
    vault = Vault(root)
    sem = vault.semantic()
    assert sem is not None, vault.semantic_unavailable()
    sem.reconcile({p: e.doc for p, e in vault.entries().items()}, vault.note_meta)
    sem.ready = True
    return vault


def _text(vault: Vault, path: str) -> str:
    return decode((vault.root / path).read_bytes())[0]


def _apisix(vault: Vault, label: str) -> dict[str, Any]:
    pages = sorted(p for p in vault.entries() if p.startswith(("en/", "zh/")))
    caught = false = 0
    how: dict[str, int] = {}
    misses: list[str] = []
    wrong: list[str] = []
    spent = []
    for p in pages:
        twin = ("zh/" if p.startswith("en/") else "en/") + p[3:]
        text = _text(vault, p)
        t0 = time.perf_counter()
        near = dedupe.near_notes(vault, p, text)
        spent.append(time.perf_counter() - t0)
        hit = next((n for n in near if n.refuse and n.path == twin), None)
        if hit is not None:
            caught += 1
            how[hit.why] = how.get(hit.why, 0) + 1
        else:
            misses.append(p)
        alone = dedupe.near_notes(vault, p, text, leave_out=frozenset({twin}))
        refused = [n for n in alone if n.refuse]
        if refused:
            false += 1
            wrong.append(f"{p} -> {refused[0].path} ({refused[0].why} {refused[0].score})")
    n = len(pages)
    print(
        f"  {label}: caught {caught}/{n} ({caught / n:.1%}) translations "
        f"({', '.join(f'{k} {v}' for k, v in sorted(how.items()))}); "
        f"false refusals {false}/{n} ({false / n:.1%}); "
        f"check {1000 * sorted(spent)[len(spent) // 2]:.0f} ms median"
    )
    for w in wrong:
        print(f"    false: {w}")
    if misses and len(misses) <= 20:
        print(f"    missed: {', '.join(misses)}")
    return {"caught": caught / n, "false": false / n}


def _example(vault: Vault, label: str) -> dict[str, Any]:
    notes = sorted(vault.entries())
    wrong = []
    for p in notes:
        refused = [n for n in dedupe.near_notes(vault, p, _text(vault, p)) if n.refuse]
        if refused:
            wrong.append(f"{p} -> {refused[0].path} ({refused[0].why} {refused[0].score})")
    print(f"  {label}: false refusals {len(wrong)}/{len(notes)}")
    for w in wrong:
        print(f"    false: {w}")
    return {"false": len(wrong) / len(notes)}


def run() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "apisix"
        for lang in ("en", "zh"):
            shutil.copytree(APISIX / lang, root / lang)
        ensure_repo(root)
        ex = make_demo_vault(Path(tmp) / "example")
        for mode in ("meaning", "words"):
            if mode == "words":
                os.environ["VAULTWATCH_SEMANTIC"] = "off"
            try:
                a = _indexed(root) if mode == "meaning" else Vault(root)
                e = _indexed(ex) if mode == "meaning" else Vault(ex)
                try:
                    out[f"apisix_{mode}"] = _apisix(a, f"apisix, by {mode}")
                    out[f"example_{mode}"] = _example(e, f"example_vault, by {mode}")
                    if mode == "meaning":  # what meaning alone catches: titles off
                        kept, dedupe.TITLE_MIN = dedupe.TITLE_MIN, 10**9
                        try:
                            out["apisix_meaning_alone"] = _apisix(a, "apisix, by meaning alone")
                        finally:
                            dedupe.TITLE_MIN = kept
                finally:
                    a.close()
                    e.close()
            finally:
                os.environ.pop("VAULTWATCH_SEMANTIC", None)
    return out
