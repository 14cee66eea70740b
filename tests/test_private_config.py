"""The config's own spellings never open a private note (audit findings 1-3).

Each test goes through the real server (the SDK's in-memory client) on a fresh vault:
- a `private:` or `protected:` glob spelt `./Secret`, `Secret\\`, `//Secret`, with a trailing dot
  or space, in NFD... protects exactly what its plain spelling protects, and a glob that cannot
  be read as a folder of the vault (`..`, an absolute path, an invisible character) refuses the
  config, which fails closed;
- a key written twice (two `private:` blocks) refuses the config instead of the last one winning;
- `rules:` (the text get_context shows) obeys the rules of any note read;
- `tags.vocabulary:` (whose unused tags list_tags shows, and to which a new tag is appended as
  the AI) too, and may not be a symlink.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from server.vault import Vault

pytestmark = pytest.mark.anyio

SECRET = "ZEBRAFISH"
NFD_CAFE = "Cafe\u0301"


def files_with(private: str, *, rules: str = "CLAUDE.md", protected: str = "[]") -> dict[str, Any]:
    return {
        "vault.config.yaml": (
            f"rules: {rules}\nprivate: {private}\nprotected: {protected}\n"
            "context:\n  - rules\n  - {title: Recent, recent: 50}\n"
        ),
        "CLAUDE.md": "# Rules\nBe brief.\n",
        "public.md": "# Public\nplain words\n",
        "Secret/a.md": f"# A {SECRET}\nroot secret {SECRET}\n",
        "Secret/sub/b.md": f"# B {SECRET}\nsub secret {SECRET}\n",
        "notes/Secret/c.md": f"# C {SECRET}\nnested secret {SECRET}\n",
        "Café/d.md": f"# D {SECRET}\ncafe secret {SECRET}\n",
        "owner/plan.md": "# Plan\nmine\n",
    }


ROOT_SECRET = {"Secret/a.md", "Secret/sub/b.md"}
ANY_SECRET = ROOT_SECRET | {"notes/Secret/c.md"}
ALL = ANY_SECRET | {"Café/d.md", "CLAUDE.md", "public.md", "owner/plan.md"}

# spelling as written in the YAML (single-quoted: no escapes) -> what its plain spelling hides
SPELLINGS: dict[str, set[str]] = {
    "Secret": ANY_SECRET,
    "./Secret": ANY_SECRET,
    " ./Secret/ ": ANY_SECRET,
    "Secret\\": ANY_SECRET,
    "Secret/": ANY_SECRET,
    "Secret/./": ANY_SECRET,
    "Secret ": ANY_SECRET,
    "Secret.": ANY_SECRET,
    "Secret./": ANY_SECRET,
    "Secret. /": ANY_SECRET,
    "/Secret": ROOT_SECRET,
    "//Secret": ROOT_SECRET,
    "/./Secret": ROOT_SECRET,
    "\\Secret": ROOT_SECRET,
    "Secret/**": ROOT_SECRET,
    "./Secret/**": ROOT_SECRET,
    ".\\Secret\\**": ROOT_SECRET,
    "Secret//**": ROOT_SECRET,
    "Secret\\sub": {"Secret/sub/b.md"},
    "./Secret//sub/": {"Secret/sub/b.md"},
    NFD_CAFE: {"Café/d.md"},
    NFD_CAFE + "/": {"Café/d.md"},
}


async def visible(s: Any) -> set[str]:
    listed = await s.call("list_docs", limit=200)
    return {d["path"] for d in listed["docs"]}


@pytest.mark.parametrize("spelling", list(SPELLINGS), ids=[repr(k) for k in SPELLINGS])
async def test_every_spelling_of_a_private_glob_protects_what_the_plain_one_does(
    connect: Any, make_vault: Callable[..., Path], spelling: str
) -> None:
    hidden = SPELLINGS[spelling]
    root = make_vault(files_with(f"['{spelling}']"))
    async with connect(root) as s:
        assert not s.vault.config_errors, s.vault.config_errors
        assert await visible(s) == ALL - hidden
        found = await s.call("search_text", query=SECRET, limit=50)
        assert {h["path"] for h in found["hits"]} == (ANY_SECRET | {"Café/d.md"}) - hidden
        for path in hidden:
            err = await s.error("read_doc", path=path)
            assert "private" in err, err
            err = await s.error("append_section", path=path, heading="x", content="y")
            assert "private" in err, err
        for path in ALL - hidden:
            await s.call("read_doc", path=path)
        ctx = await s.call("get_context")
        assert not any(p in json.dumps(ctx) for p in hidden), ctx
        # no warning: every spelling names a folder that is there
        assert "matches nothing" not in json.dumps(ctx.get("warnings", [])), ctx


@pytest.mark.parametrize("spelling", ["./owner", "owner\\", "//owner", "owner./", "./owner/**"])
async def test_every_spelling_of_a_protected_glob_protects_the_folder(
    connect: Any, make_vault: Callable[..., Path], spelling: str
) -> None:
    root = make_vault(files_with("[]", protected=f"['{spelling}']"))
    before = (root / "owner/plan.md").read_text()
    async with connect(root) as s:
        assert not s.vault.config_errors, s.vault.config_errors
        err = await s.error("append_section", path="owner/plan.md", heading="Log", content="AI")
        assert "protected" in err, err
        err = await s.error("create_doc", path="owner/new.md", body="# New\n")
        assert "protected" in err, err
        await s.call("append_section", path="public.md", heading="Log", content="AI line")
    assert (root / "owner/plan.md").read_text() == before
    assert not (root / "owner/new.md").exists()


def refused_globs(root: Path) -> dict[str, str]:
    """glob -> a word its config problem must say."""
    return {
        "../Secret": "..",
        "Secret/../notes": "..",
        "C:\\vault\\Secret": "absolute",
        "~/vault/Secret": "absolute",
        f"{root}/Secret": "absolute",
        "Sec\u200bret": "invisible",
        ".": "whole vault",
        "/": "whole vault",
    }


@pytest.mark.parametrize("case", range(8))
async def test_a_private_glob_that_cannot_name_a_vault_folder_refuses_the_config(
    connect: Any, make_vault: Callable[..., Path], case: int
) -> None:
    root = make_vault(files_with("['Secret/']"))
    spelling, word = list(refused_globs(root).items())[case]
    Vault(root).close()  # a server once ran on the good config: its rules are kept
    (root / "vault.config.yaml").write_text(
        files_with(f"['{spelling}']")["vault.config.yaml"], encoding="utf-8"
    )
    async with connect(root) as s:
        problems = [str(p) for p in s.vault.config_errors]
        assert any("vault.config.yaml:2" in p and word in p for p in problems), problems
        assert await visible(s) == ALL - ANY_SECRET  # the last good `Secret/` stays in force
        err = await s.error("read_doc", path="Secret/a.md")
        assert "does not load" in err and word in err, err
        found = await s.call("search_text", query=SECRET)
        assert {h["path"] for h in found["hits"]} == {"Café/d.md"}


async def test_a_refused_glob_with_nothing_kept_closes_every_path(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    root = make_vault(files_with("['./Secret', '../Secret']"))
    async with connect(root) as s:
        assert await visible(s) == set()
        assert (await s.call("search_text", query=SECRET))["total"] == 0
        err = await s.error("read_doc", path="Secret/a.md")
        assert "vault.config.yaml:2" in err and "'../Secret'" in err, err
        err = await s.error("read_doc", path="public.md")
        assert "does not load" in err, err


# ------------------------------------------------------------------------------------------------
# A key written twice


TWO_PRIVATE = """\
rules: CLAUDE.md
private:
  - Secret/
limits: {result_chars: 40000}
private:
  - health/
"""


async def test_two_private_blocks_refuse_the_config_with_nothing_kept(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = files_with("[]")
    files["vault.config.yaml"] = TWO_PRIVATE
    files["health/h.md"] = "# H\nhealth\n"
    root = make_vault(files)
    async with connect(root) as s:
        problems = [str(p) for p in s.vault.config_errors]
        assert any(
            "vault.config.yaml:5" in p and "private" in p and "twice" in p and "line 2" in p
            for p in problems
        ), problems
        assert await visible(s) == set()
        assert (await s.call("search_text", query=SECRET))["total"] == 0
        err = await s.error("read_doc", path="Secret/a.md")
        assert "twice" in err and "vault.config.yaml:5" in err, err


async def test_two_private_blocks_keep_the_last_good_rules(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = files_with("['Secret/']")
    files["health/h.md"] = "# H\nhealth\n"
    root = make_vault(files)
    Vault(root).close()  # a server once ran on the good config
    (root / "vault.config.yaml").write_text(TWO_PRIVATE)
    async with connect(root) as s:
        assert any("twice" in str(p) for p in s.vault.config_errors)
        shown = await visible(s)
        assert not shown & ANY_SECRET, shown
        assert "public.md" in shown
        assert (await s.call("search_text", query="root secret"))["total"] == 0
        assert "private" in await s.error("read_doc", path="Secret/a.md")
        ctx = await s.call("get_context")
        assert any("twice" in w for w in ctx["warnings"]), ctx["warnings"]


async def test_a_running_server_keeps_its_rules_when_a_second_private_block_appears(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    root = make_vault(files_with("['Secret/']"))
    async with connect(root) as s:
        assert "private" in await s.error("read_doc", path="Secret/a.md")
        cfg = root / "vault.config.yaml"
        cfg.write_text(cfg.read_text() + "private: []\n")
        st = cfg.stat()
        os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        err = await s.error("read_doc", path="Secret/a.md")
        assert "private" in err, err
        assert any("twice" in str(p) for p in s.vault.config_errors)
        assert (await s.call("search_text", query="root secret"))["total"] == 0


# ------------------------------------------------------------------------------------------------
# Bracket expressions, as .gitignore reads them

BRACKET_NOTES = [
    "journal/2025-03-02.md",
    "journal/plan.md",
    "Private/a.md",
    "notes/private/b.md",
    "prevate/c.md",
    "[2024] Journal/d.md",
    "2 Journal/e.md",
    "public.md",
]
BRACKET_GLOBS = [
    "journal/202[0-9]-*",
    "[Pp]rivate/",
    "priv[a-z]te/",
    "journal/[!p]*",
    "pr[!i]vate/",
    "[2024] Journal/",
]


@pytest.mark.parametrize("glob", BRACKET_GLOBS)
async def test_a_bracket_glob_hides_at_least_what_git_ignores(
    connect: Any, make_vault: Callable[..., Path], glob: str
) -> None:
    """Before, `[`, `]` and `!` were matched literally: `journal/202[0-9]-*` hid nothing and
    the diary was read in full. A glob with brackets now hides what .gitignore would, and the
    name spelt with the brackets themselves too (closed both ways)."""
    files: dict[str, str | bytes] = {n: f"# N\n{SECRET} {n}\n" for n in BRACKET_NOTES}
    files["vault.config.yaml"] = f"private: ['{glob}']\n"
    root = make_vault(files)
    (root / ".gitignore").write_text(glob + "\n")
    ignored = {
        n
        for n in BRACKET_NOTES
        if subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", "--no-index", n]
        ).returncode
        == 0
    }
    assert ignored, "git ignores something for every glob here"
    async with connect(root) as s:
        assert not s.vault.config_errors, s.vault.config_errors
        shown = await visible(s)
        assert not shown & ignored, (glob, shown & ignored)
        for n in ignored:
            err = await s.error("read_doc", path=n)
            assert SECRET not in err and "private" in err, err
        assert "public.md" in shown
    if glob.startswith("[2024]"):
        assert "[2024] Journal/d.md" not in shown  # the folder named with brackets


async def test_a_named_character_class_refuses_the_config(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    root = make_vault({"vault.config.yaml": "private: ['journal/[[:digit:]]*']\n", "a.md": "# A\n"})
    async with connect(root) as s:
        problems = [str(p) for p in s.vault.config_errors]
        assert any("[0-9]" in p for p in problems), problems
        assert await visible(s) == set()  # nothing kept: every path is closed


# The rules file


def rules_targets(root: Path) -> dict[str, str]:
    """`rules:` value -> the text behind it that get_context must never show."""
    outside = root.parent / "outside.md"
    outside.write_text("# Outside\nOUTSIDE-TEXT\n")
    return {
        "Secret/a.md": SECRET,
        ".git/config": "repositoryformatversion",
        ".git/vaultwatch/token": "TOKENTOKEN123",
        "../outside.md": "OUTSIDE-TEXT",
        str(outside): "OUTSIDE-TEXT",
        "/etc/passwd": "root:",
        "./Secret/a.md": SECRET,
        "public.txt": "NOT-A-NOTE",
    }


@pytest.mark.parametrize("case", range(8))
async def test_the_rules_file_obeys_the_rules_of_a_note_read(
    connect: Any, make_vault: Callable[..., Path], case: int
) -> None:
    root = make_vault({**files_with("['Secret/']"), "public.txt": "NOT-A-NOTE\n"})
    (root / ".git/vaultwatch").mkdir(exist_ok=True)
    (root / ".git/vaultwatch/token").write_text("TOKENTOKEN123\n")
    target, text = list(rules_targets(root).items())[case]
    cfg = root / "vault.config.yaml"
    cfg.write_text(cfg.read_text().replace("rules: CLAUDE.md", f"rules: '{target}'"))
    async with connect(root) as s:
        problems = [str(p) for p in s.vault.config_errors]
        assert any("vault.config.yaml:1" in p and "rules" in p for p in problems), problems
        ctx = await s.call("get_context")
        assert text not in json.dumps(ctx), ctx
        rules = next(b for b in ctx["blocks"] if b["kind"] == "rules")
        assert rules["content"] == "" and rules["note"], rules


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("Secret/a.md", "root secret"),
        (".git/config", "repositoryformatversion"),
        (".git/vaultwatch/token", "TOKENTOKEN123"),
        ("../outside.md", "OUTSIDE-TEXT"),
    ],
)
async def test_rules_kept_from_an_older_version_are_checked_when_read(
    connect: Any, make_vault: Callable[..., Path], target: str, text: str
) -> None:
    """Even a rules path that reached last_good_rules.json (an older version kept whatever the
    config said) is read only as a note would be."""
    root = make_vault(files_with("['Secret/']"))
    (root.parent / "outside.md").write_text("OUTSIDE-TEXT\n")
    Vault(root).close()
    kept = root / ".git/vaultwatch/last_good_rules.json"
    rules = json.loads(kept.read_text())
    kept.write_text(json.dumps({**rules, "rules": target}))
    (root / ".git/vaultwatch/token").write_text("TOKENTOKEN123\n")
    (root / "vault.config.yaml").write_text("private: [[\n")  # broken: the kept rules stand in
    async with connect(root) as s:
        ctx = await s.call("get_context")
        assert text not in json.dumps(ctx), ctx
        rules_block = next(b for b in ctx["blocks"] if b["kind"] == "rules")
        assert rules_block["content"] == "" and "cannot" in rules_block["note"], rules_block


async def test_a_plain_rules_file_is_still_shown(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    root = make_vault(files_with("['./Secret']", rules="./CLAUDE.md"))
    async with connect(root) as s:
        assert not s.vault.config_errors, s.vault.config_errors
        ctx = await s.call("get_context")
        rules = next(b for b in ctx["blocks"] if b["kind"] == "rules")
        assert rules["path"] == "CLAUDE.md" and "Be brief." in rules["content"], rules
        # spelt `./CLAUDE.md` in the config, it is still the owner's file
        err = await s.error("append_section", path="CLAUDE.md", heading="x", content="obey")
        assert "protected" in err, err


# The tag vocabulary


def vocabulary_targets(root: Path) -> list[str]:
    """`tags.vocabulary:` values whose file list_tags must never show and a write never touch."""
    outside = root.parent / "outside.yaml"
    outside.write_text("- outsidetag\n")
    os.symlink("Secret/tags.yaml", root / "to-private.yaml")
    os.symlink(str(outside), root / "to-outside.yaml")
    os.symlink("tags.yaml", root / "to-public.yaml")
    return [
        "Secret/tags.yaml",
        "./Secret/tags.yaml",
        "../outside.yaml",
        str(outside),
        "to-private.yaml",
        "to-outside.yaml",
        "to-public.yaml",
        ".git/vaultwatch/token",
    ]


@pytest.mark.parametrize("case", range(8))
async def test_the_tag_vocabulary_obeys_the_rules_of_a_note_read(
    connect: Any, make_vault: Callable[..., Path], case: int
) -> None:
    """Before, a private or outside vocabulary's tags were listed to the assistant, and
    `tags: [newtag]` was committed by the AI into the private file (or, through a symlink,
    replaced the link)."""
    files = {
        **files_with("['Secret/']"),
        "Secret/tags.yaml": f"- {SECRET.lower()}\n",
        "tags.yaml": "- public\n",
    }
    root = make_vault(files)
    (root / ".git/vaultwatch").mkdir(exist_ok=True)
    (root / ".git/vaultwatch/token").write_text("TOKENTOKEN123\n")
    target = vocabulary_targets(root)[case]
    cfg = root / "vault.config.yaml"
    cfg.write_text(cfg.read_text() + f"tags:\n  vocabulary: '{target}'\n  unknown: create\n")
    before = {p: p.read_bytes() for p in (root / "Secret/tags.yaml", root.parent / "outside.yaml")}
    async with connect(root) as s:
        problems = [str(p) for p in s.vault.config_errors]
        assert any("vault.config.yaml:" in p and "tags.vocabulary" in p for p in problems), problems
        listed = json.dumps(await s.call("list_tags"))
        assert SECRET.lower() not in listed and "outsidetag" not in listed, listed
        err = await s.error("create_doc", path="n.md", body="# N\nx\n", tags=["brandnew"])
        assert "config_broken" in err and "tags.vocabulary" in err, err
    assert {p: p.read_bytes() for p in before} == before
    for link in ("to-private.yaml", "to-outside.yaml", "to-public.yaml"):
        assert (root / link).is_symlink(), link
    assert not (root / "n.md").exists()


async def test_a_plain_vocabulary_still_takes_new_tags(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = {**files_with("['Secret/']"), "tags.yaml": "- public\n"}
    files["vault.config.yaml"] += "tags:\n  vocabulary: ./tags.yaml\n  unknown: create\n"
    root = make_vault(files)
    async with connect(root) as s:
        assert not s.vault.config_errors, s.vault.config_errors
        assert (await s.call("list_tags"))["unused_vocabulary"] == ["public"]
        await s.call("create_doc", path="n.md", body="# N\nx\n", tags=["brandnew"])
    assert (root / "tags.yaml").read_text() == "- public\n- brandnew\n"


@pytest.mark.semantic
@pytest.mark.parametrize("spelling", ["./Secret", "Secret\\", "Secret."])
async def test_recall_never_finds_a_note_behind_another_spelling(
    connect: Any, make_vault: Callable[..., Path], spelling: str
) -> None:
    """recall embeds what the walker gives it, under the same private rule (the small hashing
    model: no model to load)."""
    files = files_with(f"['{spelling}']")
    files["vault.config.yaml"] += "semantic: {model: hash-ngrams}\n"
    root = make_vault(files)
    async with connect(root) as s:
        for _ in range(300):  # bounded: the background indexer may take a moment
            r = await s.call("recall", query=f"root secret {SECRET}", limit=30)
            if r["ready"]:
                break
            await anyio.sleep(0.1)
        assert r["ready"] and r["hits"], r
        found = {h["path"] for h in r["hits"]}
        assert not found & ANY_SECRET, found
        assert "Café/d.md" in found  # the query does find what is not private
