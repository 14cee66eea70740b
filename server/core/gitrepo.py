"""The little of git the read side needs: make sure the vault is a repo with a first commit."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

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


# The commit trailers, written by the server (the AI's tool and client, the owner's snapshot) and
# by the dashboard's owner actions, and read back by the history, review and feed. One set of
# names: a writer and a reader can never spell one differently.
TOOL = "Vaultwatch-Tool"  # the AI tool that made the commit: its presence makes it an AI commit
CLIENT = "Vaultwatch-Client"  # the MCP client (name/version) that called the tool
ACTION = (
    "Vaultwatch-Action"  # an owner action: revert, undo, move, create, remove, snapshot, import
)
REVERTS = "Vaultwatch-Reverts"  # one per commit a revert undoes: the "reverted" marks
# "<sha> <path>": a revert took back only this commit's change to one file (not a full revert)
REVERTS_PATH = "Vaultwatch-Reverts-Path"
UNDOES = "Vaultwatch-Undoes"  # on an undo commit: the AI commits whose lines it took back
ANSWERS = "Vaultwatch-Answers"  # on an AI commit: the owner's feedback (id) the write answers

# A trailer value is one line of printable text: git ends the trailer block at a blank line
# and reads any "Key: value" line inside it as a trailer, so a client name carrying a newline
# could hide `Vaultwatch-Tool` (the dashboard would take the AI commit for the owner's) or
# forge `Vaultwatch-Action`. The name comes from the peer, so it is made safe where trailers
# are written, and capped so one peer cannot bloat every commit.
TRAILER_VALUE_MAX = 120


def printable(text: str) -> str:
    """`text` with every character that is not printable (newlines included) made a space:
    a path or name put in a commit message can then never start a line of its own."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def trailer_value(value: str) -> str:
    """`value` as one printable line of at most TRAILER_VALUE_MAX chars ("unknown" if empty)."""
    text = " ".join(printable(value[: TRAILER_VALUE_MAX * 4]).split())
    if len(text) > TRAILER_VALUE_MAX:
        text = text[: TRAILER_VALUE_MAX - 1] + "…"
    return text or "unknown"


def commit_message(
    subject: str, trailers: Mapping[str, str] | Iterable[tuple[str, str]], body: str = ""
) -> str:
    """`subject` (one line), a blank line, `body` (its own paragraphs, if any), then one
    `Key: value` line per trailer (a key may repeat). Every value is made one printable line;
    a value that comes from a peer (a client's name) goes through `trailer_value` first."""
    head = " ".join(printable(subject).split()) or "(no subject)"
    pairs = trailers.items() if isinstance(trailers, Mapping) else trailers
    lines = "".join(f"{key}: {printable(value)}\n" for key, value in pairs)
    para = body.strip("\n") + "\n\n" if body.strip("\n") else ""
    return f"{head}\n\n{para}{lines}"


def trailer_field(key: str, separator: str = "") -> str:
    """The `git log --format` placeholder for every value of trailer `key`, joined by
    `separator` (a git format escape such as %x2C)."""
    return f"%(trailers:key={key},valueonly,separator={separator})"


def trailer_values(field: str, separator: str = ",") -> tuple[str, ...]:
    """The values a `trailer_field` printed, split back (blanks dropped)."""
    return tuple(v.strip() for v in field.split(separator) if v.strip())


# -- commits as `git log` prints them: one record format and one reader ---------------------------
# Every reader of commits and their trailers (the history, review, stats, feedback) asks for the
# fields it needs by name; the placeholders, separators and parsing of each are written here once.
FIELD, RECORD = "\x1f", "\x1e"  # between a record's fields; before each record
PATH_SEPARATOR = "\x1d"  # between Vaultwatch-Reverts-Path values (a path may hold a comma)
LOG_FIELDS: dict[str, str] = {
    "sha": "%H",
    "parents": "%P",
    "author": "%an",
    "email": "%ae",
    "time": "%at",  # author time: kept by a rebase
    "subject": "%s",
    # who wrote it when, and what it says: equal for a rebased commit and its original
    "ident": "%an %ae %ad %s",
    "tool": trailer_field(TOOL),
    "client": trailer_field(CLIENT),
    "action": trailer_field(ACTION),
    "reverts": trailer_field(REVERTS, "%x2C"),
    "reverts_path": trailer_field(REVERTS_PATH, "%x1d"),
    "undoes": trailer_field(UNDOES, "%x2C"),
    "answers": trailer_field(ANSWERS, "%x2C"),
}


class LogRecord(NamedTuple):
    """One commit as `git log` printed the fields asked for (the others stay empty). A tuple:
    stats reads 10,000 of them per run."""

    sha: str = ""
    parents: tuple[str, ...] = ()
    author: str = ""
    email: str = ""
    time: int = 0  # epoch seconds
    subject: str = ""
    ident: str = ""
    tool: str | None = None  # Vaultwatch-Tool: present on every AI commit
    client: str | None = None
    action: str | None = None
    reverts: tuple[str, ...] = ()  # the commits a revert undoes
    reverts_path: tuple[str, ...] = ()  # "<sha> <path>": one file's change taken back
    undoes: tuple[str, ...] = ()  # the AI commits whose lines an undo took back
    answers: tuple[str, ...] = ()  # the owner's feedback ids an AI write answers
    files: tuple[str, ...] = ()  # with `--name-only -z`

    @property
    def path_reverts(self) -> tuple[tuple[str, str], ...]:
        """(commit, path) of each one-file revert (a value without both is no such revert)."""
        pairs = (v.partition(" ") for v in self.reverts_path)
        return tuple((sha, path) for sha, _, path in pairs if sha and path)

    @property
    def took_back(self) -> tuple[str, ...]:
        """Every commit a revert or an undo took back, whole or one file of it."""
        if not (self.reverts or self.reverts_path or self.undoes):
            return ()
        one_file = (v.split(" ", 1)[0] for v in self.reverts_path)
        return tuple(dict.fromkeys([*self.reverts, *one_file, *self.undoes]))


def _values(v: str) -> tuple[str, ...]:
    return trailer_values(v) if v else ()


def _optional(v: str) -> str | None:
    return v or None


# How each field's text becomes its value (a field not named here is its text, stripped). A
# ValueError (a time that is not a number) drops the record.
_CONVERT: dict[str, Callable[[str], Any]] = {
    "time": int,
    "parents": lambda v: tuple(v.split()),
    "tool": _optional,
    "client": _optional,
    "action": _optional,
    "reverts": _values,
    "undoes": _values,
    "answers": _values,
    "reverts_path": lambda v: trailer_values(v, PATH_SEPARATOR) if v else (),
}
_FILES = LogRecord._fields.index("files")


def log_format(fields: tuple[str, ...]) -> str:
    """The `git log --format` value for these fields (names of LOG_FIELDS)."""
    return RECORD + FIELD.join(LOG_FIELDS[f] for f in fields)


def parse_log(out: str, fields: tuple[str, ...]) -> list[LogRecord]:
    """The records `git log --format=<log_format(fields)>` printed, newest first; with
    `--name-only -z`, each with its files (the NUL-separated names after its fields)."""
    slots = [(LogRecord._fields.index(f), _CONVERT.get(f)) for f in fields]
    empty = list(LogRecord())
    records = []
    for rec in out.split(RECORD)[1:]:
        head, _, names = rec.partition("\x00")
        parts = head.split(FIELD)
        if len(parts) < len(slots):
            continue
        row = empty.copy()
        try:
            for (i, convert), part in zip(slots, parts, strict=False):
                text = part.strip()
                row[i] = convert(text) if convert is not None else text
        except ValueError:
            continue
        if names:
            row[_FILES] = tuple(f.strip("\n") for f in names.split("\x00") if f.strip("\n"))
        records.append(LogRecord._make(row))
    return records


def read_log(
    root: Path, fields: tuple[str, ...], *args: str, input: bytes | None = None
) -> list[LogRecord] | None:
    """`git log` with these fields and `args` (revisions, `--name-only -z`, ...), or None when
    git fails (an unborn branch: no history yet)."""
    r = git(root, "log", f"--format={log_format(fields)}", *args, check=False, input=input)
    if r.returncode != 0:
        return None
    return parse_log(r.stdout.decode("utf-8", "replace"), fields)


# The vault's git dir, asked of git once per process and vault when `.git` is a file, and the
# vault each state folder belongs to (make_state_dir must know it: the state folder of a
# worktree or a submodule is not inside the vault folder).
_GIT_DIRS: dict[Path, Path] = {}
_VAULT_OF: dict[Path, Path] = {}


def git_dir(root: Path) -> Path:
    """The vault's own git dir, where git keeps its HEAD, index, locks and operation markers.

    `<root>/.git` when that is a folder, or nothing yet (ensure_repo makes it there): never a
    repository above the vault. When `.git` is a file (a worktree: <main>/.git/worktrees/NAME,
    the git dir of this checkout alone; a submodule: <super>/.git/modules/NAME), the folder it
    points to, as `git rev-parse --absolute-git-dir` says, once. GitError, in one line, when
    that file points to no repository."""
    found = _GIT_DIRS.get(root)
    if found is not None:
        return found
    dot = root / ".git"
    if not dot.is_file():
        return dot
    r = git(root, "rev-parse", "--absolute-git-dir", check=False)
    out = os.fsdecode(r.stdout).strip()
    if r.returncode != 0 or not out:
        said = " ".join(r.stderr.decode(errors="replace").split()) or "no git dir"
        raise GitError(
            f"{dot} is a file that points to no git repository ({said}): repair it "
            "(`git worktree repair`, `git submodule absorbgitdirs`) or remove it"
        )
    found = Path(out)
    _GIT_DIRS[root] = found
    _VAULT_OF[found / "vaultwatch"] = root
    return found


def state_dir(root: Path) -> Path:
    """Our state folder: `vaultwatch` in the vault's git dir (per checkout for a worktree)."""
    return git_dir(root) / "vaultwatch"


# What we keep in the state folder (the journal with its attempted diffs, the search index with
# every note's text, the token, the intent) is the owner's alone: the folder is 0700 and each
# file in it 0600, whatever the umask.
STATE_DIR_MODE = 0o700
STATE_FILE_MODE = 0o600


STATE_NAME = "vaultwatch"  # the state folder's name in the git dir


class StateLinked(VaultwatchError, OSError):
    """A state file or folder of ours is a symbolic link: refused, nothing written or read
    through it. An OSError too: every `except OSError` that treats a broken state file as
    upkeep lost (the journal, a cache) goes on treating it so."""

    code = "state_link"


def _linked(what: str, path: Path) -> StateLinked:
    return StateLinked(
        f"{what} in {path.parent} is a symbolic link: vaultwatch never writes or reads its "
        "state through one (it would go where the link points); nothing was written through "
        "it. Remove the link; vaultwatch remakes the file or folder."
    )


def _state_chain(d: Path) -> list[Path]:
    """Every folder from the state folder `d` is in (the nearest one named STATE_NAME) down to
    `d`; just `d` when it is in none (a --token-file of the owner's)."""
    chain = [d]
    for parent in d.parents:
        if chain[-1].name == STATE_NAME:
            break
        chain.append(parent)
    if chain[-1].name != STATE_NAME:
        return [d]
    chain.reverse()
    return chain


def through_link(path: Path) -> bool:
    """Whether the state file `path` would be reached through a symbolic link: the state
    folder or a folder of it down to `path`'s (the file itself is for O_NOFOLLOW to say)."""
    return any(folder.is_symlink() for folder in _state_chain(path.parent))


def make_state_dir(d: Path) -> Path:
    """The state folder `d` (state_dir: <vault>/.git/vaultwatch, or in the git dir a `.git`
    file points to), or a folder inside it (tmp/, transcripts/), made if missing, but never
    the vault folder itself: a vault moved or deleted while a server runs must stay gone, not
    come back as an empty stub that a restarted server would serve (git resolving it to
    whatever repository is above).

    Every folder from the state folder down to `d` is checked to be a folder and no symbolic
    link, each time (a link planted after the start too): everything we keep (the token, the
    journal, the commit index, temp files of notes) would go wherever it points, and what we
    read back would be someone else's. An OSError (ELOOP) that says so."""
    for i, folder in enumerate(_state_chain(d)):
        if folder.is_symlink():
            raise _linked("the state folder" if i == 0 else f"{folder.name}/", folder)
        if folder.is_dir():
            continue
        if i == 0:
            vault = _VAULT_OF.get(folder, folder.parent.parent)
            if not vault.is_dir():
                raise FileNotFoundError(2, "the vault folder is gone", str(vault))
            folder.mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
        else:
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=STATE_DIR_MODE)
            if folder.is_symlink():  # made by someone else between the two looks
                raise _linked(f"{folder.name}/", folder)
    return d


# SQLite opens these beside a database by name, following a link: a planted `index.sqlite-wal`
# link would have SQLite write its log into the file it names.
_SQLITE_SIDE = ("-wal", "-shm", "-journal")


def state_file(path: Path) -> Path:
    """Make sure the state file `path` exists with STATE_FILE_MODE before another program
    creates it with its own default (SQLite gives its -wal and -shm files the database's mode,
    git writes an index with the umask's). Its folders are checked (make_state_dir), and it,
    or a SQLite file beside it, being a symbolic link is refused (OSError ELOOP): chmod, SQLite
    and git would all follow it."""
    make_state_dir(path.parent)
    for p in (path, *(path.with_name(path.name + side) for side in _SQLITE_SIDE)):
        if p.is_symlink():
            raise _linked(p.name, p)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, STATE_FILE_MODE))
    fd = open_state(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.fchmod(fd, STATE_FILE_MODE)
    finally:
        os.close(fd)
    return path


def open_state(path: Path, flags: int, mode: int = STATE_FILE_MODE) -> int:
    """os.open of the state file `path`, never through a symbolic link: its folders checked
    (make_state_dir, made if missing), the file itself opened with O_NOFOLLOW. The one way
    anything of ours opens a state file to write it (or to lock it)."""
    make_state_dir(path.parent)
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(path.name, path) from None
        raise


def write_state(path: Path, data: bytes) -> None:
    """`data` as the state file `path`, atomically: a temp file made in its (checked) folder
    with O_EXCL (no link can be there), fsynced, renamed over (which replaces a link, never
    writes through it), STATE_FILE_MODE."""
    make_state_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.vaultwatch-tmp")
    fd = open_state(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def copy_to_state(src: Path, dst: Path) -> None:
    """A copy of `src` as the state file `dst` (git's index into our copy of it), never
    written through a link at `dst`."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(dst)
    fd = open_state(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out)


# State files are read as untrusted input: a synced or unzipped `.git` can hold anything, and
# one deep JSON file (`[` * 100,000) raised RecursionError where ValueError was caught, so no
# server could start (adversarial pass 3, N13). Read: regular files only (a FIFO would block),
# never through a symlink (N15: the journal was appended to whatever file a link named), and no
# more than a bound.
STATE_READ_MAX = 64 * 1024 * 1024


class StateDamaged(VaultwatchError, ValueError):
    """A state file that is not what we wrote: a link, not a regular file, too big, or JSON
    that does not parse (too deep included). A ValueError: every reader's `except ValueError`
    already treats it as damage."""

    code = "state_damaged"


def read_state(path: Path, limit: int = STATE_READ_MAX) -> bytes:
    """The bytes of the state file `path`. FileNotFoundError when it is missing; StateDamaged
    when it is a symlink (or in a state folder that is one), not a regular file, or over
    `limit` bytes."""
    if through_link(path):
        raise StateDamaged(f"{path.name} is in a state folder that is a symbolic link")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateDamaged(f"{path.name} is a symbolic link; state files never are") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StateDamaged(f"{path.name} is not a regular file")
        if st.st_size > limit:
            raise StateDamaged(f"{path.name} is {st.st_size:,} bytes, over the {limit:,} limit")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise StateDamaged(f"{path.name} is over the {limit:,} byte limit")
        return data
    finally:
        os.close(fd)


def load_state_json(path: Path, limit: int = STATE_READ_MAX) -> Any:
    """The JSON value of the state file `path` (read_state's rules), StateDamaged when it does
    not parse: bad UTF-8, bad JSON, or nested too deeply for the parser."""
    raw = read_state(path, limit)
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError as exc:
        raise StateDamaged(f"{path.name} is nested too deeply") from exc
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise StateDamaged(f"{path.name} is not valid JSON ({exc})") from exc


def secure_state(root: Path) -> None:
    """The state folder at STATE_DIR_MODE and everything in it at STATE_FILE_MODE (folders at
    STATE_DIR_MODE): run at every start, so vaults made by earlier versions are fixed too."""
    top = make_state_dir(state_dir(root))
    # Not the vault walk (server/notes/walk.py, a layer above): this is the state folder inside
    # .git, every file of it, dot-names included; only links are left alone (chmod follows them).
    for dirpath, dirnames, filenames in os.walk(top):
        with contextlib.suppress(OSError):
            os.chmod(dirpath, STATE_DIR_MODE)
        for name in filenames:
            p = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                if not os.path.islink(p):
                    os.chmod(p, STATE_FILE_MODE)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]


# What git leaves in .git while an operation waits for the owner, and how to abort each. One
# list: the write path refuses to commit in the middle of one, the dashboard shows and aborts it.
IN_PROGRESS = (
    ("MERGE_HEAD", "merge", "a merge"),
    ("rebase-merge", "rebase", "a rebase"),
    ("rebase-apply", "rebase", "a rebase"),
    ("CHERRY_PICK_HEAD", "cherry-pick", "a cherry-pick"),
    ("REVERT_HEAD", "revert", "a revert"),
)


def operation_in_progress(root: Path) -> tuple[str, str] | None:
    """(git command, "a merge") of the operation the vault's git is in the middle of, or None.
    A few stat calls: cheap enough for every poll."""
    g = git_dir(root)
    for marker, command, what in IN_PROGRESS:
        if (g / marker).exists():
            return command, what
    return None


# The lock's fd is passed to every git child started while it is held: a server killed
# mid-commit leaves its `git update-ref` running, and the lock must stay taken until that child
# is done too, or the next server's recovery would undo files the child is about to commit.
# (per thread: only the thread holding the lock may hand out its fd)
_HELD = threading.local()


@contextmanager
def write_lock(root: Path) -> Iterator[None]:
    """One writer at a time across every process on this vault (flock on write.lock)."""
    fd = open_state(state_dir(root) / "write.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.fds = (*getattr(_HELD, "fds", ()), fd)
        _release_dead_index_lock(root)
        yield
    finally:
        _HELD.fds = tuple(f for f in getattr(_HELD, "fds", ()) if f != fd)
        os.close(fd)  # releases the lock, unless a git child still holds its copy


def ensure_repo(root: Path) -> bool:
    """`git init` and one "import" commit as the human when the vault is not yet a repo.

    Safe when two servers start at once (a client's probe process and the real one): `git init`
    is idempotent and the import commit is made under the write lock, only if HEAD is unborn.
    Returns True when this call made the import commit.
    """
    # a bare `.git/vaultwatch` is not a repository; a `.git` file (a worktree, a submodule) is
    if not (git_dir(root) / "HEAD").exists():
        try:
            git(root, "init", "-q")
        except GitError:
            # Another server started at the same moment and is initialising this very repo
            # (git init takes a lock on .git/config): wait for it rather than fail.
            for _ in range(100):
                if (git_dir(root) / "HEAD").exists():
                    break
                time.sleep(0.05)
            else:
                raise
    with write_lock(root):
        if git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode == 0:
            return False
        git(root, "add", "-A")
        # Added with no filter run (`_argv`): a file under a git filter (git-crypt) would go
        # into history as its bytes on disk, which the filter exists to keep out. Left out of
        # the import, untracked, for the owner to add with their own git.
        staged = [os.fsdecode(p) for p in git(root, "ls-files", "-z").stdout.split(b"\x00") if p]
        filtered = sorted(filtered_paths(root, staged))
        if filtered:
            git(root, "--literal-pathspecs", "rm", "-q", "--cached", "--", *filtered)
        name, email = human_identity(root)
        # Without hooks or signing, as every other commit of ours (commit-tree, SAFE_CONFIG): a
        # global pre-commit hook (git-secrets, talisman, the pre-commit framework) that refuses
        # would otherwise stop every start, the repository left initialised with no commit,
        # and a planted gpg.program would run. The owner's identity still applies.
        git(
            root,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            commit_message("import", {ACTION: "import"}),
            env=identity_env(name, email),
        )
        return True


def ignored_paths(root: Path, paths: list[str]) -> list[str]:
    """The paths git ignores here (.gitignore, .git/info/exclude, core.excludesFile) and does
    not track: notes the owner keeps out of history, which no AI write may commit."""
    if not paths:
        return []
    data = b"".join(p.encode() + b"\x00" for p in paths)
    r = git(root, "check-ignore", "-z", "--stdin", check=False, input=data)
    if r.returncode not in (0, 1):  # 1: none ignored; anything else: git could not tell
        raise GitError(f"git check-ignore failed: {r.stderr.decode(errors='replace').strip()}")
    return [p.decode("utf-8", "replace") for p in r.stdout.split(b"\x00") if p]


class Rename(NamedTuple):
    sha: str  # the commit that moved the file
    when: int  # its commit time, epoch seconds
    old: str
    new: str


def renames(root: Path, *rng: str, since: int | None = None) -> list[Rename]:
    """Each rename in these commits (HEAD's history by default) as git's rename detection sees
    it (`git log -M`), newest first; with `since` (epoch seconds) only commits from then on.
    The one reader of renames: the Reads screen follows a moved note by time, review by commit.
    `-z`: a Chinese path (or one with a tab) comes unquoted."""
    args = ["log", "-M", "--diff-filter=R", "--name-status", "-z", "--format=%x1e%H %ct"]
    args += [*([f"--since={since}"] if since is not None else []), *(rng or ["HEAD"])]
    r = git(root, *args, check=False)
    if r.returncode != 0:  # no commit yet, or git could not tell: no renames known
        return []
    out: list[Rename] = []
    for rec in r.stdout.decode("utf-8", "replace").split("\x1e")[1:]:
        head, _, rest = rec.partition("\x00")
        sha, _, when = head.strip().partition(" ")
        items = [i.strip("\n") for i in rest.split("\x00")]
        for i, item in enumerate(items):
            if item.startswith("R") and i + 2 < len(items):
                out.append(Rename(sha, int(when or 0), items[i + 1], items[i + 2]))
    return out


def filtered_paths(root: Path, paths: list[str]) -> dict[str, str]:
    """path -> the git `filter` attribute set on it (git-crypt, lfs, any clean filter): git
    stores such a file as its filter makes it, and a commit of the bytes on disk would put
    what the filter hides (git-crypt's plaintext) into history."""
    if not paths:
        return {}
    data = b"".join(p.encode() + b"\x00" for p in paths)
    r = git(root, "check-attr", "-z", "--stdin", "filter", check=False, input=data)
    if r.returncode != 0:
        raise GitError(f"git check-attr failed: {r.stderr.decode(errors='replace').strip()}")
    parts = r.stdout.split(b"\x00")
    out = {}
    for i in range(0, len(parts) - 2, 3):
        value = parts[i + 2].decode("utf-8", "replace")
        if value not in ("unspecified", "unset"):
            out[parts[i].decode("utf-8", "replace")] = value
    return out


# -- git's own index ----------------------------------------------------------------------------
#
# After a commit, git's index (.git/index) must hold the new text of the paths committed: left
# with the old text, `git status` shows the AI's change staged for removal, and the owner's next
# plain `git commit` would undo it. Every git command takes .git/index.lock to change the index;
# the owner's `git status` holds it for a moment, a `git commit` waiting for its message holds
# it for minutes, a crashed git leaves it. So the index is changed the way git changes it: the
# lock taken first (waiting a moment for another holder), the new index built in a copy, the
# branch moved while the lock is held, then the copy renamed over the index. If the lock cannot
# be had, nothing is committed and the index is exactly as it was.

INDEX_LOCK_WAIT_S = 2.0  # how long a write waits for another git command's index lock


def index_busy_message(wait_s: float = INDEX_LOCK_WAIT_S) -> str:
    return (
        f"git's index is locked (.git/index.lock) and stayed locked for {wait_s:g} s: another "
        "git command is running (a `git commit` waiting for its message holds it) or one "
        "crashed; nothing was written. Try again in a moment; if it stays locked, tell the "
        "owner: if no git command is running, they can delete .git/index.lock."
    )


class IndexBusy(GitError):
    """.git/index.lock stayed held by another git command; nothing was changed."""

    code = "git_busy"


def _index_lock(root: Path) -> Path:
    return git_dir(root) / "index.lock"


def _index_marker(root: Path) -> Path:
    """Our hard link to the .git/index.lock we hold: if we are killed holding it, the next
    taker of the write lock knows the lock for ours (same inode) and removes it."""
    return state_dir(root) / "index.lock"


def wait_for_index(root: Path, wait_s: float = INDEX_LOCK_WAIT_S) -> bool:
    """Whether .git/index.lock is absent, or goes within `wait_s` (another git at work)."""
    lock = _index_lock(root)
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while os.path.lexists(lock):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def _release_dead_index_lock(root: Path) -> None:
    """Under the write lock, an index lock of ours is a dead writer's (a live one releases it
    before the write lock, and a killed one's git children keep the write lock until they end):
    remove it, or every later write (and the owner's git) would find the index locked.

    The same holds for the locks git takes on our own private indexes (the commit index, the
    copy of git's index): only our git children take them, always under the write lock, so
    one left behind is a killed child's, and would stop every later commit."""
    for name in ("commit.index.lock", "index.next.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(state_dir(root) / name)
    marker = _index_marker(root)
    if not os.path.lexists(marker):
        return
    with contextlib.suppress(OSError):
        if os.path.samefile(marker, _index_lock(root)):
            os.unlink(_index_lock(root))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)


def _take_index_lock(root: Path, wait_s: float) -> bool:
    """Take .git/index.lock as git does (created only if absent), waiting up to `wait_s` for
    another holder. True when it is linked to our marker (crash-safe), False when the file
    system has no hard links (then taken by O_EXCL, as git does). Raises IndexBusy."""
    lock, marker = _index_lock(root), _index_marker(root)
    _release_dead_index_lock(root)
    os.close(open_state(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
    linked = True
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            if linked:
                os.link(marker, lock)
            else:
                os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return linked
        except FileExistsError:
            if time.monotonic() >= deadline:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(marker)
                raise IndexBusy(index_busy_message(wait_s)) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        except OSError:
            if not linked:
                raise
            linked = False  # no hard links here: git's own way, without the crash marker
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)


class OwnerIndex:
    """git's index held under git's own lock. `git(...)` runs a git command on a copy of it
    (GIT_INDEX_FILE); `install()` puts the copy in place. Leaving without `install()` leaves
    the index exactly as it was."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index = git_dir(root) / "index"
        self.copy = state_dir(root) / "index.next"
        self.exists = self.index.exists()  # no index at all (a bare start): left so
        self.installed = False

    def git(self, *args: str, input: bytes | None = None) -> None:
        if self.exists:
            if self.copy.is_symlink() or not self.copy.exists():
                # after an install(), under the same lock (a write holds it across the owner's
                # snapshot and its own commit): the next change starts from the index in place
                copy_to_state(self.index, self.copy)
            git(self.root, *args, env={"GIT_INDEX_FILE": str(self.copy)}, input=input)

    def install(self) -> None:
        if self.exists:
            os.replace(self.copy, self.index)
        self.installed = True


@contextmanager
def owner_index(root: Path, wait_s: float = INDEX_LOCK_WAIT_S) -> Iterator[OwnerIndex]:
    """Change git's index as git does: under .git/index.lock (IndexBusy when another git
    command keeps it past `wait_s`), through a copy renamed over it. Caller holds the write
    lock (so the marker of a dead holder can be told from a live one)."""
    linked = _take_index_lock(root, wait_s)
    idx = OwnerIndex(root)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(idx.copy)
        if idx.exists:
            copy_to_state(idx.index, idx.copy)  # read under the lock: nobody else changes it
        yield idx
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(idx.copy)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_index_lock(root))
        if linked:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_index_marker(root))
