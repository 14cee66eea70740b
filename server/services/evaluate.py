"""`vaultwatch-server eval`: how well keyword search, recall and both together find the notes a
question set expects, on the owner's own vault, so a model change is judged by numbers before
it is switched on. Prints recall@5 and MRR (mean reciprocal rank, first expected hit) overall and
by kind of question (`kind:` in the set; else its language, or `cross` for one asked across
languages): a change that helps one kind and costs another shows in the table, not in an
average."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from server.index.embedders import make_embedder
from server.index.search_query import ParsedQuery, SearchError, parse
from server.index.semantic import SemanticIndex
from server.index.vectors import SqliteVectors
from server.notes.filters import QueryError
from server.services.recall import has_every_word, keyword_scores
from server.services.text_search import search_text
from server.vault import Vault, VaultError

K = 5


@dataclass
class Question:
    q: str
    expect: list[str]
    cross: bool = False
    kind: str = ""  # what the table groups by; see load_questions for the default


def _default_kind(q: str, cross: bool) -> str:
    if cross:
        return "cross"
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in q) else "en"


def load_questions(path: Path) -> list[Question]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a list of {{q: ..., expect: [paths]}}")
    out = []
    for i, item in enumerate(data, 1):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("q"), str)
            or not item.get("expect")
        ):
            raise SystemExit(f"{path}: item {i} needs q: (the question) and expect: (note paths)")
        cross = bool(item.get("cross"))
        kind = str(item.get("kind") or _default_kind(item["q"], cross))
        out.append(Question(item["q"], [str(p) for p in item["expect"]], cross, kind))
    return out


def _keyword(vault: Vault, q: str) -> list[str]:
    # a person's question as terms: search_text ANDs them, so try fewer words when none match
    words = q.replace("?", " ").split()
    for n in (len(words), 3, 2, 1):
        try:
            hits = search_text(vault, " ".join(words[:n]), limit=K)["hits"]
        except QueryError:
            continue
        if hits:
            return [h["path"] for h in hits]
    return []


def _parsed(q: str) -> ParsedQuery | None:
    try:
        return parse(q)
    except SearchError:
        return None


def _lexical(vault: Vault, entries: dict[str, Any], pq: ParsedQuery) -> Callable[[str], bool]:
    return lambda p: has_every_word(vault, entries[p].doc, pq)  # as the recall tool ranks


def fuse(*rankings: list[str], k: int = 60) -> list[str]:
    """Reciprocal rank fusion: a note high in either list rises."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for r, p in enumerate(ranking):
            score[p] = score.get(p, 0.0) + 1.0 / (k + r + 1)
    return sorted(score, key=lambda p: -score[p])


def scores(results: list[tuple[Question, list[str]]]) -> dict[str, float]:
    found, rr = 0, 0.0
    for question, ranked in results:
        ranks = [ranked.index(p) + 1 for p in question.expect if p in ranked[:K]]
        if ranks:
            found += 1
            rr += 1.0 / min(ranks)
    n = max(1, len(results))
    return {"recall@5": found / n, "mrr": rr / n}


def evaluate(vault: Vault, questions: list[Question], model: str | None = None) -> dict[str, Any]:
    name = model or vault.config.semantic.model
    embedder = make_embedder(name)
    index = SemanticIndex(
        embedder,
        SqliteVectors(vault.state / "index.sqlite", embedder.name, embedder.dim),
        vault.root,
    )
    entries = vault.searchable_entries()
    t0 = time.perf_counter()
    index.reconcile({p: e.doc for p, e in entries.items()}, vault.note_meta)
    embed_s = time.perf_counter() - t0
    per: dict[str, list[tuple[Question, list[str]]]] = {"keyword": [], "recall": [], "both": []}
    for question in questions:
        kw = _keyword(vault, question.q)
        pq = _parsed(question.q)
        lexical = None if pq is None else _lexical(vault, entries, pq)
        vec = index.encode_query(question.q)
        boost = None if pq is None else keyword_scores(vault, pq)  # as the recall tool ranks
        ranked = index.rank(vec, lambda p: p in entries, limit=20, lexical=lexical, keyword=boost)
        sem = [m.path for m in ranked]
        per["keyword"].append((question, kw))
        per["recall"].append((question, sem))
        per["both"].append((question, fuse(kw, sem)))
    report: dict[str, Any] = {
        "model": name,
        "questions": len(questions),
        "cross_questions": sum(1 for q in questions if q.cross),
        "embed_s": embed_s,
    }
    kinds = sorted({q.kind for q in questions})
    report["kinds"] = {k: sum(1 for q in questions if q.kind == k) for k in kinds}
    for method, results in per.items():
        report[method] = scores(results)
        report[method + "_cross"] = scores([r for r in results if r[0].cross])
        report[method + "_by_kind"] = {
            k: scores([r for r in results if r[0].kind == k]) for k in kinds
        }
    index.close()
    return report


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="vaultwatch-server eval", description=__doc__)
    ap.add_argument("--vault", default=".", help="vault folder (default: current folder)")
    ap.add_argument(
        "--queries", required=True, help="YAML list of {q: question, expect: [paths], cross: bool}"
    )
    ap.add_argument("--model", help="embedding model to try (default: the configured one)")
    args = ap.parse_args(argv)
    try:
        questions = load_questions(Path(args.queries))
        vault = Vault(Path(args.vault).expanduser().absolute())
    except OSError as exc:
        ap.error(f"cannot read {args.queries}: {exc.strerror}")
    except yaml.YAMLError as exc:
        ap.error(f"{args.queries} is not YAML: {exc}")
    except VaultError as exc:
        ap.error(exc.message)
    r = evaluate(vault, questions, args.model)
    n_cross = sum(1 for q in questions if q.cross)
    print(
        f"model {r['model']} · {r['questions']} questions ({n_cross} across languages) · embedded in {r['embed_s']:.1f} s"
    )
    print(table(r))
    vault.close()


METHODS = ("keyword", "recall", "both")


def table(r: dict[str, Any]) -> str:
    """recall@5 / MRR of each method, by kind of question, then across languages and overall."""
    rows: list[tuple[str, int, dict[str, dict[str, float]]]] = [
        (k, n, {m: r[m + "_by_kind"][k] for m in METHODS}) for k, n in r["kinds"].items()
    ]
    n_cross = r.get("cross_questions", 0)
    if n_cross and "cross" not in r["kinds"]:  # a set without kinds has this row already
        rows.append(("cross (all)", n_cross, {m: r[m + "_cross"] for m in METHODS}))
    rows.append(("all", r["questions"], {m: r[m] for m in METHODS}))
    head = f"{'kind':12} {'n':>4}" + "".join(f" {m + ' r@5':>12} {'MRR':>5}" for m in METHODS)
    lines = [head]
    for name, n, by in rows:
        lines.append(
            f"{name:12} {n:4d}"
            + "".join(f" {by[m]['recall@5']:12.2f} {by[m]['mrr']:5.2f}" for m in METHODS)
        )
    return "\n".join(lines)
