"""search_text's quality on every committed query set: recall@5 and MRR per set and kind.

    uv run python -m bench.search_quality          # the table
    uv run python -m bench.search_quality --misses # ... and each query not found in the top 5

Sets: tests/search_baseline.yaml over example_vault/ (recall@5 = share of the wanted notes in
the top 5, as tests/test_search.py counts it), and tests/apisix_docs/search_*.yaml over the
APISIX docs (a `nospace` query is found when any expected note is in the top 5, a `title`
query when its note is first, as tests/test_search_cjk.py counts them). MRR: 1 / the rank of
the first wanted note in the top 10, 0 when none is there. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from server.core.gitrepo import ensure_repo
from server.services.text_search import search_text
from server.vault import Vault

REPO = Path(__file__).resolve().parent.parent
APISIX = REPO / "tests" / "apisix_docs"
SETS = (
    ("example_vault", REPO / "example_vault", REPO / "tests" / "search_baseline.yaml"),
    ("apisix zh", APISIX / "zh", APISIX / "search_zh_nospace.yaml"),
    ("apisix en", APISIX / "en", APISIX / "search_en_titles.yaml"),
)


def score_set(src: Path, queries: list[dict[str, Any]], tmp: Path) -> dict[str, dict[str, Any]]:
    """Per kind: count, recall@5, first (the first hit is the first wanted note), MRR, misses."""
    root = tmp / src.name
    shutil.copytree(src, root)
    ensure_repo(root)
    vault = Vault(root)
    out: dict[str, dict[str, Any]] = {}
    try:
        for q in queries:
            want = q.get("want") or q["expect"]
            kind = q["kind"]
            got = [h["path"] for h in search_text(vault, q["q"], limit=10)["hits"]]
            top = got[:5]
            if "want" in q:  # the baseline's rule: the share of wanted notes in the top 5
                recall = sum(w in top for w in want) / len(want)
            else:
                recall = float(bool(set(top) & set(want)))
            ranks = [got.index(w) + 1 for w in want if w in got]
            k = out.setdefault(kind, {"n": 0, "recall": 0.0, "first": 0, "rr": 0.0, "misses": []})
            k["n"] += 1
            k["recall"] += recall
            k["first"] += got[:1] == want[:1]
            k["rr"] += 1 / min(ranks) if ranks else 0.0
            if recall < 1 or (kind == "title" and got[:1] != want[:1]):
                k["misses"].append((q["q"], want, top))
    finally:
        vault.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--misses", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, src, qfile in SETS:
            queries = yaml.safe_load(qfile.read_text(encoding="utf-8"))
            res = score_set(src, queries, Path(tmp) / name.replace(" ", "-"))
            for kind, k in sorted(res.items()):
                n = k["n"]
                print(
                    f"{name:<14} {kind:<8} n={n:<3} recall@5 {k['recall'] / n:.3f}  "
                    f"first {k['first']}/{n}  MRR {k['rr'] / n:.3f}"
                )
                if args.misses:
                    for m in k["misses"]:
                        print("    miss:", m)


if __name__ == "__main__":
    main()
