"""No program a vault's `.git` names runs because the AI read, wrote or searched, or because
the owner looked at what it did (issue 27, the items the adversarial pass left open).

A vault someone else prepared (unzipped, synced, cloned with its `.git`) can name programs in
its config: clean, smudge and process filters for what `.gitattributes` marks, gpg.program for
a signed commit (made or verified), the upload-pack a partial clone fetches missing objects
through, a submodule's own filters. Each planted program here writes to a marker file; the
marker must never exist. Each test failed on the code before its fix."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import git, head, vaultwatch_cli

pytestmark = pytest.mark.anyio


def planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(marker, filter, program): `filter` passes its input through (as a clean or smudge
    filter must) and `program` fails; both first write what ran them to `marker`."""
    marker = tmp_path / "planted-program-ran"
    flt = tmp_path / "planted-filter.sh"
    flt.write_text(f'#!/bin/sh\necho "filter $*" >> {marker}\nexec cat\n')
    prog = tmp_path / "planted-program.sh"
    prog.write_text(f'#!/bin/sh\necho "program $*" >> {marker}\nexit 1\n')
    for f in (flt, prog):
        f.chmod(0o755)
    return marker, flt, prog


def touch_later(path: Path, data: bytes) -> None:
    """Write `data` with an mtime past the index's look: git must read the file again."""
    path.write_bytes(data)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def owner_reads(root: Path, path: str) -> None:
    """What the owner runs to look at the AI's work: each must succeed."""
    from app.services.note_view import note_view
    from app.services.review import summaries

    for args in (["review"], ["review", "--json"], ["health"], ["stats"], ["context"]):
        r = vaultwatch_cli(root, *args)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    summaries(root)
    note_view(root, path)


async def ai_session(connect: Any, root: Path) -> None:
    """The AI reading, searching and writing: every write commits."""
    async with connect(root) as s:
        read = await s.call("read_doc", path="notes/a.md")
        await s.call("list_docs")
        await s.call("search_text", query="owner")
        await s.call("get_context")
        await s.call("list_tags")
        await s.call("read_doc", path="notes/b.md")
        assert (await s.call("append_section", path="notes/a.md", heading="Log", content="- ai"))[
            "commit"
        ]
        assert (await s.call("create_doc", path="notes/new.md", body="# New\n\nai text\n"))[
            "commit"
        ]
        assert (await s.call("edit_text", path="notes/a.md", old="- owner\n", new="- owner!\n"))[
            "commit"
        ]
        read = await s.call("read_doc", path="notes/new.md")
        out = await s.call(
            "replace_doc",
            path="notes/new.md",
            content="# New\n\nai text, again\n",
            hash=read["hash"],
        )
        assert out["commit"]
        ops = [
            {
                "tool": "append_section",
                "args": {"path": "notes/a.md", "heading": "Log", "content": c},
            }
            for c in ("- b1", "- b2")
        ]
        assert (await s.call("batch", ops=ops))["commit"]


async def test_a_planted_filter_never_runs_on_the_ais_calls_or_the_owners_reads(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    """`git status` (every listing's modified dates), `update-index`, `reset`, `blame` of the
    working file and `diff-index` against it ran the clean filter of any file whose stat
    changed; a filter named in a file the config includes, a `process` filter and one marked
    `required` included. The owner's own move of a filtered note keeps its filter
    (tests/test_file_actions.py::test_moving_a_note_under_git_crypt_never_commits_its_plaintext)."""
    root = make_vault(
        {
            "notes/a.md": "# A\n\n## Log\n- owner\n",
            "notes/b.md": "# B\n\nowner text\n",
            "crypt/s.md": "# S\n\n## Log\n",
            "data/x.dat": "x\n",
        }
    )
    (root / ".gitattributes").write_text("crypt/** filter=x\nnotes/b.md filter=x\n*.dat filter=p\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attributes")
    marker, flt, _ = planted(tmp_path)
    (root / ".git" / "planted.inc").write_text(
        f'[filter "x"]\n\tclean = {flt} clean\n\tsmudge = {flt} smudge\n\trequired = true\n'
        f'[filter "p"]\n\tprocess = {flt} process\n\trequired = true\n'
    )
    git(root, "config", "include.path", "planted.inc")
    for rel in ("crypt/s.md", "notes/b.md", "data/x.dat"):  # saved since: git must look inside
        touch_later(root / rel, (root / rel).read_bytes() + b"owner typed\n")
    before = head(root)
    await ai_session(connect, root)
    async with connect(root) as s:  # a filtered note is still refused to the AI, as before
        err = await s.error("append_section", path="crypt/s.md", heading="Log", content="- ai")
        assert "git_filtered" in err, err
    owner_reads(root, "crypt/s.md")
    owner_reads(root, "notes/b.md")
    assert not marker.exists(), marker.read_text()
    assert len(git(root, "rev-list", f"{before}..HEAD").split()) == 5  # each AI write committed


async def test_a_submodules_own_filter_never_runs(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    """`git status` and `git diff-index` look inside a submodule by running git there, under
    the submodule's own config (its filters, which the vault's config does not name)."""
    sub = make_vault({"s.md": "# S\n"}, name="sub")
    root = make_vault({"notes/a.md": "# A\n\n## Log\n- owner\n", "notes/b.md": "# B\n"})
    add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub"]
    subprocess.run(["git", "-C", str(root), *add], check=True, capture_output=True)
    git(root, "commit", "-qm", "submodule")
    marker, flt, _ = planted(tmp_path)
    inner = root / "sub"
    (inner / ".gitattributes").write_text("* filter=y\n")
    git(inner, "add", ".gitattributes")
    git(inner, "commit", "-qm", "attributes")
    git(root, "commit", "-qam", "submodule moved")
    git(inner, "config", "filter.y.clean", f"{flt} clean")
    git(inner, "config", "filter.y.required", "true")
    touch_later(inner / "s.md", (inner / "s.md").read_bytes())  # saved again: git must look
    await ai_session(connect, root)
    owner_reads(root, "notes/a.md")
    assert not marker.exists(), marker.read_text()


def _signed(root: Path) -> str:
    """A commit on HEAD carrying a (fake) signature: `git log --show-signature` runs
    gpg.program on it."""
    raw = git(root, "cat-file", "commit", "HEAD")
    headers, _, message = raw.partition("\n\n")
    sig = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n fake\n -----END PGP SIGNATURE-----"
    obj = f"{headers}\n{sig}\n\n{message}"
    sha = subprocess.run(
        ["git", "-C", str(root), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=obj,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(root, "update-ref", "HEAD", sha)
    return sha


async def test_no_program_a_planted_config_names_runs_to_sign_verify_fetch_or_page(
    connect: Any, make_vault: Any, tmp_path: Path
) -> None:
    """A partial clone whose remote's upload-pack is a planted command (a blame of an old
    line fetched the missing blob through it), gpg.program with commit.gpgSign (our commits)
    and log.showSignature (our `git log` verified a signed commit), and the rest of what a
    config can name for a git command: ssh, credential helper, askpass, pager, editors,
    trailer commands, a submodule diff, the alternate-refs command."""
    origin = make_vault({"notes/a.md": "# A\n\n## Log\n- owner\n", "notes/b.md": "# B\n"})
    (origin / "notes/a.md").write_text("# A\n\n## Log\n- owner\n- owner again\n")
    git(origin, "commit", "-qam", "second")
    git(origin, "config", "uploadpack.allowFilter", "true")
    root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{origin}", str(root))
    missing = [o for o in git(root, "rev-list", "--objects", "--missing=print", "HEAD").split()]
    assert any(o.startswith("?") for o in missing), "the partial clone lacks no blob"
    _signed(root)
    marker, _, prog = planted(tmp_path)
    for key, value in {
        "remote.origin.uploadpack": f"{prog} uploadpack; git-upload-pack",
        "protocol.file.allow": "always",
        "core.sshCommand": f"{prog} ssh",
        "credential.helper": f"!{prog} credential",
        "core.askPass": f"{prog} askpass",
        "core.pager": f"{prog} pager",
        "pager.log": f"{prog} pager.log",
        "core.editor": f"{prog} editor",
        "sequence.editor": f"{prog} sequence.editor",
        "gpg.program": f"{prog}",
        "gpg.ssh.program": f"{prog}",
        "commit.gpgSign": "true",
        "log.showSignature": "true",
        "trailer.vaultwatch-tool.cmd": f"{prog} trailer",
        "diff.submodule": "diff",
        "status.submoduleSummary": "true",
        "core.alternateRefsCommand": f"{prog} alternate-refs",
    }.items():
        git(root, "config", key, value)
    before = head(root)
    await ai_session(connect, root)
    owner_reads(root, "notes/a.md")
    r = vaultwatch_cli(root, "mv", "notes/b.md", "notes/c.md")
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), marker.read_text()
    for sha in git(root, "rev-list", f"{before}..HEAD").split():  # none of ours signed
        assert "gpgsig" not in git(root, "cat-file", "commit", sha)


def test_the_import_of_a_prepared_git_runs_nothing_and_leaves_filtered_files_out(
    tmp_path: Path,
) -> None:
    """A folder whose `.git` was prepared with no commit yet: the server's import commit signed
    with the planted gpg.program and added every file through the planted clean filter. A file
    under a filter stays out of the import (its bytes on disk are what a git-crypt keeps out of
    history), untracked, for the owner's own git."""
    from server.core.gitrepo import ensure_repo

    root = tmp_path / "v"
    (root / "notes").mkdir(parents=True)
    (root / "crypt").mkdir()
    (root / "notes/a.md").write_text("# A\n")
    (root / "crypt/s.md").write_text("# S\nPLAINTEXT\n")
    (root / ".gitattributes").write_text("crypt/** filter=x\n")
    git(tmp_path, "init", "-q", str(root))
    marker, flt, prog = planted(tmp_path)
    git(root, "config", "commit.gpgSign", "true")
    git(root, "config", "gpg.program", str(prog))
    git(root, "config", "filter.x.clean", f"{flt} clean")
    git(root, "config", "filter.x.required", "true")
    assert ensure_repo(root)
    assert not marker.exists(), marker.read_text()
    tracked = git(root, "ls-files").split()
    assert "notes/a.md" in tracked and ".gitattributes" in tracked
    assert "crypt/s.md" not in tracked
    assert "PLAINTEXT" not in git(root, "log", "-p", "--all")
    assert "gpgsig" not in git(root, "cat-file", "commit", "HEAD")
