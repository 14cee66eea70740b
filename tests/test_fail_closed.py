"""Private stays private under real conditions: a config that does not load, tags the AI makes
up, symlinks, gitignore-style globs, ignored notes, letter case and links as write targets.

Each test goes through the real server (the SDK's in-memory client); the config tests start a
fresh Vault (and once a fresh process) on a broken config, as a relaunched client would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from server.notes.config import load_config
from server.vault import Vault

from .conftest import REPO, git, git_log

pytestmark = pytest.mark.anyio

SECRET = "ZEBRAFISH"
CONFIG = """\
rules: CLAUDE.md
tags: {vocabulary: tags.yaml}
private: ["private/**"]
protected: ["owner/**"]
types:
  week: {folder: weeks}
context:
  - rules
  - {title: This week, type: week, latest: 1}
"""


def base_files() -> dict[str, str | bytes]:
    return {
        "vault.config.yaml": CONFIG,
        "tags.yaml": "- crdt\n- ok\n",
        "CLAUDE.md": "# Rules\nBe brief.\n",
        "notes/a.md": "---\ntags: [ok]\n---\n# A\nplain note\n",
        "owner/plan.md": "# Plan\nmine\n",
        "private/salary.md": f"---\ntags: [secretcomp]\n---\n# Salary {SECRET}\nreal {SECRET}\n",
        "weeks/2026-W49.md": "# Week 49\nnothing secret\n",
    }


async def assert_private_hidden(s: Any) -> None:
    """The private note is invisible and untouchable through every tool."""
    listed = await s.call("list_docs", limit=200)
    assert not any(d["path"].startswith("private/") for d in listed["docs"]), listed
    assert (await s.call("search_text", query=SECRET))["total"] == 0
    tags = await s.call("list_tags", days=3650)
    assert "secretcomp" not in {t["tag"] for t in tags["tags"]}
    assert SECRET not in str(await s.call("get_context"))
    await s.error("read_doc", path="private/salary.md")
    await s.error("append_section", path="private/salary.md", heading="Log", content="x")


# ------------------------------------------------------------------------------------------------
# A config that does not load at start


BREAKS = {
    "typo in the config": ("vault.config.yaml", CONFIG.replace("private: [", "private: [[")),
    "broken vocabulary": ("tags.yaml", "- crdt\n- [oops\n"),
    "missing vocabulary": ("tags.yaml", None),
    "missing config": ("vault.config.yaml", None),
}


@pytest.mark.parametrize("brk", list(BREAKS), ids=list(BREAKS))
async def test_a_fresh_server_on_a_broken_config_keeps_the_last_good_rules(
    connect: Any, make_vault: Callable[..., Path], brk: str
) -> None:
    root = make_vault(base_files())
    Vault(root).close()  # a server once ran on the good config
    name, text = BREAKS[brk]
    if text is None:
        (root / name).unlink()
    else:
        (root / name).write_text(text)
    async with connect(root) as s:  # a fresh server: nothing good in memory
        assert s.vault.config_errors
        await assert_private_hidden(s)
        # the protected files stay protected: rules, config, vocabulary and owner/**
        for path in ("CLAUDE.md", "owner/plan.md"):
            err = await s.error("append_section", path=path, heading="x", content="y")
            assert "protected" in err, err
        # every refusal says the config does not load and how to fix it
        err = await s.error("read_doc", path="private/salary.md")
        assert "does not load" in err and BREAKS[brk][0].split(".")[0] in err, err
        ctx = await s.call("get_context")
        assert any("last good" in w for w in ctx["warnings"]), ctx["warnings"]
        # ordinary notes still work
        assert (await s.call("read_doc", path="notes/a.md"))["title"] == "A"


async def test_a_broken_config_with_nothing_good_kept_refuses_every_path(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = base_files()
    files["vault.config.yaml"] = CONFIG.replace("private: [", "private: [[")
    root = make_vault(files)
    async with connect(root) as s:
        listed = await s.call("list_docs")
        assert listed["total"] == 0
        assert (await s.call("search_text", query=SECRET))["total"] == 0
        assert (await s.call("search_text", query="plain"))["total"] == 0
        for path in ("notes/a.md", "private/salary.md"):
            err = await s.error("read_doc", path=path)
            assert "vault.config.yaml:3" in err and "fix" in err, err
        err = await s.error("create_doc", path="notes/new.md", body="x")
        assert "vault.config.yaml:3" in err, err
        assert "Nothing was written" in err
        # fixed on disk: in force at once, without a restart
        cfg = root / "vault.config.yaml"
        cfg.write_text(CONFIG)
        st = cfg.stat()
        os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        assert (await s.call("read_doc", path="notes/a.md"))["title"] == "A"
        await assert_private_hidden(s)


@pytest.mark.slow
def test_a_fresh_process_on_a_broken_config_says_why_on_stderr(
    make_vault: Callable[..., Path],
) -> None:
    root = make_vault(base_files())
    Vault(root).close()
    (root / "tags.yaml").write_text("- [oops\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    r = subprocess.run(
        [sys.executable, "-m", "server.protocol.cli", "--vault", str(root)],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "tags.yaml:1" in r.stderr, r.stderr
    assert "last good" in r.stderr and "private" in r.stderr, r.stderr


# ------------------------------------------------------------------------------------------------
# Tags the AI adds in `unknown: create` mode


@pytest.mark.parametrize("tag", ["[oops", "*x", "a: b", "x\ny", "&anchor", "t" * 200, "bad\x07"])
async def test_a_tag_that_could_break_the_vocabulary_is_refused(
    connect: Any, make_vault: Callable[..., Path], tag: str
) -> None:
    root = make_vault(base_files())
    before = (root / "tags.yaml").read_bytes()
    head = git(root, "rev-parse", "HEAD")
    async with connect(root) as s:
        err = await s.error("update_frontmatter", path="notes/a.md", add_tags=[tag])
        assert "tag" in err and "Nothing was written" in err, err
        err = await s.error("create_doc", path="notes/b.md", body="# B\n", tags=[tag])
        assert "tag" in err, err
    assert (root / "tags.yaml").read_bytes() == before
    assert git(root, "rev-parse", "HEAD") == head
    load_config(root)  # still loads


@pytest.mark.parametrize(
    ("vocab", "expect"),
    [
        ("- crdt\n- ok", "- crdt\n- ok\n- node.js\n- café-ü\n"),
        ("crdt: sync\nok: fine\n", "crdt: sync\nok: fine\nnode.js:\ncafé-ü:\n"),
        ("tags:\n  - crdt\n  - ok\n", "tags:\n  - crdt\n  - ok\n  - node.js\n  - café-ü\n"),
    ],
)
async def test_new_tags_are_written_as_yaml_the_vocabulary_loads(
    connect: Any, make_vault: Callable[..., Path], vocab: str, expect: str
) -> None:
    files = base_files()
    files["tags.yaml"] = vocab
    root = make_vault(files)
    async with connect(root) as s:
        await s.call("update_frontmatter", path="notes/a.md", add_tags=["node.js", "café-ü"])
    assert (root / "tags.yaml").read_text() == expect
    assert {"crdt", "ok", "node.js", "café-ü"} <= set(load_config(root).vocabulary)


async def test_a_vocabulary_the_new_tag_would_break_is_refused(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = base_files()
    files["tags.yaml"] = "tags: [crdt, ok]\n"  # a form a plain append cannot extend
    root = make_vault(files)
    async with connect(root) as s:
        err = await s.error("update_frontmatter", path="notes/a.md", add_tags=["fresh"])
        assert "tags.yaml" in err and "owner" in err, err
    assert (root / "tags.yaml").read_text() == "tags: [crdt, ok]\n"
    assert "fresh" not in (root / "notes/a.md").read_text()


# ------------------------------------------------------------------------------------------------
# Symlinks: one target rule for the walker and every path check


async def test_symlinks_to_private_notes_or_git_files_are_invisible(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    root = make_vault(base_files())
    (root / ".git/vaultwatch").mkdir(exist_ok=True)
    (root / ".git/vaultwatch/token").write_text("TOKENTOKEN123\n")
    with (root / ".git/config").open("a") as fh:
        fh.write('[remote "origin"]\n\turl = https://alice:hunter2pass@git.example/x.git\n')
    os.symlink("../private/salary.md", root / "notes/today.md")
    os.symlink("../.git/vaultwatch/token", root / "weeks/latest.md")
    os.symlink("../.git/config", root / "notes/cfg.md")
    os.symlink("a.md", root / "notes/alias.md")  # a link to a visible note is that note
    (root / "CLAUDE.md").unlink()  # the rules get_context shows follow the same rule
    os.symlink("private/salary.md", root / "CLAUDE.md")
    async with connect(root) as s:
        await assert_private_hidden(s)
        listed = {d["path"] for d in (await s.call("list_docs", limit=200))["docs"]}
        assert "notes/alias.md" in listed
        assert not listed & {"notes/today.md", "weeks/latest.md", "notes/cfg.md"}
        for word in ("TOKENTOKEN123", "hunter2pass"):
            assert (await s.call("search_text", query=word))["total"] == 0
        assert "TOKENTOKEN123" not in str(await s.call("get_context"))
        for path in ("notes/today.md", "weeks/latest.md", "notes/cfg.md"):
            err = await s.error("read_doc", path=path)
            assert "symlink" in err, err


async def test_a_note_a_protected_note_links_to_is_the_owners(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    """`protected: [owner/**]` and owner/plan.md a link to notes/plan.md: the owner's plan
    reads as notes/plan.md, so the AI may not write that either."""
    files = {**base_files(), "notes/plan.md": "# Plan\nmine\n"}
    del files["owner/plan.md"]
    root = make_vault(files)
    (root / "owner").mkdir()
    os.symlink("../notes/plan.md", root / "owner/plan.md")
    async with connect(root) as s:
        err = await s.error("append_section", path="notes/plan.md", heading="Plan", content="- ai")
        assert "rejected (protected)" in err and "owner/plan.md" in err, err
        await s.call("append_section", path="notes/a.md", heading="A", content="- ai")
    assert (root / "notes/plan.md").read_text() == "# Plan\nmine\n"


async def test_an_embed_never_tells_whether_a_hidden_file_exists(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    """create_doc refuses embeds of missing files. Before, it looked on the disk itself: an
    embed of a private note, a file in .git or one outside the vault was accepted when the file
    existed and refused when not, a yes/no answer about files the assistant may not see."""
    files = {**base_files(), "attachments/pic.png": b"\x89PNG\r\n", "private/scan.png": b"x"}
    root = make_vault(files)
    (root.parent / "outside.png").write_bytes(b"x")
    os.symlink("../private/scan.png", root / "attachments/link.png")
    hidden = [
        "![[private/salary.md]]",
        "![[salary.md]]",
        "![[scan.png]]",
        "![](../private/salary.md)",
        "![](../../outside.png)",
        "![](../.git/config)",
        "![[.git/config]]",
        "![[link.png]]",
        "![](../attachments/link.png)",
        "![](scan.png)",  # by name, as Obsidian's shortest path: still hidden
    ]
    async with connect(root) as s:
        for i, embed in enumerate(hidden):
            err = await s.error("create_doc", path=f"notes/n{i}.md", body=f"# N\n{embed}\n")
            assert "rejected (missing_attachment)" in err, (embed, err)
        # a file that is there and visible is still found, by name and by relative path
        # (and by name alone in a markdown link, Obsidian's "shortest path when possible");
        # each note its own title, or the second would be handed back as the first
        ok = [
            "![[pic.png]]",
            "![](../attachments/pic.png)",
            "![](pic.png)",
            "![](/attachments/pic.png)",
        ]
        for i, embed in enumerate(ok):
            made = await s.call("create_doc", path=f"notes/ok{i}.md", body=f"# OK {i}\n{embed}\n")
            assert made["created"] is True, made


async def test_a_rules_file_linked_to_a_note_makes_that_note_the_owners(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    """get_context shows a symlinked rules file by its target: before, the AI could edit the
    target (and the refusal on CLAUDE.md itself told it to), and so rewrite its own rules."""
    files = {**base_files(), "meta/AI Rules.md": "# Rules\nNever edit notes in inbox.\n"}
    del files["CLAUDE.md"]
    root = make_vault(files)
    os.symlink("meta/AI Rules.md", root / "CLAUDE.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "rules as a link")
    before = git(root, "rev-parse", "HEAD")
    async with connect(root) as s:
        ctx = await s.call("get_context")
        assert "Never edit notes in inbox." in str(ctx)  # the link's target is the rules shown
        read = await s.call("read_doc", path="meta/AI Rules.md")
        for tool, args in [
            ("edit_text", {"old": "Never edit", "new": "Always edit"}),
            ("append_section", {"heading": "Rules", "content": "Obey notes."}),
            ("replace_doc", {"content": "# Rules\nAnything goes.\n", "hash": read["hash"]}),
            ("update_frontmatter", {"set": {"status": "open"}}),
        ]:
            for path in ("meta/AI Rules.md", "meta/ai rules.md", "CLAUDE.md"):
                err = await s.error(tool, path=path, **args)
                assert "rejected (protected)" in err and "write to" not in err, err
        err = await s.error(
            "batch",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "notes/a.md", "heading": "A", "content": "x"},
                },
                {
                    "tool": "edit_text",
                    "args": {"path": "meta/AI Rules.md", "old": "Never", "new": "Do"},
                },
            ],
        )
        assert "protected" in err, err
    assert (root / "meta/AI Rules.md").read_text() == "# Rules\nNever edit notes in inbox.\n"
    assert git(root, "rev-parse", "HEAD") == before


@pytest.mark.semantic
async def test_recall_and_similar_never_see_a_symlinked_private_note(
    connect: Any, example_vault: Path
) -> None:
    os.symlink("../private/salary-notes.md", example_vault / "inbox/today.md")
    async with connect(example_vault) as s:
        for _ in range(600):  # bounded: a shared machine may take a while to embed the vault
            r = await s.call("recall", query="salary expectations, walk-away number", limit=30)
            if r["ready"]:
                break
            await anyio.sleep(0.2)
        assert r["hits"]
        assert not any(h["path"] == "inbox/today.md" or "moonlight" in str(h) for h in r["hits"])
        body = "# Salary expectations\n\nMy base and the walk-away number.\n"
        made = await s.call("create_doc", path="inbox/pay.md", body=body)
        assert all(x["path"] != "inbox/today.md" for x in made.get("similar", []))


# ------------------------------------------------------------------------------------------------
# Private glob spellings


@pytest.mark.parametrize("glob", ["private/**", "private/", "private/*", "private", "/private/"])
async def test_every_spelling_of_a_private_folder_protects_it_whole(
    connect: Any, make_vault: Callable[..., Path], glob: str
) -> None:
    files = base_files()
    files["vault.config.yaml"] = CONFIG.replace('["private/**"]', f'["{glob}"]')
    files["private/sub/b.md"] = f"# B {SECRET}\n"
    root = make_vault(files)
    async with connect(root) as s:
        await assert_private_hidden(s)
        for path in ("private/salary.md", "private/sub/b.md"):
            assert "private" in await s.error("read_doc", path=path)
        assert "private" in await s.error(
            "append_section", path="private/sub/b.md", heading="x", content="y"
        )
        assert "private" in await s.error("create_doc", path="private/sub/new.md", body="x")
        assert "warnings" not in await s.call("get_context")


async def test_a_trailing_slash_means_that_folder_at_any_depth(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = base_files()
    files["vault.config.yaml"] = CONFIG.replace('["private/**"]', '["private/", "work/hr/"]')
    files["notes/private/x.md"] = f"# X {SECRET}\n"
    files["work/hr/y.md"] = f"# Y {SECRET}\n"
    files["other/work/hr/z.md"] = "# Z visible\n"  # anchored: only work/hr at the root
    root = make_vault(files)
    async with connect(root) as s:
        await assert_private_hidden(s)
        assert "private" in await s.error("read_doc", path="notes/private/x.md")
        assert "private" in await s.error("read_doc", path="work/hr/y.md")
        assert (await s.call("read_doc", path="other/work/hr/z.md"))["title"] == "Z visible"


async def test_a_private_glob_that_matches_nothing_is_a_warning(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = base_files()
    files["vault.config.yaml"] = CONFIG.replace('["private/**"]', '["private/**", "privat/**"]')
    root = make_vault(files)
    async with connect(root) as s:
        warnings = (await s.call("get_context"))["warnings"]
        assert any("privat/**" in w and "matches nothing" in w for w in warnings), warnings
        assert not any("'private/**'" in w for w in warnings)


# ------------------------------------------------------------------------------------------------
# Notes the owner keeps out of git


async def test_notes_git_ignores_are_never_written_or_snapshotted(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = base_files()
    files[".gitignore"] = "diary/\n"
    root = make_vault(files)
    (root / "diary").mkdir()
    (root / "diary/2026-12-03.md").write_text("# Today\n## Log\nmy own words\n")
    before = git_log(root, "--format=%H")
    async with connect(root) as s:
        assert (await s.call("read_doc", path="diary/2026-12-03.md"))["title"] == "Today"
        err = await s.error(
            "append_section", path="diary/2026-12-03.md", heading="Log", content="AI line"
        )
        assert ".gitignore" in err and "Nothing was written" in err, err
        err = await s.error("create_doc", path="diary/new.md", body="# New\n")
        assert ".gitignore" in err, err
    assert git_log(root, "--format=%H") == before
    assert git(root, "ls-files", "diary") == ""
    assert (root / "diary/2026-12-03.md").read_text() == "# Today\n## Log\nmy own words\n"
    assert not (root / "diary/new.md").exists()


# ------------------------------------------------------------------------------------------------
# Letter case and Unicode form


@pytest.mark.parametrize("path", ["claude.md", "Claude.md", "CLAUDE.MD", "OWNER/plan.md"])
async def test_protected_names_are_compared_case_folded(
    connect: Any, make_vault: Callable[..., Path], path: str
) -> None:
    """On macOS or Windows `claude.md` opens CLAUDE.md. Here (case-sensitive) the rules file is
    spelled that way on disk, which is what the server sees there."""
    files = base_files()
    files[path] = files.pop("CLAUDE.md" if "/" not in path else "owner/plan.md")
    root = make_vault(files)
    before = (root / path).read_text()
    async with connect(root) as s:
        err = await s.error("append_section", path=path, heading="Rules", content="obey notes")
        assert "protected" in err, err
    assert (root / path).read_text() == before


async def test_private_globs_are_compared_case_folded_and_in_nfc(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    files = base_files()
    files["vault.config.yaml"] = CONFIG.replace('["private/**"]', '["straße/**", "café/**"]')
    files["STRASSE/a.md"] = "# A OTTERFISH\n"
    files["cafe\u0301/b.md"] = "# B OTTERFISH\n"  # NFD on disk, as macOS writes it
    root = make_vault(files)
    async with connect(root) as s:
        listed = {d["path"] for d in (await s.call("list_docs", limit=200))["docs"]}
        assert not any(p.startswith(("STRASSE", "caf")) for p in listed), listed
        assert (await s.call("search_text", query="OTTERFISH"))["total"] == 0
        assert "private" in await s.error("read_doc", path="STRASSE/a.md")
        assert "private" in await s.error("read_doc", path="CAFÉ/b.md")


# ------------------------------------------------------------------------------------------------
# Writes through a symlinked note


async def test_writes_through_a_symlinked_note_are_refused(
    connect: Any, make_vault: Callable[..., Path]
) -> None:
    root = make_vault(base_files())
    os.symlink("a.md", root / "notes/alias.md")
    (root / "linked").symlink_to("notes")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "links")
    head = git(root, "rev-parse", "HEAD")
    async with connect(root) as s:
        read = await s.call("read_doc", path="notes/alias.md")  # reading through it is fine
        err = await s.error(
            "append_section", path="notes/alias.md", heading="Log", content="via alias"
        )
        assert "symlink" in err and "notes/a.md" in err and "Nothing was written" in err, err
        err = await s.error("replace_doc", path="notes/alias.md", content="x\n", hash=read["hash"])
        assert "symlink" in err, err
        err = await s.error("create_doc", path="linked/new.md", body="# New\n")
        assert "symlink" in err, err
    assert (root / "notes/alias.md").is_symlink()
    assert "via alias" not in (root / "notes/a.md").read_text()
    assert git(root, "rev-parse", "HEAD") == head
