"""Every git command we run, run safely: no hook, fsmonitor, filter, textconv, signing program
or transport the vault's `.git` names ever runs (`git`, `git_stream`, `RefUpdate`), the blobs
read in one batch (`cat_blobs`), and the identities commits are made with."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

from server.core.errors import VaultwatchError

FALLBACK_HUMAN = ("Vault owner", "owner@vaultwatch.local")


class GitError(VaultwatchError, RuntimeError):
    """A git command failed; the message is git's own words."""

    code = "git_failed"


# Programs a vault's `.git` can name, which git would run on our reads and writes: hooks
# (`reference-transaction` on every ref update, `post-index-change` on every index write, from
# .git/hooks or a planted core.hooksPath), core.fsmonitor (run by `git status`, check-ignore,
# update-index...), textconv and external diff drivers (`log -p`, `blame`), gpg.program (a
# commit signed under commit.gpgSign, a signed commit `git log` verifies under
# log.showSignature), a submodule's own git (`git diff` of it under diff.submodule=diff, `git
# submodule summary` under status.submoduleSummary), the fetch a partial clone makes for an
# object it lacks (remote.*.uploadpack, core.sshCommand, credential.helper), and the clean,
# smudge and process filters `.gitattributes` names (`git status` runs a clean filter on every
# file whose stat changed). A vault someone else prepared (unzipped, synced) must not run its
# program because the AI read a note (adversarial pass 3, N5; issue 27). Every git call we make
# goes through `_argv` and `_env`.
SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.submodule=short",
    "-c",
    "status.submoduleSummary=false",
    "-c",
    "protocol.allow=never",
)
# The same in the environment, where it beats any config: no transport at all (a
# `protocol.file.allow=always` in the vault's config beats `protocol.allow=never`; an empty
# GIT_ALLOW_PROTOCOL list allows none), no lazy fetch (git 2.44 on), no pager, editor or askpass
# program (git runs none of them on a pipe and with -m, but it costs nothing to be sure).
SAFE_ENV = {
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_ASKPASS": "",
}
_NO_DRIVERS = {
    "log": ("--no-textconv", "--no-ext-diff"),
    "show": ("--no-textconv", "--no-ext-diff"),
    "diff": ("--no-textconv", "--no-ext-diff", "--ignore-submodules=all"),
    "diff-tree": ("--no-textconv", "--no-ext-diff"),
    "diff-index": ("--no-textconv", "--no-ext-diff", "--ignore-submodules=all"),
    "diff-files": ("--no-textconv", "--no-ext-diff", "--ignore-submodules=all"),
    "blame": ("--no-textconv",),
    # a submodule is checked by a `git status` run in it, under its own config (its filters)
    "status": ("--ignore-submodules=all",),
}

# Commands that read no file of the working tree and check none out: no clean or smudge filter
# can run in them. Every other command (status, add, update-index, reset, diff-index, blame...)
# runs with every filter driver git's config names switched off (`_filters_off`).
_NO_WORKTREE = frozenset(
    {
        "cat-file",  # unless --filters or --textconv (below)
        "check-attr",
        "check-ignore",
        "commit-tree",
        "config",
        "diff-tree",
        "fast-import",
        "for-each-ref",
        "init",
        "log",
        "ls-tree",
        "merge-base",
        "merge-file",
        "mktree",
        "notes",
        "patch-id",
        "rev-list",
        "rev-parse",
        "show",
        "show-ref",
        "symbolic-ref",
        "update-ref",
        "var",
    }
)


def _reads_worktree(command: str, rest: tuple[str, ...]) -> bool:
    if command == "hash-object":
        return "--no-filters" not in rest
    if command == "cat-file":
        return any(a.startswith(("--filters", "--textconv")) for a in rest)
    return command not in _NO_WORKTREE


def filter_drivers(root: Path) -> list[str]:
    """The name of every filter driver git's config defines for this vault (the repository's,
    the user's, the system's, what they include): `filter.<name>.clean`, `.smudge`, `.process`
    or `.required`. GitError when git cannot read its config."""
    proc = subprocess.run(
        [
            "git",
            *SAFE_CONFIG,
            "-C",
            str(root),
            "config",
            "-z",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ],
        capture_output=True,
        env=_env(),
    )
    if proc.returncode not in (0, 1):  # 1: none set
        said = proc.stderr.decode(errors="replace").strip()
        raise GitError(f"git config failed: {said}")
    names = set()
    for key in os.fsdecode(proc.stdout).split("\x00"):
        head, dot, _var = key.strip("\n").rpartition(".")
        if dot and head.lower().startswith("filter.") and len(head) > len("filter."):
            names.add(head[len("filter.") :])
    return sorted(names)


def _filters_off(root: Path) -> list[str]:
    """`-c` settings that make every filter driver git knows here run nothing: an empty command
    is no filter to git, and a `required` one is then not an error. (Only the config can define
    a driver; an attribute naming an undefined one does nothing.)"""
    out: list[str] = []
    for name in filter_drivers(root):
        if "=" in name:  # `-c` splits at the first '=': the setting would name another key
            raise GitError(
                f"the vault's git config defines a filter driver named {name!r}; vaultwatch "
                "cannot switch off a filter whose name holds '=' and runs no git beside it. "
                f'Rename the driver (the [filter "{name}"] section and the .gitattributes '
                "lines naming it)."
            )
        for var in ("clean", "smudge", "process"):
            out += ["-c", f"filter.{name}.{var}="]
        out += ["-c", f"filter.{name}.required=false"]
    return out


def _argv(root: Path, args: tuple[str, ...], filters: bool = False) -> list[str]:
    """The git command line for `args` in `root`: SAFE_CONFIG; for the diff family no textconv
    or external diff (inserted right after the subcommand); for a command that reads the
    working tree, no clean, smudge or process filter, unless `filters` (the owner's own action
    storing the owner's file as `git add` would: git-crypt encrypting on commit)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] == "-c" else 1
    command = args[i] if i < len(args) else ""
    if command in _NO_DRIVERS:
        args = (*args[: i + 1], *_NO_DRIVERS[command], *args[i + 1 :])
    off = [] if filters or not _reads_worktree(command, args[i + 1 :]) else _filters_off(root)
    return ["git", *SAFE_CONFIG, *off, "-C", str(root), *args]


def git(
    root: Path,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = True,
    input: bytes | None = None,
    filters: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """git `args` in `root`, with every program the vault's `.git` could name switched off
    (`_argv`); `filters` only for the owner's own actions (see `_argv`)."""
    proc = subprocess.run(
        _argv(root, args, filters),
        capture_output=True,
        env=_env(env),
        input=input,
        pass_fds=tuple(getattr(_HELD, "fds", ())),
    )
    if check and proc.returncode != 0:
        said = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        raise GitError(
            f"git {' '.join(a for a in args[:4] if not a.startswith('-c'))} failed: {said}"
        )
    return proc


class RefUpdate:
    """`git update-ref --stdin` started ahead and told what to do only when the caller is
    ready: its start (the fork, exec and setup, most of its time, and far more on a loaded
    machine) is paid before, so a branch moved under git's index lock moves in the moment git
    takes to lock, check and rename the ref. Every way out calls `move` or `cancel` once."""

    def __init__(self, root: Path, message: str) -> None:
        self.proc = subprocess.Popen(
            _argv(root, ("update-ref", "-m", message, "--stdin")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            pass_fds=tuple(getattr(_HELD, "fds", ())),
        )

    def move(self, ref: str, new: str, old: str) -> None:
        """`ref` from `old` to `new` (compare-and-swap); GitError, nothing moved, otherwise."""
        _, err = self.proc.communicate(f"update {ref} {new} {old}\n".encode())
        if self.proc.returncode != 0:
            said = err.decode(errors="replace").strip()
            raise GitError(f"git update-ref failed: {said}")

    def cancel(self) -> None:
        """Nothing to update: git reads an empty list, moves nothing and ends."""
        if self.proc.returncode is None:
            self.proc.communicate(b"")


def cat_blobs(root: Path, specs: list[str]) -> list[bytes | None]:
    """The bytes of many `rev:path` blobs through one `git cat-file --batch` (None: no such
    file at that commit, or an empty spec)."""
    asked = [s for s in specs if s]
    if not asked:
        return [None for _ in specs]
    out = git(root, "cat-file", "--batch", input=("\n".join(asked) + "\n").encode()).stdout
    found: list[bytes | None] = []
    pos = 0
    for _ in asked:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode()
        pos = nl + 1
        if header.endswith("missing"):
            found.append(None)
            continue
        size = int(header.split()[2])
        found.append(out[pos : pos + size])
        pos += size + 1
    it = iter(found)
    return [next(it) if s else None for s in specs]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """git never prompts (no terminal to answer it) and speaks one language we can parse.

    GIT_OPTIONAL_LOCKS=0: a command that only reads (`git status` above all) never takes
    .git/index.lock to refresh the index's stat data on the side. Taken by our reads, that lock
    made the owner's git, another server or our own index update after a commit fail. Commands
    that must write the index still lock it; `git diff` against the working tree refreshes the
    index even so (git 2.39), so the read side uses `git diff-index` there."""
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
        **SAFE_ENV,
        **(extra or {}),
    }


def git_stream(root: Path, *args: str, stdin: bool = False) -> subprocess.Popen[bytes]:
    """git started with its output to be read as it comes (a long `git log` parsed while git
    still works); the caller reads stdout and waits. stdin is a pipe when asked for."""
    return subprocess.Popen(
        _argv(root, args),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )


def human_identity(root: Path) -> tuple[str, str]:
    """The identity git itself would commit with here (config or GIT_AUTHOR_* environment),
    or a stand-in when git has none."""
    r = git(root, "var", "GIT_AUTHOR_IDENT", check=False)
    m = re.match(r"^(.*?) <([^>]*)>", r.stdout.decode("utf-8", "replace"))
    if r.returncode == 0 and m and m.group(1).strip() and m.group(2).strip():
        return m.group(1).strip(), m.group(2).strip()
    return FALLBACK_HUMAN


def identity_env(name: str, email: str) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


# The lock's fd is passed to every git child started while it is held: a server killed
# mid-commit leaves its `git update-ref` running, and the lock must stay taken until that child
# is done too, or the next server's recovery would undo files the child is about to commit.
# (per thread: only the thread holding the lock may hand out its fd)
_HELD = threading.local()
