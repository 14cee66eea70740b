"""The write path: one writer at a time, the human's pending edits committed first, files written
atomically, one git commit as the AI, and a recorded intent so a crash mid-write is rolled back.

Order of a write (all under the vault's flock):
  1. refuse if git is busy or mid-merge/rebase, or HEAD is detached   (nothing touched yet)
  2. snapshot: commit the human's uncommitted edits to these paths as the human
  3. record intent.json: each path with its previous and new blob ids
  4. write each file to a temp file, fsync, rename over
  5. git commit exactly these paths as the AI, with the trailers
  6. remove intent.json
A failure in 4-5 restores the previous contents before returning. A crash leaves intent.json,
and `recover()` at the next start puts the files back unless the human changed them since.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .gitrepo import GitError, git, human_identity, identity_env, state_dir, write_lock
from .journal import Journal

NO_SIGN = ("-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null")


def _fault_point() -> int | None:
    """VAULTWATCH_FAULT=after_write:N kills the process after N files of a write (tests only:
    it is how the crash-recovery tests stop a server at an exact point inside a batch)."""
    spec = os.environ.get("VAULTWATCH_FAULT", "")
    if spec.startswith("after_write:"):
        with contextlib.suppress(ValueError):
            return int(spec.split(":", 1)[1])
    return None


class StoreError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class FileWrite:
    rel: str  # NFC path (the model's)
    disk: str  # path on disk, relative to the root
    old: bytes | None  # None: a new file
    new: bytes


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, rename over: a reader sees old or new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".vaultwatch-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


class Store:
    def __init__(self, root: Path, journal: Journal) -> None:
        self.root = root
        self.journal = journal
        self.intent_path = state_dir(root) / "intent.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with write_lock(self.root):
            yield

    # -- checks ---------------------------------------------------------------------------------

    def check_repo(self) -> None:
        g = self.root / ".git"
        if (g / "index.lock").exists():
            raise StoreError(
                "git_busy",
                "git is busy or crashed here (.git/index.lock exists); nothing was written. "
                "Tell the owner: if no git command is running, they can delete .git/index.lock.",
            )
        for marker, what in (("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"),
                             ("rebase-apply", "a rebase"), ("CHERRY_PICK_HEAD", "a cherry-pick"),
                             ("REVERT_HEAD", "a revert")):  # fmt: skip
            if (g / marker).exists():
                raise StoreError(
                    "git_in_progress",
                    f"the vault is in the middle of {what}; nothing was written. Tell the owner "
                    "to finish or abort it first.",
                )
        head = (g / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if not head.startswith("ref: "):
            raise StoreError(
                "detached_head",
                "the vault's git HEAD is detached (not on a branch); nothing was written. Tell "
                "the owner to check out a branch.",
            )

    # -- the write ------------------------------------------------------------------------------

    def commit(
        self, writes: list[FileWrite], *, subject: str, tool: str, client: str, config: Config
    ) -> str:
        """Write and commit (caller holds the lock and has run check_repo). Returns the sha."""
        paths = [w.disk for w in writes]
        self._snapshot(paths)
        intent = {
            "pid": os.getpid(),
            "tool": tool,
            "files": [
                {"path": w.disk, "old": blob_id(w.old) if w.old is not None else None,
                 "new": blob_id(w.new)} for w in writes
            ],
        }  # fmt: skip
        self._store_old_blobs(writes)
        atomic_write(self.intent_path, json.dumps(intent).encode())
        written: list[FileWrite] = []
        crash_after = _fault_point()
        try:
            for w in writes:
                atomic_write(self.root / w.disk, w.new)
                written.append(w)
                if crash_after is not None and len(written) >= crash_after:
                    os.kill(os.getpid(), signal.SIGKILL)  # fault injection for crash tests
            new_paths = [w.disk for w in writes if w.old is None]
            if new_paths:
                git(self.root, "add", "-f", "--", *new_paths)
            author = config.ai_author
            message = f"{subject}\n\nVaultwatch-Tool: {tool}\nVaultwatch-Client: {client}\n"
            git(self.root, *NO_SIGN, "commit", "-q", "--no-verify", "-F", "-", "--", *paths,
                env=identity_env(author.name, author.email), input=message.encode())  # fmt: skip
            sha = git(self.root, "rev-parse", "HEAD").stdout.decode().strip()
        except (OSError, GitError) as exc:
            self._undo(written)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.intent_path)
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise StoreError("write_failed", f"the write failed and was undone: {detail}") from exc
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.intent_path)
        return sha

    def _store_old_blobs(self, writes: list[FileWrite]) -> None:
        """Make sure git has every previous content (one call for all), so recovery can always
        restore it, even for a file git ignores."""
        olds = [w.disk for w in writes if w.old is not None]
        if olds:
            git(self.root, "hash-object", "-w", "--stdin-paths", input="\n".join(olds).encode())

    def _undo(self, written: list[FileWrite]) -> None:
        for w in reversed(written):
            target = self.root / w.disk
            if w.old is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                atomic_write(target, w.old)
        if written:
            git(self.root, "reset", "-q", "--", *[w.disk for w in written], check=False)

    def _snapshot(self, paths: list[str]) -> str | None:
        """Commit the human's uncommitted edits to `paths` as the human; None if there were none."""
        out = git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                  *paths).stdout.decode("utf-8", "replace")  # fmt: skip
        dirty = [entry[3:] for entry in out.split("\x00") if len(entry) > 3]
        if not dirty:
            return None
        git(self.root, "add", "-A", "--", *dirty)
        name, email = human_identity(self.root)
        subject = "snapshot: " + (dirty[0] if len(dirty) == 1 else f"{len(dirty)} files")
        git(self.root, *NO_SIGN, "commit", "-q", "--no-verify", "-F", "-", "--", *dirty,
            env=identity_env(name, email),
            input=f"{subject}\n\nVaultwatch-Action: snapshot\n".encode())  # fmt: skip
        sha = git(self.root, "rev-parse", "HEAD").stdout.decode().strip()
        self.journal.append(
            "commit", client="human", tool="snapshot", paths=dirty, sha=sha, chars=0
        )
        return sha

    # -- recovery -------------------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Roll back a write that a crash interrupted. Returns the paths put back."""
        if not self.intent_path.exists():
            return []
        with self.locked():
            try:
                intent = json.loads(self.intent_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                os.unlink(self.intent_path)
                return []
            restored, kept = [], []
            committed = all(self._head_blob(f["path"]) == f["new"] for f in intent["files"])
            if not committed:
                for f in intent["files"]:
                    target = self.root / f["path"]
                    current = target.read_bytes() if target.exists() else None
                    cur_id = blob_id(current) if current is not None else None
                    if cur_id == f["old"]:
                        continue  # never touched
                    if cur_id != f["new"]:
                        kept.append(f["path"])  # changed by someone since: leave it alone
                        continue
                    if f["old"] is None:
                        target.unlink()
                    else:
                        data = git(self.root, "cat-file", "blob", f["old"]).stdout
                        atomic_write(target, data)
                    restored.append(f["path"])
                git(self.root, "reset", "-q", "--", *[f["path"] for f in intent["files"]],
                    check=False)  # fmt: skip
            os.unlink(self.intent_path)
            if restored or kept or not committed:
                msg = (
                    f"an interrupted {intent.get('tool', 'write')} was rolled back"
                    + (f"; left as found (changed since): {', '.join(kept)}" if kept else "")
                    if not committed
                    else "an interrupted write had been committed; nothing to undo"
                )
                self.journal.append("recovered", paths=restored, kept=kept, message=msg,
                                    tool=intent.get("tool"))  # fmt: skip
            return restored

    def _head_blob(self, path: str) -> str | None:
        r = git(self.root, "rev-parse", "-q", "--verify", f"HEAD:{path}", check=False)
        return r.stdout.decode().strip() if r.returncode == 0 else None
