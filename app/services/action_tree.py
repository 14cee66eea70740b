"""How an owner's file action (move_action, create_action, remove_action) is applied, once the
owner has confirmed its plan: under the vault's write lock, pending owner edits to the files
involved are snapshotted, the working tree is changed with an undo log, and one commit is made as
the owner with the trailer `Vaultwatch-Action: move|create|remove`. Any failure on the way undoes
what was done, so the vault is exactly as it was. Before the first file is touched the action's
intent is recorded (the write path's own record: each path's bytes before and after), so a
crash half-way through a move of a thousand notes is rolled back by the next start or the next
writer, AI or owner; every action first puts right what a dead writer left. No Textual here."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from app.services.actions import ActionError
from app.services.vault_files import file_bytes, refuse_links
from server.core.faults import crash_point, fault_after
from server.core.git_log import ACTION, commit_message
from server.core.git_run import GitError, human_identity
from server.core.gitrepo import ignored_paths
from server.core.state_files import state_dir
from server.notes.walk import spelled
from server.write.commits import commit_blobs, disk_blobs
from server.write.journal import Journal
from server.write.leases import Replacing, WriteRace
from server.write.store import Store
from server.write.store_errors import StoreError
from server.write.temp_files import _temp_name, _write_temp


class ActionTree:
    """Working-tree changes, each with its undo; `rollback` runs the undos newest first. The
    changes are announced first (`intend`: the store's intent record), so that a crash, which
    runs no undo, is rolled back by recovery instead."""

    def __init__(self, root: Path, store: Store) -> None:
        self.root = root
        self.store = store
        self.names: dict[str, str] = {}  # path -> its spelling on disk (see open_action)
        self.undo: list[Callable[[], None]] = []
        # the failure tests fail a step like a full disk would (as root, read-only files do not)
        self.fail_after = fault_after("action_after")
        self.steps = 0

    def intend(
        self,
        what: str,
        files: list[tuple[str, bytes | None, bytes | None]],
        between: dict[str, bytes] | None = None,
    ) -> None:
        """Record (path, bytes now, bytes after) for every file the action changes, and the
        bytes a file holds half-way (`between`), before any is touched."""
        self.store.record_intent(what, files, between)

    def done(self) -> None:
        self.store.drop_intent()

    def _step(self) -> None:
        if self.fail_after is not None and self.steps >= self.fail_after:
            raise OSError(errno.EIO, "injected failure (VAULTWATCH_FAULT)")
        self.steps += 1

    def move(self, old: str, new: str) -> None:
        self._step()
        src, dst = self.root / spelled(self.root, old), self.root / new
        made = _missing_parents(dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        self.undo.append(lambda: _rmdirs(made))
        os.link(src, dst)  # unlike rename, fails if `new` appeared since the preview
        self.undo.append(lambda: os.unlink(dst))
        crash_point("tree_link")  # both names hold the file
        os.unlink(src)
        self.undo.append(lambda: os.link(dst, src))
        crash_point("tree_step")

    def write(self, path: str, data: bytes, old: bytes | None) -> None:
        self._step()
        target = self.root / (path if old is None else spelled(self.root, path))
        if old is None:
            made = _missing_parents(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            self.undo.append(lambda: _rmdirs(made))
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            self.undo.append(lambda: os.unlink(target))
            crash_point("tree_link")  # the new file, still empty
        tmp = _temp_name(self.root, target)
        _write_temp(tmp, target, data)
        # a new note replaces the empty file made just above (an editor may have written
        # into it since); put back as that, which the undo above then removes
        self._replace(target, path, b"" if old is None else old, tmp, data)
        crash_point("tree_step")

    def remove(self, path: str, old: bytes) -> None:
        self._step()
        self._replace(self.root / spelled(self.root, path), path, old, None, None)
        crash_point("tree_step")

    def _replace(
        self, target: Path, rel: str, old: bytes, tmp: str | None, ours: bytes | None
    ) -> None:
        """Rename `tmp` over `target` (None: remove it) under the AI's write rule
        (`leases.Replacing`: a read lease from the check until after the rename, the bytes
        compared at the rename, the old copy looked at again after it), so that an editor
        saving into the note mid-move or mid-delete loses nothing: a save before the check
        refuses the action, one held by the lease or seen in the old copy after the rename is
        put back by the rollback (WriteRace.restore), never the previewed bytes over it. The
        undo puts `old` back only while the file is still ours (`ours`; None: removed), under
        a lease too (`Store._put_back`): an edit made into our copy since is newer, kept."""
        replacing = Replacing()
        back = old
        try:
            try:
                replacing.replace(target, rel, old, None, tmp)
            except BaseException:
                if tmp is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                raise

            def put_back() -> None:
                self.store._put_back(target, ours, back)  # `back` as it is at the rollback

            self.undo.append(put_back)
            replacing.confirm()
        except WriteRace as race:
            if race.restore is not None:
                back = race.restore  # what the editor saved into the old copy, not the preview
            raise
        finally:
            replacing.close()

    def rollback(self) -> None:
        for undo in reversed(self.undo):
            with contextlib.suppress(OSError):
                undo()
        self.undo.clear()
        self.store.drop_intent()


def _missing_parents(path: Path) -> list[Path]:
    out = []
    p = path.parent
    while not p.exists():
        out.append(p)
        p = p.parent
    return out


def _rmdirs(folders: list[Path]) -> None:
    for f in folders:  # deepest first
        with contextlib.suppress(OSError):
            f.rmdir()


@contextlib.contextmanager
def open_action(root: Path, involved: list[str]) -> Iterator[ActionTree]:
    """The write lock, a git state that allows a commit, whatever a dead writer left half-done
    put right (Store.begin: before anything is read as the owner's), and the owner's pending
    edits to the files involved committed first. Yields the tree to change, with each path's
    spelling on disk (and so in git) as it was before the action (`names`): the intent and the
    commit name what git has, an NFD name included."""
    store = Store(root, Journal(state_dir(root) / "events.jsonl", client="dashboard"))
    with store.locked():
        refuse_links(root, involved)  # again under the lock: a link made since the preview
        try:
            store.begin()
            names = {p: spelled(root, p) for p in involved}
            store.snapshot(sorted(d for d in names.values() if (root / d).is_file()))
        except StoreError as exc:
            raise ActionError(exc.for_owner) from None
        except GitError as exc:
            raise ActionError(str(exc)) from None
        except WriteRace as exc:  # saved into while its pending edit was being committed
            raise ActionError(f"nothing was done: {why_failed(exc)}; try again") from None
        tree = ActionTree(root, store)
        tree.names = names
        yield tree


def commit_action(tree: ActionTree, paths: list[str], subject: str, action: str) -> str:
    """One commit as the owner of exactly these paths as they are on disk now (the write
    path's private index: anything else the owner has staged stays out of it). A path git
    ignores and does not track is refused, as `git add` would."""
    root = tree.root
    ignored = ignored_paths(root, [p for p in paths if os.path.lexists(root / p)])
    if ignored:
        raise GitError(f"git ignores {', '.join(ignored)}; nothing was committed")
    message = commit_message(subject, {ACTION: action})
    entries = disk_blobs(root, paths)
    tree.store.intent_commits(entries)
    sha = commit_blobs(root, entries, message, human_identity(root))
    tree.done()
    return sha


def check_unchanged(root: Path, originals: dict[str, bytes]) -> None:
    for path, data in originals.items():
        if file_bytes(root, path) != data:
            raise ActionError(f"{path} changed since the preview; nothing was done. Look again.")


def why_failed(exc: BaseException) -> str:
    if isinstance(exc, WriteRace):
        return f"{exc.rel} {exc.reason or 'changed meanwhile'}"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
