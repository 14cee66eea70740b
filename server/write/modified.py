"""When a note was last modified: the time of the last commit that touched it, or its mtime when
the file has changes git has not seen (or git does not track it).

A fresh clone gives every file the clone's mtime, so mtimes alone say nothing about which notes
are recent. Commit times come from one `git log --name-only` pass, cached by HEAD; when HEAD
moves forward only the new commits are read. Which files differ from HEAD comes from one full
`git status` per process; after that, a note that changed on disk is compared with HEAD without
running git: its git blob id (what `git hash-object` computes from the bytes, or from the link
text of a symlink) and mode against HEAD's, read once with `git ls-tree` and kept in step as HEAD
moves forward (`git diff-tree`, one per move, in place of a `git status`). A reconcile after an
edit runs on every tool call, so it must not start a process per change.

Where git does not store a file's bytes as they are on disk (`core.autocrlf`, attributes that
set text/eol/filter/ident/working-tree-encoding, `core.symlinks=false`), a blob id computed
from the bytes would call a clean note changed: then `git status` decides, as before. Content
that is staged but not committed is compared as the working file against HEAD (dated by its
mtime only when the file itself differs from HEAD).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server.core.git_run import git
from server.core.state_files import load_state_json, state_dir, write_state
from server.notes.walk import spelled

log = logging.getLogger("vaultwatch.modified")

FULL_RECHECK = 500  # more notes than this to re-check: one full `git status`
# `prime`'s status is trusted only for notes unchanged since this long before it started: file
# times come from a coarse kernel clock that may lag time.time_ns() by a few ms
PRIME_SLACK_NS = 1_000_000_000

# Attributes that make git store other bytes than the file's (or decide per file whether to):
# any of these words in an attributes file sends the comparison back to `git status`.
CONVERTING = re.compile(rb"(?<![\w-])(text|eol|crlf|filter|ident|working-tree-encoding)(?![\w-])")
FALSE = {"false", "no", "off", "0", ""}


@dataclass
class _Tree:
    """HEAD's tree as git stores it: NFC path -> (mode, blob id). `ambiguous`: NFC paths that
    two stored names normalise to (compared by `git status`); `attributes`: folders holding a
    committed .gitattributes."""

    head: str
    blobs: dict[str, tuple[str, str]]
    ambiguous: set[str]
    attributes: set[str]


@dataclass
class _GitSettings:
    """What decides whether a file's blob id can be computed from its bytes alone."""

    key: tuple[object, ...]  # the config files' stat (and GIT_CONFIG_* variables)
    plain: bool  # no core.autocrlf, no core.symlinks=false
    filemode: bool  # core.filemode: the executable bit counts
    attributes: list[str]  # attributes files outside the tree ($GIT_DIR/info, the user's, system)


class ModifiedTimes:
    """Commit times per path and the set of paths git has not seen as they are, kept in step
    with HEAD and with the note index's generation. Thread-safe; every git failure degrades to
    mtimes (an empty map), never to an error."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._head: str | None = None
        self._generation: int | None = None
        self._commits: dict[str, int] = {}  # path -> ns of the last commit that touched it
        self._dirty: set[str] = set()
        # bumped whenever a path's modified time may have changed, other than the paths
        # changed on disk since the last call (the caller classifies those again anyway)
        self.version = 0
        self.log_passes = 0  # full `git log` passes (tests and the bench read it)
        self._tree: _Tree | None = None  # HEAD's blob ids, read when a change needs them
        self._settings: _GitSettings | None = None
        self._attr_files: dict[str, tuple[tuple[int, int, int], bool]] = {}  # file -> converts
        # set by `prime`: HEAD's commit times and the dirty set were read, for no generation
        # yet, by a status started at this time (ns, minus PRIME_SLACK_NS)
        self._primed_at: int | None = None
        self._priming = False

    def prime(self) -> None:
        """Start the first call's git work (commit times, the full `git status`: ~0.2 s of a
        git process on 10,000 notes) now, in a thread, so it runs beside the first walk of the
        notes instead of after it. Only before any `current`; `current` waits for it (the
        lock), and trusts its status only for HEAD as it was and for notes unchanged since it
        started (`changed_after`): a note edited while the walk ran is compared again."""
        with self._lock:
            if self._generation is not None or self._priming or self._primed_at is not None:
                return
            self._priming = True
        threading.Thread(target=self._prime, name="vaultwatch-git-status", daemon=True).start()

    def _prime(self) -> None:
        with self._lock:
            self._priming = False
            if self._generation is not None:  # `current` ran first: nothing to prepare
                return
            since = time.time_ns() - PRIME_SLACK_NS
            head = self._read_head()
            if head is None:
                return
            self._follow(self._head, head)
            found = self._status(None)
            if found is None:
                return  # `current` tries again (and says why git failed)
            self._head, self._dirty, self._primed_at = head, found, since

    def current(
        self,
        generation: int,
        changed_since: Callable[[int], set[str] | None],
        changed_after: Callable[[int], set[str]] | None = None,
    ) -> tuple[int, dict[str, int], set[str]]:
        """(version, commit times, dirty paths) for the notes at index `generation`.
        `changed_since(g)` is the notes changed on disk since generation g, None if unknown;
        `changed_after(ns)` the notes whose file changed (mtime or ctime) at or after `ns`."""
        with self._lock:
            head = self._read_head()
            if head == self._head and generation == self._generation:
                return self.version, self._commits, self._dirty
            primed, self._primed_at = self._primed_at, None
            recheck: set[str] | None = None  # None: every path
            disk: set[str] | None = None
            if primed is not None and head == self._head and changed_after is not None:
                # `prime`'s status holds for this HEAD but for notes changed since it began
                self._refresh_dirty(changed_after(primed), head)
                self.version += 1
                self._generation = generation
                return self.version, self._commits, self._dirty
            if head != self._head:
                moved = self._follow(self._head, head)
                if moved is not None and self._generation is not None:
                    disk = changed_since(self._generation)
                    recheck = None if disk is None else moved | disk
            elif self._generation is not None:
                recheck = disk = changed_since(self._generation)
            before = self._dirty
            self._refresh_dirty(recheck if head is not None else set(), head)
            # The caller re-reads the notes changed on disk anyway; only a change elsewhere (a
            # commit, a full status) makes it re-date every note, which costs ms at 10,000.
            if head != self._head or disk is None or (before ^ self._dirty) - disk:
                self.version += 1
            self._head, self._generation = head, generation
            return self.version, self._commits, self._dirty

    # -- HEAD and the log -------------------------------------------------------------------------

    def _read_head(self) -> str | None:
        """HEAD's sha from the files git keeps (microseconds: this runs on every tool call),
        asking git itself only for layouts the files do not answer (worktrees, odd refs)."""
        gitdir = self.root / ".git"
        if not os.path.lexists(gitdir):
            return None  # not a repository (yet): every note is dated by its mtime
        try:
            head = (gitdir / "HEAD").read_text().strip()
            if not head.startswith("ref: "):
                return head or None
            ref = head[5:].strip()
            try:
                return (gitdir / ref).read_text().strip() or None
            except FileNotFoundError:
                for line in (gitdir / "packed-refs").read_text().splitlines():
                    sha, _, name = line.partition(" ")
                    if name == ref:
                        return sha
                return None  # an unborn branch: no commit yet
        except (OSError, UnicodeDecodeError):
            r = git(self.root, "rev-parse", "-q", "--verify", "HEAD", check=False)
            return r.stdout.decode().strip() or None if r.returncode == 0 else None

    def _follow(self, old: str | None, new: str | None) -> set[str] | None:
        """Bring commit times to `new`. Returns the paths whose HEAD content changed when only
        the commits since `old` were read, None after a full pass (or no HEAD)."""
        if new is None:
            self._commits = {}
            return None
        fresh = old is None
        if fresh:  # a new process: start from what another one saved, if any
            old, self._commits = self._load()
        if old is not None:
            anc = git(self.root, "merge-base", "--is-ancestor", old, new, check=False)
            if anc.returncode == 0:
                newer = self._log(f"{old}..{new}") if old != new else {}
                if newer is not None:
                    self._commits = {**self._commits, **newer}
                    if fresh and newer:
                        self._save(new)
                    self._tree_follow(old, new)
                    return set(newer)
        self._tree = None  # HEAD jumped (reset, checkout): read again when a change needs it
        full = self._log(new)
        self.log_passes += 1
        self._commits = full or {}
        if full is not None:
            self._save(new)
        return None

    # The last full pass, kept beside the index so each new process (the dashboard's insights,
    # the shell commands) does not read the whole history again: one pass per HEAD, not per
    # process. A cache only: unreadable or for another HEAD, it is ignored.

    @property
    def _cache(self) -> Path:
        return state_dir(self.root) / "modified.json"

    def _load(self) -> tuple[str | None, dict[str, int]]:
        try:
            data = load_state_json(self._cache)
            head, commits = data["head"], data["commits"]
            return str(head), {str(k): int(v) for k, v in commits.items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None, {}

    def _save(self, head: str) -> None:
        data = json.dumps({"head": head, "commits": self._commits}, ensure_ascii=False)
        try:
            write_state(self._cache, data.encode("utf-8"))  # never through a link
        except OSError as exc:
            log.warning("could not keep commit times (%s); the next process reads git again", exc)

    def _log(self, revs: str) -> dict[str, int] | None:
        args = ("log", "--format=%x01%ct", "--name-only", "-z", "--no-renames", revs, "--")
        r = git(self.root, *args, check=False)
        if r.returncode != 0:
            log.warning("git log failed; notes are dated by mtime: %s", r.stderr[:200])
            return None
        times: dict[str, int] = {}
        for block in r.stdout.split(b"\x01")[1:]:  # per commit: ct NUL \n path NUL path NUL
            head, _, files = block.partition(b"\x00")
            try:
                ns = int(head) * 1_000_000_000
            except ValueError:
                continue
            for raw in files.split(b"\x00"):
                name = raw.strip(b"\n")
                if name:
                    # newest first: the first commit seen for a path is its last one
                    times.setdefault(_path(name), ns)
        return times

    # -- what git has not seen ----------------------------------------------------------------------

    def _refresh_dirty(self, recheck: set[str] | None, head: str | None = None) -> None:
        if recheck is not None and not recheck:
            return
        if recheck is not None and len(recheck) <= FULL_RECHECK:
            found = self._compare(recheck, head) if head is not None else None
            if found is None:
                found = self._status(sorted(recheck))
            if found is not None:
                self._dirty = (self._dirty - recheck) | found
                return
        found = self._status(None)
        self._dirty = found if found is not None else set()

    def _compare(self, paths: set[str], head: str) -> set[str] | None:
        """Which of `paths` differ from HEAD, by blob id and mode, without running git once
        HEAD's tree is known. None when git must decide (filters, odd names): `git status`."""
        settings = self._git_settings()
        if settings is None or not settings.plain or any(map(self._converts, settings.attributes)):
            return None  # git may store other bytes than the file's: only it can tell
        tree = self._tree if self._tree is not None and self._tree.head == head else None
        if tree is None:
            tree = self._tree = self._read_tree(head)
            if tree is None:
                return None
        if paths & tree.ambiguous or any(self._converts_here(p, tree) for p in paths):
            return None
        found: set[str] = set()
        for path in paths:
            stored = tree.blobs.get(path)
            here = self._worktree_entry(path, settings.filemode)
            if here is None:  # gone from disk: git status reports a tracked file deleted
                if stored is not None:
                    found.add(path)
            elif stored is None or not _same(stored, here, settings.filemode):
                found.add(path)  # untracked, or not as committed
        return found

    def _worktree_entry(self, path: str, filemode: bool) -> tuple[str, str] | None:
        """(mode, blob id) of the file as git would store it; None when it is not there. A
        symlink is its link text (git stores the link, never its target)."""
        disk = self._on_disk(path)
        if disk is None:
            return None
        try:
            st = os.lstat(disk)
            if stat.S_ISLNK(st.st_mode):
                mode, data = "120000", os.fsencode(os.readlink(disk))
            elif stat.S_ISREG(st.st_mode):
                with open(disk, "rb") as f:
                    data = f.read()
                mode = "100755" if filemode and st.st_mode & stat.S_IXUSR else "100644"
            else:
                return ("040000", "")  # a folder or a device: differs from any stored blob
        except FileNotFoundError:
            return None
        except OSError:
            return ("", "")  # unreadable: not as committed, as far as we can tell
        blob = hashlib.sha1(b"blob %d\x00" % len(data))
        blob.update(data)
        return mode, blob.hexdigest()

    def _on_disk(self, path: str) -> str | None:
        """The file for an NFC path as spelled on disk (a name made on macOS may be NFD);
        None when there is none."""
        full = os.path.join(self.root, spelled(self.root, path))
        return full if os.path.lexists(full) else None

    def _read_tree(self, head: str) -> _Tree | None:
        """HEAD's blob ids: one `git ls-tree` per HEAD (a few ms for 10,000 notes)."""
        r = git(self.root, "ls-tree", "-r", "-z", "--full-tree", head, check=False)
        if r.returncode != 0:
            log.warning("git ls-tree failed; git status decides: %s", r.stderr[:200])
            return None
        tree = _Tree(head, {}, set(), set())
        for entry in r.stdout.split(b"\x00"):
            meta, tab, raw = entry.partition(b"\t")
            if tab:
                mode, _, blob = meta.decode().split(" ")
                path = _path(raw)
                if path in tree.blobs:
                    tree.ambiguous.add(path)  # two stored names, one NFC name
                _tree_set(tree, path, mode, blob)
        return tree

    def _tree_follow(self, old: str, new: str) -> None:
        """HEAD moved forward from `old`: bring a known tree to `new` by its diff (exact, merges
        included), in place of the `git status` that would otherwise re-check the moved notes."""
        tree = self._tree
        if tree is None or tree.head != old:
            self._tree = None
            return
        if old == new:
            return
        r = git(
            self.root, "diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", old, new, check=False
        )
        if r.returncode != 0:
            self._tree = None
            return
        fields = r.stdout.split(b"\x00")
        for meta, raw in zip(fields[0::2], fields[1::2], strict=False):
            # ':oldmode newmode oldblob newblob status' NUL path NUL
            parts = meta.decode().lstrip(":").split(" ")
            if len(parts) != 5:
                self._tree = None
                return
            path = _path(raw)
            if parts[4] == "D":
                tree.blobs.pop(path, None)
                if path.rpartition("/")[2] == ".gitattributes":
                    tree.attributes.discard(path.rpartition("/")[0])
            else:
                _tree_set(tree, path, parts[1], parts[3])
        tree.head = new

    # -- settings that make git store other bytes than the file's ---------------------------------

    def _config_files(self) -> list[str]:
        """Where git reads config from (repository, user, XDG, system)."""
        home = os.path.expanduser("~")
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        return [
            str(self.root / ".git" / "config"),
            os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
            os.path.join(xdg, "git", "config"),
            os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
        ]

    def _git_settings(self) -> _GitSettings | None:
        """core.autocrlf, core.symlinks, core.filemode and the attributes files outside the tree:
        one `git config`, read again only when one of git's config files changes (not a file
        they include), so a reconcile runs no git. The attributes files are checked by stat."""
        env = tuple(map(os.environ.get, CONFIG_ENV))
        key: tuple[object, ...] = (env, *(_stamp(f) for f in self._config_files()))
        if self._settings is None or self._settings.key != key:
            r = git(self.root, "config", "-z", "--get-regexp", CONFIG_KEYS, check=False)
            if r.returncode not in (0, 1):  # 1: none of them is set
                log.warning("git config failed; git status decides: %s", r.stderr[:200])
                return None
            values: dict[str, str] = {}
            for item in r.stdout.split(b"\x00"):
                name, sep, value = item.decode("utf-8", "replace").partition("\n")
                if name:  # the last one wins, as in git; a bare `key` (no '=') is true
                    values[name.lower()] = value.strip().lower() if sep else "true"
            home = os.path.expanduser("~")
            xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
            user_attrs = values.get("core.attributesfile")
            self._settings = _GitSettings(
                key=key,
                plain=values.get("core.autocrlf", "false") in FALSE
                and values.get("core.symlinks", "true") not in FALSE,
                filemode=values.get("core.filemode", "true") not in FALSE,
                attributes=[
                    str(self.root / ".git" / "info" / "attributes"),
                    os.path.expanduser(user_attrs)
                    if user_attrs
                    else os.path.join(xdg, "git", "attributes"),
                    "/etc/gitattributes",
                ],
            )
        return self._settings

    def _converts_here(self, path: str, tree: _Tree) -> bool:
        """Whether a .gitattributes in the note's folder or above (on disk, or committed and
        gone from disk) may convert it."""
        folder = path.rpartition("/")[0]
        while True:
            if self._converts(os.path.join(self.root, folder, ".gitattributes")):
                return True
            if folder in tree.attributes and not os.path.lexists(
                os.path.join(self.root, folder, ".gitattributes")
            ):
                return True  # git reads the committed one: assume the worst
            if not folder:
                return False
            folder = folder.rpartition("/")[0]

    def _converts(self, attributes_file: str) -> bool:
        stamp = _stamp(attributes_file)
        if stamp is None:
            return False
        known = self._attr_files.get(attributes_file)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            with open(attributes_file, "rb") as f:
                converts = CONVERTING.search(f.read()) is not None
        except OSError:
            converts = True  # there but unreadable: git may read what we cannot
        self._attr_files[attributes_file] = (stamp, converts)
        return converts

    def _status(self, paths: list[str] | None) -> set[str] | None:
        """Paths (of `paths`, or all) whose file or staged content differs from HEAD."""
        cmd = ["--literal-pathspecs", "status", "--porcelain=v1", "-z"]
        cmd += ["--untracked-files=all", "--no-renames", "--", *(paths or [])]
        r = git(self.root, *cmd, check=False)
        if r.returncode != 0:
            log.warning("git status failed; notes are dated by mtime: %s", r.stderr[:200])
            return None
        # each entry: 'XY path' ending in NUL
        return {_path(e[3:]) for e in r.stdout.split(b"\x00") if len(e) > 3}


# what changes which config files git reads, or adds settings of its own
CONFIG_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
)
CONFIG_KEYS = r"^core\.(autocrlf|symlinks|filemode|attributesfile)$"


def _tree_set(tree: _Tree, path: str, mode: str, blob: str) -> None:
    tree.blobs[path] = (mode, blob)
    folder, _, name = path.rpartition("/")
    if name == ".gitattributes":
        tree.attributes.add(folder)


def _same(stored: tuple[str, str], here: tuple[str, str], filemode: bool) -> bool:
    """Whether git would see the file as committed: same blob, same mode (the executable bit
    only when core.filemode is on; a symlink never equals a file)."""
    if stored[1] != here[1]:
        return False
    files = ("100644", "100755")
    return stored[0] == here[0] or (not filemode and stored[0] in files and here[0] in files)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _path(raw: bytes) -> str:
    return unicodedata.normalize("NFC", raw.decode("utf-8", "surrogateescape"))
