"""Secrets: never written by the AI, and never kept by us either (journal, attempted diffs, the
state folder's modes). The checks see what git and YAML will see: commit messages, file names
and the decoded frontmatter values, not only the raw text."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from server.vault import Vault
from server.write.journal import read_all

from .conftest import git, git_log

pytestmark = pytest.mark.anyio

# (what the AI sends, the part of it that is the secret)
SECRETS = [
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAQ0FGRUJBQkU\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAAQ0FGRUJBQkU",
    ),
    ("aws key AKIAQ3EGRHZ7VXKMB2LD", "AKIAQ3EGRHZ7VXKMB2LD"),
    (
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    ),
    ("db postgres://admin:s3cretpass@db.example.com/prod", "s3cretpass"),
    ("password: hunter2hunter2", "hunter2hunter2"),
    ("API_KEY = 'abcd1234efgh5678'", "abcd1234efgh5678"),
]

AWS = "AKIAQ3EGRHZ7VXKMB2LD"


@pytest.fixture
def vault(make_vault: Any) -> Path:
    return make_vault(
        {
            "CLAUDE.md": "# Rules\n",
            "w.md": "# Week\n\n## Log\n- Mon: one\n",
            "owner.md": "---\ntitle: Owner\n---\n# Owner\n\nwifi password: ownersecret99\n",
        }
    )


def journal_bytes(root: Path) -> bytes:
    return (root / ".git/vaultwatch/events.jsonl").read_bytes()


@pytest.mark.parametrize(("sent", "value"), SECRETS)
async def test_a_refused_secret_is_masked_in_the_journal(
    connect: Any, vault: Path, sent: str, value: str
) -> None:
    async with connect(vault) as s:
        msg = await s.error("append_section", path="w.md", heading="Log", content=f"- {sent}")
    assert "rejected (secret)" in msg and value not in msg
    assert value.encode() not in journal_bytes(vault)
    ev = read_all(vault / ".git/vaultwatch/events.jsonl")[-1]
    # the owner still sees what was attempted, with the secret masked
    assert ev["kind"] == "rejected" and ev["code"] == "secret"
    assert "+- " in ev["diff"] and "secret masked" in ev["diff"]


async def test_every_journal_field_is_masked(connect: Any, vault: Path) -> None:
    """An error that quotes a line of the owner's (edit_text's closest-line hint) or the
    model's own arguments is stored masked too."""
    async with connect(vault) as s:
        msg = await s.error(
            "edit_text", path="owner.md", old="wifi password: ownersecret98", new="x"
        )
        assert "not found" in msg
        await s.error("read_doc", path="w.md", section="password: hunter2hunter2")
    raw = journal_bytes(vault)
    assert b"ownersecret99" not in raw and b"ownersecret98" not in raw
    assert b"hunter2hunter2" not in raw


async def test_a_batch_message_with_a_secret_is_refused(connect: Any, vault: Path) -> None:
    before = git_log(vault, "--format=%H")
    async with connect(vault) as s:
        msg = await s.error(
            "batch",
            message=f"notes, key {AWS}",
            ops=[
                {
                    "tool": "append_section",
                    "args": {"path": "w.md", "heading": "Log", "content": "- a"},
                },
                {"tool": "create_doc", "args": {"path": "n.md", "body": "# N\n"}},
            ],
        )
    assert "rejected (secret)" in msg and "message" in msg and AWS not in msg
    assert git_log(vault, "--format=%H") == before and not (vault / "n.md").exists()
    assert AWS.encode() not in journal_bytes(vault)


@pytest.mark.parametrize(
    "args",
    [
        {"path": f"keys/{AWS}.md", "body": "# Keys\n"},
        {"path": "keys/ghp_abcdefghijklmnopqrstuvwxyz0123456789AB.md", "body": "# K\n"},
    ],
)
async def test_a_file_named_after_a_secret_is_refused(
    connect: Any, vault: Path, args: dict[str, Any]
) -> None:
    before = git_log(vault, "--format=%H")
    async with connect(vault) as s:
        msg = await s.error("create_doc", **args)
    assert "rejected (secret)" in msg
    assert git_log(vault, "--format=%H") == before and not (vault / "keys").exists()
    assert b"ghp_abcdef" not in journal_bytes(vault) and AWS.encode() not in journal_bytes(vault)


@pytest.mark.parametrize(
    "front",
    [
        'key: "\\x41KIAQ3EGRHZ7VXKMB2LD"',  # YAML double-quoted escapes
        'key: "\\u0041KIAQ3EGRHZ7VXKMB2LD"',
        'key: "AKIAQ3EG\\\n  RHZ7VXKMB2LD"',  # an escaped line break inside the value
        "key: >-\n  password:\n  hunter2hunter2",  # folded: the value is one line
        '"\\x41KIAQ3EGRHZ7VXKMB2LD": 1',  # in a key
        'tags: ["\\x41KIAQ3EGRHZ7VXKMB2LD"]',
    ],
)
async def test_yaml_escapes_do_not_hide_a_secret(connect: Any, vault: Path, front: str) -> None:
    before = git_log(vault, "--format=%H")
    async with connect(vault) as s:
        read = await s.call("read_doc", path="w.md")
        msg = await s.error(
            "replace_doc", path="w.md", content=f"---\n{front}\n---\n# Week\n", hash=read["hash"]
        )
    assert "rejected (secret)" in msg
    assert git_log(vault, "--format=%H") == before
    raw = journal_bytes(vault)
    assert b"KIAQ3EG" not in raw and b"hunter2hunter2" not in raw


async def test_the_owners_secret_stays_theirs(connect: Any, vault: Path) -> None:
    """A secret already in the note (or in its name) is the owner's: writing next to it works."""
    async with connect(vault) as s:
        await s.call("append_section", path="owner.md", heading="Owner", content="- more")
    assert "ownersecret99" in (vault / "owner.md").read_text()


def _modes(root: Path) -> dict[str, int]:
    state = root / ".git/vaultwatch"
    out = {".": stat.S_IMODE(state.stat().st_mode)}
    for dirpath, dirnames, filenames in os.walk(state):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            out[p.relative_to(state).as_posix()] = stat.S_IMODE(p.lstat().st_mode)
    return out


async def test_the_state_folder_is_the_owners_alone(connect: Any, vault: Path) -> None:
    old = os.umask(0o022)  # the usual umask: files 0644, folders 0755 unless we say otherwise
    try:
        async with connect(vault) as s:
            await s.call("search_text", query="week")
            await s.call("append_section", path="w.md", heading="Log", content="- two")
            await s.error("append_section", path="w.md", heading="Log", content=f"- {AWS}")
    finally:
        os.umask(old)
    modes = _modes(vault)
    assert {"events.jsonl", "write.lock", "index.sqlite", "commit.index"} <= set(modes)
    bad = {
        k: oct(m)
        for k, m in modes.items()
        if m != (0o700 if (vault / ".git/vaultwatch" / k).is_dir() else 0o600)
    }
    assert bad == {}


async def test_an_existing_vaults_state_folder_is_tightened_on_start(vault: Path) -> None:
    state = vault / ".git/vaultwatch"
    (state / "events.jsonl").write_text("")
    (state / "index.sqlite").write_bytes(b"")
    (state / "sub").mkdir()
    (state / "sub/cache.bin").write_bytes(b"x")
    for p in (state / "events.jsonl", state / "index.sqlite", state / "sub/cache.bin"):
        p.chmod(0o644)
    (state / "sub").chmod(0o755)
    state.chmod(0o755)
    Vault(vault)
    modes = _modes(vault)
    assert modes["."] == 0o700 and modes["sub"] == 0o700
    assert {k: v for k, v in modes.items() if k not in (".", "sub")} == {
        k: 0o600 for k in modes if k not in (".", "sub")
    }
    assert git(vault, "status", "--porcelain") == ""


# Audit finding 7: formats that got through. (what the AI sends, the part that is the secret)
MORE_SECRETS = [
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("secret_key: 'q8Zr2vLx0PmW4nTy7Kb1'", "q8Zr2vLx0PmW4nTy7Kb1"),
    (
        "Authorization: Bearer aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7n",
        "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7n",
    ),
    ("token: 9f8e7d6c5b4a39281716aabbccddeeff", "9f8e7d6c5b4a39281716aabbccddeeff"),
    ("api key = Zx81kLm29QpRt55", "Zx81kLm29QpRt55"),
    ("pw: hunter2hunter2", "hunter2hunter2"),
    ("glpat-xY3kP9mQ2rT7vW1zA5bC", "xY3kP9mQ2rT7vW1zA5bC"),
    ("hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"),
    ("npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    (
        "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01",
        "wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01",
    ),
    ("ya29.a0AfH6SMBq7Zr2vLx0PmW4nTy7Kb1Xc9", "a0AfH6SMBq7Zr2vLx0PmW4nTy7Kb1Xc9"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Qm9vZ2xlU2VjcmV0S2V5Zm9yVGVzdHM0Mg==",
        "Qm9vZ2xlU2VjcmV0S2V5Zm9yVGVzdHM0Mg",
    ),
    (
        "AGE-SECRET-KEY-1QQPZ9Y8X7W6V5U4T3S2R1Q0P9L8N7M6L5K4J3H2G1F0E9D8C7",
        "QQPZ9Y8X7W6V5U4T3S2R1Q0P9L8N7M6L5K4J3H2G1F0E9D8C7",
    ),
    (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
        "AAAAIFzq8Zr2vLx0PmW4nTy7Kb1Xc9\nPrivate-MAC: 7f3a",
        "AAAAIFzq8Zr2vLx0PmW4nTy7Kb1Xc9",
    ),
    ("AKIA\u200bQ3EGRHZ7VXKMB2LD", "Q3EGRHZ7VXKMB2LD"),
]


def _unchanged(root: Path, before: str, files: dict[str, bytes]) -> None:
    assert git_log(root, "--format=%H") == before
    assert {p: (root / p).read_bytes() for p in files} == files
    assert not (root / "new.md").exists()


@pytest.mark.parametrize(("sent", "value"), MORE_SECRETS)
async def test_more_secret_formats_are_refused_by_every_write_tool(
    connect: Any, vault: Path, sent: str, value: str
) -> None:
    """Each format through append_section, a create_doc field and a batch: refused, nothing
    written, nothing of the secret in the journal or the error."""
    before = git_log(vault, "--format=%H")
    files = {p: (vault / p).read_bytes() for p in ("w.md", "owner.md")}
    async with connect(vault) as s:
        msgs = [await s.error("append_section", path="w.md", heading="Log", content=f"- {sent}")]
        key, _, rest = sent.partition(":")
        if rest and "\n" not in sent:  # `key: value`: the same as a frontmatter field
            fields = {key.strip(): rest.strip().strip("'")}
        else:
            fields = {"note": sent}
        msgs.append(await s.error("create_doc", path="new.md", fields=fields, body="# New\n"))
        msgs.append(
            await s.error(
                "batch",
                ops=[
                    {
                        "tool": "append_section",
                        "args": {"path": "w.md", "heading": "Log", "content": "- ok"},
                    },
                    {
                        "tool": "create_doc",
                        "args": {"path": "new.md", "body": f"# New\n\n{sent}\n"},
                    },
                ],
            )
        )
    for msg in msgs:
        assert "rejected (secret)" in msg and value not in msg
    _unchanged(vault, before, files)
    assert value.encode() not in journal_bytes(vault)


@pytest.mark.parametrize(
    "prose",
    [
        "the secret key to a good talk is practice",
        "token: see below",
        "commit 3f2a9c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b fixed it",
        "content hash 9f8e7d6c5b4a3928, sha: 3f2a9c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b",
        "secret_santa: Alice-and-Bob",
        "Bearer tokens expire after an hour; api key = see the vault",
        "zero\u200bwidth joiners in prose are fine",
    ],
)
async def test_prose_about_secrets_is_written(connect: Any, vault: Path, prose: str) -> None:
    async with connect(vault) as s:
        res = await s.call("append_section", path="w.md", heading="Log", content=f"- {prose}")
        assert res["commit"]
        res = await s.call(
            "create_doc", path="new.md", fields={"summary": prose}, body=f"# New\n\n{prose}\n"
        )
        assert res["commit"]
    assert prose in (vault / "w.md").read_text()
