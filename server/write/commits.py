"""A commit of exactly these paths, whatever the working tree or git's index holds: the blobs
stored as their bytes are, the trees built in a private index, the branch moved by
compare-and-swap under git's index lock, git's index swapped as git does; and a merge our lock
stopped before it merged anything, cleared."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import time
from pathlib import Path

from server.core.faults import crash_point
from server.core.git_index import IndexBusy, OwnerIndex, owner_index, prepare_index
from server.core.git_run import GitError, RefUpdate, git, identity_env
from server.core.gitprocs import hold_for_other_gits
from server.core.gitrepo import filtered_paths, operation_in_progress
from server.core.state_files import (
    StateDamaged,
    git_dir,
    read_state,
    state_dir,
    state_file,
    write_state,
)
from server.write.store_errors import StoreError

log = logging.getLogger("vaultwatch.store")

NO_SIGN = ("-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null")


def _hash_files(root: Path, paths: list[str]) -> list[str]:
    """Store these files (relative to root) in git exactly as their bytes are: no autocrlf,
    eol or clean filter of the user's applies, so the blob is always the bytes we compare.

    Every commit of ours holds the file's exact bytes (the owner's snapshot, the AI's write,
    the dashboard's actions): what reads history back compares blobs with the working file
    byte for byte (a revert merges them with `git merge-file`, recovery matches blob ids), and
    a clean filter the user set could change the owner's text. Which files have changes at all
    is git's view, though: see _hash_as_git_stores."""
    out = git(
        root, "hash-object", "-w", "--no-filters", "--stdin-paths", input="\n".join(paths).encode()
    )
    return out.stdout.decode().split()


def _hash_as_git_stores(root: Path, paths: list[str], filters: bool = False) -> list[str]:
    """The blob `git add` would make of each file (relative to root): core.autocrlf, the
    text/eol attributes applied, each by its own path, and its clean filter only for the
    owner's own action (`filters`; the server never runs a program the vault's config names).
    With none of them set it is the blob of the bytes, stored (-w) so that it can be committed
    as it is. core.safecrlf is off here: a note with mixed line endings is compared, never
    refused."""
    out = git(
        root,
        "-c",
        "core.safecrlf=false",
        "hash-object",
        "-w",
        "--stdin-paths",
        input="\n".join(paths).encode(),
        filters=filters,
    )
    return out.stdout.decode().split()


def _read_text(path: Path) -> str | None:
    """A small state file's text; None when missing, damaged or a link (never read through)."""
    try:
        return read_state(path, 4096).decode("ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError, StateDamaged):
        return None


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


class BranchMoved(GitError):
    """The branch moved between reading HEAD and moving it (compare-and-swap failed)."""


def commit_blobs(
    root: Path,
    entries: list[tuple[str, str | None]],
    message: str,
    author: tuple[str, str],
) -> str:
    """Commit exactly these paths, whatever else the working tree or git's index holds: HEAD +
    these (path, blob; None removes the path) -> a tree (in a private index) -> a commit by
    `author` -> the branch, moved only if it still points where it did (compare-and-swap).
    The real index is then set to HEAD for these paths. Caller holds the write lock.

    The owner's moves, creates, deletes and snapshots from the dashboard commit this way; the
    write path (`Store.apply`: the AI's writes, the owner's reverts and undos) is built of the
    same three steps: `commit_objects`, `prepare_index`, `_move_branch` under git's lock."""
    branch, head = head_branch(root)
    [sha] = commit_objects(root, head, [(entries, message, author)])
    prepared = prepare_index(root, _index_info(root, entries))
    update = _ref_update(root, message)
    try:
        # git's index lock only for the moment the branch moves and the index is swapped: if
        # another git command keeps it, IndexBusy, nothing is committed, the index is as it was
        with owner_index(root, prepared=prepared) as idx:
            crash_point("index_locked")  # .git/index.lock is ours
            _move_branch(root, branch, head, sha, idx, update)
    finally:
        update.cancel()
    _mark_private_index(root, sha)
    crash_point("commit_done")
    return sha


def commit_objects(
    root: Path, head: str, steps: list[tuple[list[tuple[str, str | None]], str, tuple[str, str]]]
) -> list[str]:
    """One commit per step (entries, message, author), each on the one before, the first on
    `head`: its tree is its parent's with the step's entries applied (path, blob; None removes
    the path). Built in a private index; no ref moves, git's index is untouched. Caller holds
    the write lock."""
    # A private index, kept between writes (all of them under the write lock): when it
    # already holds HEAD's tree, read-tree is skipped and write-tree reuses its cached
    # subtrees, which is most of the cost of a commit in a large vault.
    index = state_dir(root) / "commit.index"
    marker = state_dir(root) / "commit.index.head"
    env = {"GIT_INDEX_FILE": str(index)}
    infos = [_index_info(root, entries) for entries, _, _ in steps]
    named = {p for entries, _, _ in steps for p, _ in entries}
    if index.is_symlink():  # git would read the file it names as our index: never
        os.unlink(index)
    cached = index.exists() and _read_text(marker) == head  # holds HEAD's tree already
    # The marker says "the private index holds exactly this commit's tree". It goes before the
    # index is changed and comes back only once the branch holds what the index holds: a crash
    # anywhere between (a batch killed holding .git/index.lock) leaves no marker, and the next
    # commit starts from HEAD's tree. Kept, the dead batch's entries rode along in the next
    # write's commit, its lines in no file on disk (issue 27).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)
    try:
        trees = _private_trees(root, env, head, infos, cached)
        # Read afresh from HEAD, the index holds HEAD and these entries by construction; a
        # cached one is checked (one git run, through the subtrees that differ only).
        if cached and not _changed_paths(root, head, trees[-1]) <= named:
            # Something else is in the private index (whatever put it there): never commit it.
            # Built again from HEAD alone, and refused if even that names other paths.
            log.warning("private index held paths this commit does not name; rebuilt from HEAD")
            trees = _private_trees(root, env, head, infos, False)
            extra = _changed_paths(root, head, trees[-1]) - named
            if extra:
                raise GitError(
                    "the commit would change paths it does not name "
                    f"({', '.join(sorted(extra)[:5])}); nothing was committed"
                )
        state_file(index)  # git wrote it with the umask's mode
        crash_point("private_index")
    except GitError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(index)
        raise
    shas: list[str] = []
    parent = head
    for tree, (_, message, author) in zip(trees, steps, strict=True):
        parent = (
            git(
                root,
                *NO_SIGN,
                "commit-tree",
                tree,
                "-p",
                parent,
                "-F",
                "-",
                env=identity_env(*author),
                input=message.encode(),
            )
            .stdout.decode()
            .strip()
        )
        shas.append(parent)
    return shas


def _index_info(root: Path, entries: list[tuple[str, str | None]]) -> bytes:
    """`git update-index --index-info` lines for these entries (None: the path goes)."""
    lines = []
    for path, blob in entries:
        if blob is None:  # mode 0 takes the path out of the index
            lines.append(f"0 {'0' * 40}\t{path}")
            continue
        lines.append(f"{_git_mode(root / path)} {blob}\t{path}")
    return ("\n".join(lines) + "\n").encode()


def _ref_update(root: Path, message: str) -> RefUpdate:
    """A `git update-ref` started ahead for the commit with `message` (see RefUpdate)."""
    return RefUpdate(root, f"commit: {message.split(chr(10), 1)[0]}")


def _move_branch(
    root: Path, branch: str, head: str, sha: str, idx: OwnerIndex, update: RefUpdate
) -> None:
    """The branch from `head` to `sha` (compare-and-swap, by `update`) and git's index swapped
    for the one `idx` holds, while git's index lock is ours: the owner's index never shows the
    commit's change staged for removal. BranchMoved, nothing changed, when the branch is
    elsewhere."""
    try:
        update.move(branch, sha, head)
    except GitError as exc:
        now = git(root, "rev-parse", "-q", "--verify", branch, check=False)
        if now.stdout.decode().strip() != head:
            # another git moved the branch without the index lock (a merge or rebase
            # finishing): nothing of ours is committed; the write is made again on it
            raise BranchMoved(
                f"{branch} moved while the commit was being made; nothing was committed"
            ) from exc
        raise
    crash_point("branch_moved")
    try:
        idx.install()  # a rename inside .git, under the lock
    except OSError as exc:
        # Not put in place: move the branch back (it moved a moment ago, under our
        # locks), so the write fails as a whole rather than leave the index behind it.
        back = git(root, "update-ref", branch, head, sha, check=False)
        if back.returncode != 0:
            log.warning("git's index not updated after commit %s: %s", sha, exc)
            return
        raise GitError(f"git's index could not be updated ({exc}); nothing was committed") from exc
    _hold_for_a_rebase_begun(root, sha)


# How long the index lock is kept, at most, for a rebase that began while it was ours (see
# _hold_for_a_rebase_begun): its next step needs the lock, so it ends within moments.
REBASE_HOLD_S = 10.0


def _hold_for_a_rebase_begun(root: Path, new: str) -> None:
    """Called holding git's index lock, the branch just moved to `new`. A rebase or merge that
    has begun meanwhile (its state folder appeared while the lock was ours, or, before it
    writes one, it is running: `gitprocs`) may have read the branch before our commit: left to
    run on, it would rebase the branch as it was, and at its very end fail to move a branch
    that is no longer where it read it ("could not update refs/heads/..."), half-way, HEAD
    detached, until the owner acts (whose `git rebase --abort` then drops our commit). Its
    next step (a rebase's checkout of its base, a merge's first index write) needs the index
    lock: kept until then, it fails there, before it has changed anything, and removes its
    state (the plugin tries again at its next sync). A rebase that read our commit is let go.
    (Looking only for the state folder left open a rebase that read the branch before our
    ref update and git's index after our swap: 1 run in 10 of test_obsidian_git[rebase].)"""
    hold_for_other_gits(root, new, REBASE_HOLD_S)


# When a write last took and let go git's index lock on each vault (wall clock, ns; 0: still
# held), so that a merge it stopped can be told by the time git wrote MERGE_HEAD.
_HELD_AT: dict[Path, tuple[int, int]] = {}
# how long after we let the lock go a stopped merge may still be writing its MERGE_HEAD (a
# process descheduled on a loaded machine), and the coarseness of file times
_MERGE_LATE_NS = 2_000_000_000
_FILE_TIME_NS = 20_000_000


def _clear_a_merge_stopped_by_us(root: Path) -> bool:
    """`git merge` refreshes git's index before it merges anything; when it cannot take the
    index lock (ours, for the moment of a write) it gives up, "Unable to write index.", yet
    leaves MERGE_HEAD behind with nothing merged (git 2.39). The next `git commit` (the Obsidian
    Git plugin's backup) would then record a merge whose tree leaves the other side's changes
    out: lines another machine committed vanish from the notes (they stay in history). Such a
    state, written while our lock was held or just after, with nothing staged (git's index is
    HEAD's tree, no conflict) and no other operation under way, is cleared as
    `git merge --abort` would clear it; the plugin's next sync merges again. Under git's index
    lock, so that the plugin's commit cannot record it meanwhile. True when it was cleared."""
    held = _HELD_AT.get(root)
    if held is None:
        return False
    g = git_dir(root)
    try:
        written = os.stat(g / "MERGE_HEAD").st_mtime_ns
    except OSError:
        return False
    end = held[1] or time.time_ns()
    if not held[0] - _FILE_TIME_NS <= written <= end + _MERGE_LATE_NS:
        return False
    if any(os.path.lexists(g / m) for m in ("rebase-merge", "rebase-apply", "sequencer")):
        return False
    if any(os.path.lexists(g / m) for m in ("CHERRY_PICK_HEAD", "REVERT_HEAD")):
        return False
    if git(root, "diff-index", "--cached", "--quiet", "HEAD", check=False).returncode != 0:
        return False  # something merged, staged or in conflict: the owner's to finish
    try:
        with owner_index(root):
            try:
                if os.stat(g / "MERGE_HEAD").st_mtime_ns != written:
                    return False
            except FileNotFoundError:
                return False  # committed or aborted meanwhile
            for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(g / name)
    except IndexBusy:
        return False
    log.warning("a git merge stopped by our index lock before it merged anything was cleared")
    return True


def git_moment(root: Path) -> tuple[object, ...]:
    """What a rebase or merge changes as it goes (its marker, HEAD, ORIG_HEAD), in a few stat
    calls: two equal moments around a plan say no such operation ran meanwhile."""
    g = git_dir(root)
    out: list[object] = [operation_in_progress(root)]
    for f in ("HEAD", "ORIG_HEAD"):
        try:
            st = os.stat(g / f)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_mtime_ns))
    return tuple(out)


def _mark_private_index(root: Path, sha: str) -> None:
    """The branch has moved to `sha`, which the private index holds: say so (upkeep only, a
    lost marker costs a read-tree)."""
    marker = state_dir(root) / "commit.index.head"
    try:
        write_state(marker, sha.encode())
    except OSError as exc:
        log.warning("private index marker not written: %s", exc)
        with contextlib.suppress(OSError):
            os.unlink(marker)


def _ref_stamp(root: Path, branch: str) -> list[tuple[int, int, int] | None]:
    """What git changes when it moves `branch` (its loose ref, packed-refs, a reftable's list)
    or HEAD, as (inode, size, mtime): a few stat calls to tell, under git's index lock and
    without running git, that the branch is where the plan read it."""
    g = git_dir(root)
    common = g
    with contextlib.suppress(OSError):
        common = (g / (g / "commondir").read_text().strip()).resolve()
    out: list[tuple[int, int, int] | None] = []
    for f in (g / "HEAD", common / branch, common / "packed-refs", common / "reftable/tables.list"):
        try:
            st = os.stat(f)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return out


def _private_trees(
    root: Path, env: dict[str, str], head: str, infos: list[bytes], cached: bool
) -> list[str]:
    """The trees of HEAD with each of `infos` applied in turn, built in the private index
    (`env`): from HEAD's tree read afresh unless `cached` (the index is known to hold it)."""
    if not cached:
        git(root, "read-tree", head, env=env)
    trees = []
    for info in infos:
        git(root, "update-index", "--index-info", env=env, input=info)
        trees.append(git(root, "write-tree", env=env).stdout.decode().strip())
    return trees


def _changed_paths(root: Path, head: str, tree: str) -> set[str]:
    """The paths whose blob or mode differs between HEAD's tree and `tree`."""
    out = git(root, "diff-tree", "-r", "-z", "--no-renames", "--name-only", head, tree).stdout
    return {os.fsdecode(p) for p in out.split(b"\x00") if p}


def _git_mode(path: Path) -> str:
    """The mode git records for the file at `path` (a symlink as a link, not its target)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "100644"
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    return "100755" if st.st_mode & 0o111 else "100644"


def disk_blobs(root: Path, paths: list[str]) -> list[tuple[str, str | None]]:
    """Each path with the blob of the file on disk now, stored in git (None: no such file, the
    commit removes it); a symlink as its target text, as git keeps links. The owner's actions
    only (move, delete, create): a file under a filter goes through the filter."""
    files = [p for p in paths if os.path.lexists(root / p) and not os.path.islink(root / p)]
    # a file under a git filter (git-crypt) is stored as `git add` stores it: its bytes on disk
    # are what the filter keeps out of history (the AI never writes such a file; the owner's
    # move or delete in the dashboard does reach it)
    filtered = set(filtered_paths(root, files)) if files else set()
    plain = [p for p in files if p not in filtered]
    through = [p for p in files if p in filtered]
    found = dict(zip(plain, _hash_files(root, plain), strict=True)) if plain else {}
    if through:
        found.update(zip(through, _hash_as_git_stores(root, through, True), strict=True))
    for p in paths:
        if os.path.islink(root / p):
            link = os.fsencode(os.readlink(root / p))
            found[p] = git(root, "hash-object", "-w", "--stdin", input=link).stdout.decode().strip()
    return [(p, found.get(p)) for p in paths]


def head_branch(root: Path) -> tuple[str, str]:
    """(branch ref, HEAD sha) in one git call; StoreError when HEAD is not on a branch."""
    # the flag applies to the arguments after it: the sha first, then the branch's name
    out = git(root, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD").stdout.decode()
    sha, branch = out.split()[:2]
    if not branch.startswith("refs/"):
        raise StoreError(
            "detached_head",
            "the vault's git HEAD is not on a branch; "
            "nothing was written. Tell the owner to check out a branch.",
            owner="git's HEAD is not on a branch; nothing was changed. Check out a branch "
            "(git switch <branch>), then try again.",
        )
    return branch, sha
