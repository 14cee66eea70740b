"""Library health (server/services/health.py, `vaultwatch health`): every kind of finding planted in a real
git vault, private notes that never appear, the ignore list, the CLI's JSON and refusals."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from server.services import health, health_duplicates, health_ignore
from server.vault import Vault

from .conftest import git
from .conftest import vaultwatch_cli as run
from .health_vault import FILES, LATER, embed

VAULTWATCH = str(Path(sys.executable).parent / "vaultwatch")


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(FILES)


def report(root: Path, **kw: Any) -> health.Report:
    return health.check_root(root, today=kw.pop("today", LATER), **kw)


def test_every_planted_finding_with_its_reason(vault: Path) -> None:
    r = report(vault)
    out = r.to_json()
    broken = {(b["path"], b["link"]) for b in out["broken_links"]}
    assert broken == {
        ("notes/a.md", "[[nothere]]"),
        ("notes/a.md", "![[missing-image.png]]"),
        ("notes/a.md", "[doc](missing%20doc.md)"),
        ("notes/a.md", "[[b#No such heading]]"),
        ("notes/a.md", "[[b#^nope]]"),
        ("notes/a.md", "[[ghost\\|alias]]"),
    }
    lines = {b["link"]: b["line"] for b in out["broken_links"]}
    assert lines["[[ghost\\|alias]]"] == 9
    reasons = {b["link"]: b["reason"] for b in out["broken_links"]}
    assert "no heading 'No such heading' in notes/b.md" in reasons["[[b#No such heading]]"]
    assert "no block ^nope" in reasons["[[b#^nope]]"]
    assert "embed" in reasons["![[missing-image.png]]"]
    # written twice: one finding (one ignore quiets both), on its first line, naming the other
    assert lines["[[nothere]]"] == 4 and reasons["[[nothere]]"].endswith("(also on line 13)")

    assert out["orphans"] == ["notes/lonely.md"]
    assert out["stale"] == ["tasks/t1.md"]
    assert [(p["path"], p["code"]) for p in out["problems"]] == [("tasks/t3.md", "missing_field")]
    assert out["too_big"] == ["big.md"]
    assert out["duplicates"] == [] and out["duplicates_checked"] is False
    assert any("recall is off" in w for w in out["warnings"])
    for f in out["findings"]:
        assert f["reason"] and f["actions"] and f["id"].startswith(f["kind"])


def test_private_notes_never_appear(vault: Path) -> None:
    """Not as a finding, not as a link target, not as a broken link into the folder; and its
    own links neither save a note from being an orphan nor count as broken."""
    text = json.dumps(report(vault, include_ignored=True).to_json(), ensure_ascii=False)
    assert "salary" not in text and "private/" not in text and "nowhere-private" not in text
    assert "[pay]" not in text


def test_orphans_and_stale_items_wait_their_days(vault: Path) -> None:
    soon = report(vault, today=date.today() + timedelta(days=20)).to_json()
    assert soon["orphans"] == []  # 20 days: younger than orphan_days
    assert soon["stale"] == ["tasks/t1.md"]  # tasks: 14 days
    assert report(vault, today=date.today()).to_json()["stale"] == []


def test_a_note_with_unsaved_edits_is_as_old_as_its_last_save(vault: Path) -> None:
    p = vault / "notes/lonely.md"
    p.write_text("# Lonely\n\nEdited just now.\n", encoding="utf-8")
    t = time.mktime((LATER - timedelta(days=1)).timetuple())
    os.utime(p, (t, t))
    assert report(vault).to_json()["orphans"] == []


def test_a_recheck_sees_what_changed_since_the_last_check(vault: Path) -> None:
    """Health keeps each note's problems and the vault's link index between checks in one
    process (a re-check judges only what changed): an edited note, a new config and a new file
    each change the findings of the next check, as a first check would see them."""

    def seen() -> tuple[list[tuple[str, str]], set[str]]:
        out = report(vault).to_json()
        return [(p["path"], p["code"]) for p in out["problems"]], {
            b["link"] for b in out["broken_links"]
        }

    problems, broken = seen()
    assert problems == [("tasks/t3.md", "missing_field")] and "[[nothere]]" in broken
    t3 = vault / "tasks/t3.md"
    t3.write_text("---\nstatus: done\n---\n# Has its status now\n\nSee [[t1]].\n", "utf-8")
    t1 = vault / "tasks/t1.md"  # a second problem planted with the same edit
    t1.write_text(t1.read_text("utf-8").replace("status: open", "title: x"), "utf-8")
    assert seen()[0] == [("tasks/t1.md", "missing_field")]
    cfg = vault / "vault.config.yaml"
    cfg.write_text(cfg.read_text("utf-8").replace("required: [status]", "required: []"), "utf-8")
    assert seen()[0] == []  # judged under the new config, not the one kept from before
    (vault / "notes/nothere.md").write_text("# Here now\n", "utf-8")
    assert "[[nothere]]" not in seen()[1]  # the new file resolves the link


def test_health_changes_nothing(vault: Path) -> None:
    before = git(vault, "status", "--porcelain"), git(vault, "rev-parse", "HEAD")
    report(vault)
    assert (git(vault, "status", "--porcelain"), git(vault, "rev-parse", "HEAD")) == before


def test_the_ignore_list_keeps_findings_quiet(vault: Path) -> None:
    r = report(vault)
    orphan = next(f for f in r.findings if f.kind == "orphan")
    link = next(f for f in r.findings if f.link == "[[nothere]]")
    assert health_ignore.ignore(vault, orphan) is None
    assert health_ignore.ignore(vault, link) is None
    path = vault / ".git/vaultwatch/health-ignore.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert set(json.loads(path.read_text())["ignored"]) == {orphan.id, link.id}

    # a line added above the link does not bring it back: the id has no line number
    a = vault / "notes/a.md"
    a.write_text("new first line\n" + a.read_text(encoding="utf-8"), encoding="utf-8")
    quiet = report(vault)
    assert orphan.id not in {f.id for f in quiet.findings}
    assert link.id not in {f.id for f in quiet.findings}
    assert {f.id for f in quiet.ignored} == {orphan.id, link.id}
    assert quiet.to_json()["orphans"] == [] and quiet.to_json()["ignored"] == 2

    everything = report(vault, include_ignored=True).to_json()
    assert everything["orphans"] == ["notes/lonely.md"]
    assert [f["ignored"] for f in everything["findings"] if f["id"] == orphan.id] == [True]

    assert health_ignore.unignore(vault, orphan.id) is None
    assert report(vault).to_json()["orphans"] == ["notes/lonely.md"]


@pytest.mark.parametrize("damage", ["{not json", '{"ignored": ["a list"]}', "[]"])
def test_a_damaged_ignore_list_is_a_warning_not_a_crash(vault: Path, damage: str) -> None:
    path = vault / ".git/vaultwatch/health-ignore.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(damage, encoding="utf-8")
    r = report(vault)
    assert any("health ignore list" in w and "nothing is ignored" in w for w in r.warnings)
    assert r.to_json()["orphans"] == ["notes/lonely.md"]
    # the next ignore keeps the damaged file beside it and starts a new list
    orphan = next(f for f in r.findings if f.kind == "orphan")
    note = health_ignore.ignore(vault, orphan)
    assert note is not None and "health-ignore.json.damaged" in note
    assert (path.parent / "health-ignore.json.damaged").read_text(encoding="utf-8") == damage
    assert report(vault).to_json()["orphans"] == []


def test_health_config_errors_are_clear_and_keep_the_vault_open(make_vault: Any) -> None:
    root = make_vault(
        {
            "vault.config.yaml": "types: {task: {folder: tasks}}\nhealth:\n  orphan_days: -3\n"
            "  duplicate_score: 2\n  open: open\n  types: {nope: {stale_days: 3}}\n  colour: red\n",
            "a.md": "# A\n",
        }
    )
    vault = Vault(root)
    try:
        problems = [str(p) for p in vault.config.health_problems]
        assert vault.config_notice is None  # the rest of the config is in force
        assert "a" in {p.rsplit(".", 1)[0] for p in vault.entries()}
    finally:
        vault.close()
    text = "\n".join(problems)
    assert "vault.config.yaml:3: health.orphan_days must be a whole number above 0" in text
    assert "vault.config.yaml:4: health.duplicate_score must be a number above 0" in text
    assert "health.open must be a list of the status values" in text
    assert "health.types names unknown type 'nope'" in text
    assert "unknown key 'colour' in health" in text
    r = report(root)
    assert sum("health config:" in w for w in r.warnings) == 5


def test_the_cli_json_and_text(vault: Path) -> None:
    r = run(vault, "health", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"problems", "broken_links", "orphans", "duplicates", "stale"} <= set(out)
    assert out["problems"][0].keys() >= {"path", "code", "message"}
    assert out["broken_links"][0].keys() >= {"path", "link"}
    assert "salary" not in r.stdout

    text = run(vault.parent, "health", str(vault))
    assert text.returncode == 0, text.stderr
    assert "Broken links (6)" in text.stdout and "[[nothere]]" in text.stdout
    assert "notes/a.md:9  [[ghost\\|alias]]" in text.stdout


def test_the_cli_hides_ignored_findings_unless_asked(vault: Path) -> None:
    r = report(vault)
    health_ignore.ignore(vault, next(f for f in r.findings if f.kind == "too_big"))
    text = run(vault, "health").stdout
    assert "1 ignored (--include-ignored shows them)" in text and "big.md" not in text
    assert "big.md  " in run(vault, "health", "--include-ignored").stdout
    assert "[ignored]" in run(vault, "health", "--include-ignored").stdout


def test_the_cli_refuses_what_is_not_a_vault(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for args, why in (
        (("health", str(tmp_path / "missing")), "is not a folder"),
        (("health", str(plain)), "is not a vault with git history"),
        (("health", "--bogus"), "unrecognized arguments"),
    ):
        r = run(tmp_path, *args)
        assert r.returncode == 1, r.stdout
        assert len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr
        assert r.stdout == ""
    assert not (plain / ".git").exists()


APISIX = Path(__file__).parent / "apisix_docs"


@pytest.mark.semantic
def test_an_english_and_chinese_near_duplicate_pair_is_found(make_vault: Any) -> None:
    """The same page in English and in Chinese (tests/apisix_docs) pairs across languages with
    its score; an unrelated note does not, and a private copy never appears."""
    en = (APISIX / "en/support-fips-in-apisix.md").read_text(encoding="utf-8")
    zh = (APISIX / "zh/support-fips-in-apisix.md").read_text(encoding="utf-8")
    root = make_vault(
        {
            "vault.config.yaml": 'private: ["private/**"]\n',
            "en/fips.md": en,
            "zh/fips.md": zh,
            "private/fips-copy.md": en,
            "other.md": (APISIX / "en/plugins/cors.md").read_text(encoding="utf-8"),
        }
    )
    vault = Vault(root)
    try:
        embed(vault)
        r = health.check(vault, today=LATER).to_json()
    finally:
        vault.close()
    assert r["duplicates_checked"] is True
    assert [(d["a"], d["b"]) for d in r["duplicates"]] == [("en/fips.md", "zh/fips.md")]
    assert r["duplicates"][0]["score"] >= 0.85
    assert "private" not in json.dumps(r)


@pytest.mark.semantic
def test_a_translation_is_a_near_duplicate_below_the_one_language_threshold(
    make_vault: Any,
) -> None:
    """A page and its translation score under health.duplicate_score (0.85, for notes in one
    language): global-rule 0.77, script 0.81 with the bundled model. They are listed, with their
    score and "in the other language"; a page whose translation is not in the vault pairs with
    nothing (issue 29: before, health listed no pair across languages below 0.85)."""

    def page(lang: str, rel: str) -> str:
        return (APISIX / lang / rel).read_text(encoding="utf-8")

    root = make_vault(
        {
            "en/global-rule.md": page("en", "terminology/global-rule.md"),
            "zh/global-rule.md": page("zh", "terminology/global-rule.md"),
            "en/script.md": page("en", "terminology/script.md"),
            "zh/script.md": page("zh", "terminology/script.md"),
            "en/route.md": page("en", "terminology/route.md"),  # no translation here
            "zh/cors.md": page("zh", "plugins/cors.md"),  # nor here
        }
    )
    vault = Vault(root)
    try:
        embed(vault)
        r = health.check(vault, today=LATER)
    finally:
        vault.close()
    dups = r.by_kind("duplicate")
    assert sorted((d.path, d.other) for d in dups) == [
        ("en/global-rule.md", "zh/global-rule.md"),
        ("en/script.md", "zh/script.md"),
    ], [(d.path, d.other, d.score) for d in dups]
    for d in dups:
        assert d.score is not None and 0.7 <= d.score < 0.85, d
        assert "in the other language" in d.reason and f"{d.score:.2f}" in d.reason


def test_cross_language_pairs_are_mutual_bests_across_scripts_only() -> None:
    """The rule itself on vectors made by hand: a CJK row and a non-CJK row that are each other's
    closest in the other script pair when they reach the lowered threshold; two rows in one
    script never do (near_pairs handles those), nor a row whose closest is another's."""
    import numpy as np

    from server.services.cross_language import cross_language_pairs

    mat = np.array(
        [
            [1.0, 0.0, 0.0],  # 0 en: row 1 is its closest CJK row, but row 1 prefers row 2
            [0.8, 0.6, 0.0],  # 1 zh: 0.80 with row 0, 0.83 with row 2
            [1.0, 0.05, 0.0],  # 2 en
            [0.0, 0.0, 1.0],  # 3 zh
            [0.0, 0.5, 0.87],  # 4 en: 0.87 with row 3
        ]
    )
    cjk = [False, True, False, True, False]
    pairs = cross_language_pairs(mat, cjk, threshold=0.85)  # listed from 0.85 - 0.15
    assert [(i, j) for _, i, j in pairs] == [(3, 4), (1, 2)]
    assert [round(s, 2) for s, _, _ in pairs] == [0.87, 0.83]
    assert [(i, j) for _, i, j in cross_language_pairs(mat, cjk, threshold=1.0)] == [(3, 4)]
    assert cross_language_pairs(mat, [False] * 5, threshold=0.5) == []


def test_near_duplicates_wait_for_recall_and_say_so(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall on but not indexed: the finding is skipped, the result says why, nothing is
    embedded (no model is loaded)."""
    monkeypatch.delenv("VAULTWATCH_SEMANTIC", raising=False)
    r = report(vault)
    assert r.duplicates_checked is False
    assert any("recall has not indexed these notes yet" in w for w in r.warnings)
    v = Vault(vault)
    try:
        sem = v.semantic()
        assert sem is not None
        paths, _, missing = sem.whole_vectors({p: e.doc for p, e in v.entries().items()})
    finally:
        v.close()
    assert paths == [] and len(missing) == r.notes  # nothing was embedded


def test_a_vault_of_one_note_has_no_pair_to_compare(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, one note gave 'recall has not indexed these notes yet' while the header said
    recall was ready: there is simply nothing to compare."""
    monkeypatch.delenv("VAULTWATCH_SEMANTIC", raising=False)
    root = make_vault({"vault.config.yaml": "semantic: {model: hash-ngrams}\n", "a.md": "# A\n"})
    r = report(root)
    assert r.duplicates_checked is True and not r.by_kind("duplicate")
    assert not any("near-duplicates" in w for w in r.warnings), r.warnings


# -- near-duplicates, bounded ---------------------------------------------------------------------


def _brute_pairs(mat: Any, threshold: float) -> list[tuple[float, int, int]]:
    """Every pair i < j at or above the threshold, best first (the oracle: the whole matrix)."""
    import numpy as np

    unit = mat / np.linalg.norm(mat, axis=1)[:, None]
    sims = unit @ unit.T
    n = len(mat)
    return sorted(
        (
            (float(sims[i, j]), i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if sims[i, j] >= threshold
        ),
        reverse=True,
    )


def test_near_pairs_are_the_closest_pairs_and_every_pair_is_counted() -> None:
    """Blocks of rows, several per cluster and clusters across blocks: the pairs kept are the
    best `cap` of all (as from the whole matrix), each once with i < j, and every pair at or
    above the threshold is counted."""
    import numpy as np

    rng = np.random.default_rng(7)
    centres = rng.normal(size=(30, 24))
    mat = np.vstack([centres[k % 30] + rng.normal(scale=0.25, size=24) for k in range(450)])
    mat = np.vstack([mat, rng.normal(size=(150, 24))]).astype(np.float32)  # and unrelated ones
    brute = _brute_pairs(mat, 0.85)
    assert len(brute) > 500  # more than the cap: some are left out
    for block in (37, 64, 1024):
        pairs, total = health_duplicates.near_pairs(mat, 0.85, cap=100, block=block)
        assert total == len(brute)
        assert all(i < j for _, i, j in pairs) and len({(i, j) for _, i, j in pairs}) == 100
        assert sorted((i, j) for _, i, j in pairs) == sorted((i, j) for _, i, j in brute[:100])
        got = sorted((s for s, _, _ in pairs), reverse=True)
        assert np.allclose(got, [s for s, _, _ in brute[:100]], atol=1e-5)
    # under the cap: every pair, none made up
    pairs, total = health_duplicates.near_pairs(mat, 0.85, cap=10_000, block=64)
    assert total == len(pairs) == len(brute)
    assert sorted((i, j) for _, i, j in pairs) == sorted((i, j) for _, i, j in brute)


def test_near_pairs_at_several_thresholds_are_those_of_each_alone() -> None:
    """One pass of the product for the near-duplicates and the same-subject pairs (health asks
    both of one matrix): each threshold's pairs and count are exactly near_pairs' own."""
    import numpy as np

    rng = np.random.default_rng(11)
    centres = rng.normal(size=(20, 24))
    mat = np.vstack([centres[k % 20] + rng.normal(scale=0.35, size=24) for k in range(400)])
    mat = np.vstack([mat, rng.normal(size=(100, 24))]).astype(np.float32)
    for block in (37, 1024):
        both = health_duplicates.near_pairs_at(mat, [0.85, 0.75], cap=60, block=block)
        for (pairs, total), threshold in zip(both, (0.85, 0.75), strict=True):
            alone, alone_total = health_duplicates.near_pairs(mat, threshold, cap=60, block=block)
            assert total == alone_total and total > 60
            assert sorted(pairs) == sorted(alone)


def test_near_pairs_of_notes_all_alike_are_capped_and_the_rest_counted() -> None:
    """Every note like every other (the bench vault's generated notes are close to this):
    the output is the cap, not the 124,750 pairs, and the count of all of them is exact."""
    import numpy as np

    rng = np.random.default_rng(3)
    mat = (np.ones((500, 16)) + rng.normal(scale=0.01, size=(500, 16))).astype(np.float32)
    pairs, total = health_duplicates.near_pairs(mat, 0.85, cap=50, block=64)
    assert total == 500 * 499 // 2
    assert len(pairs) == 50 and len({(i, j) for _, i, j in pairs}) == 50
    assert all(i < j and s >= 0.85 for s, i, j in pairs)
    # zero vectors (an empty note) are never a pair, not even with each other
    pairs, total = health_duplicates.near_pairs(np.zeros((3, 4), np.float32), 0.85)
    assert (pairs, total) == ([], 0)


def test_the_pairs_not_listed_are_in_the_json() -> None:
    r = health.Report(notes=3, findings=[], ignored=[], duplicates_checked=True)
    assert r.to_json()["duplicates_not_listed"] == 0
    r.duplicates_unlisted = 331_337
    assert r.to_json()["duplicates_not_listed"] == 331_337


# -- near-duplicates that mean something (issue 28) ----------------------------------------------

DAILY_TEMPLATE = (
    "---\ndate: {{date}}\nmood:\n---\n# {{title}}\n\n## Tasks\n- [ ] review inbox\n\n"
    "## Log\n\n## Gratitude\n\n## Notes\n"
)
RAFT = (
    "Raft elects a leader with randomized timeouts; the leader appends entries to its log and "
    "replicates them to followers, committing an entry once a majority stored it. "
)


def test_templates_and_their_instances_are_not_near_duplicates(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template folder (Obsidian's and Templater's settings) holds skeletons: neither the
    template nor the notes made from it pair for sharing it, while two notes that say the same
    thing still do, first."""
    monkeypatch.delenv("VAULTWATCH_SEMANTIC", raising=False)
    files: dict[str, str] = {
        "vault.config.yaml": "semantic: {model: hash-ngrams}\nhealth: {duplicate_score: 0.5}\n",
        ".obsidian/templates.json": '{"folder": "Templates"}',
        ".obsidian/plugins/templater-obsidian/data.json": '{"templates_folder": "Meta/Tpl"}',
        "Templates/Daily.md": DAILY_TEMPLATE,
        "Meta/Tpl/Daily copy.md": DAILY_TEMPLATE,
        "a/Raft.md": "# Raft\n\n" + RAFT * 3,
        "b/Raft notes.md": "# Raft notes\n\n" + RAFT * 3 + "\nSee also Paxos.\n",
    }
    days = ["bought milk", "call the plumber", "ran 5 km", "read two chapters", "fixed the bike"]
    for n, line in enumerate(days, 1):
        files[f"daily/2026-01-0{n}.md"] = (
            DAILY_TEMPLATE.replace("{{date}}", f"2026-01-0{n}")
            .replace("{{title}}", f"2026-01-0{n}")
            .replace("## Log\n", f"## Log\n- {line}\n")
        )
    root = make_vault(files)
    vault = Vault(root)
    try:
        embed(vault)
        # the daily notes are alike by their vectors: without the skeleton rule they would pair
        sem = vault.semantic()
        assert sem is not None
        paths, mat, _ = sem.whole_vectors({p: e.doc for p, e in vault.entries().items()})
        pairs, _ = health_duplicates.near_pairs(mat, 0.5)
        assert any(
            paths[i].startswith("daily/") and paths[j].startswith("daily/") for _, i, j in pairs
        )
        assert any("Templates/" in paths[i] + paths[j] for _, i, j in pairs)
        r = health.check(vault, today=LATER)
    finally:
        vault.close()
    dups = [(f.path, f.other) for f in r.by_kind("duplicate")]
    assert dups == [("a/Raft.md", "b/Raft notes.md")]
    assert "shares" in r.by_kind("duplicate")[0].reason
    assert r.duplicates_unlisted > 0
    assert any("skeleton" in w for w in r.warnings), r.warnings


def test_too_big_is_read_docs_own_rule_for_text_that_json_escapes() -> None:
    """health_links._fits takes a shortcut for notes that surely fit (twice their length, when
    no character escapes to six); it must answer as read_doc's rule for every text, control
    characters (six each in JSON) and quotes (two) included, on both sides of the limit."""
    from server.notes.note import parse_doc
    from server.notes.reading import fits_one_read
    from server.services.health_links import _fits

    limit = 40_000  # the default: here a text of control characters that passes "twice its
    # length" would not fit
    answers = set()
    for fill in ("a", "\x01", '"', "\n", "中"):
        for n in range(0, 21_000, 331):
            text = "# T\n\n" + fill * n + "\n"
            doc = parse_doc("t.md", text.encode("utf-8"))
            exact = fits_one_read(doc, text, None, limit)
            assert _fits(doc, text, None, limit) == exact, (fill, n)
            answers.add(exact)
    assert answers == {True, False}  # both sides of the limit were tried
