"""The header's count of AI changes waiting for review, kept current without slowing the poll.

A few `stat` calls per poll say whether the branch or the review marks moved (a new AI commit,
the owner's revert, marks written by this dashboard, by another one on the same vault or by
`vaultwatch review --mark-reviewed`); only then is the count read again with
`review.summaries`, in a worker thread. No Textual here."""

from __future__ import annotations

import threading
from pathlib import Path

from app.services.feedback import FeedbackCount, count
from app.services.review import Review, summaries
from app.services.rewritten import NOTES_REF
from server.core.git_run import git
from server.write.feedback import FEEDBACK_REF

Stamp = tuple[object, ...]


class ReviewWatch:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.count: tuple[int, int] | None = None  # (AI commits, notes) not yet reviewed
        self.review: Review | None = None  # what the count was read from (the review screen's list)
        # the owner's feedback open and answered: an answer is a commit, so it moves with HEAD
        self.feedback: FeedbackCount | None = None
        self.counted: Stamp | None = None  # the state of the refs the count was read at
        self._dirs: tuple[Path, Path] | None = None
        self._lock = threading.Lock()

    def _git_dirs(self) -> tuple[Path, Path] | None:
        """The repo's own git dir (HEAD) and its common dir (refs), asked of git once."""
        if self._dirs is None:
            r = git(
                self.root,
                "rev-parse",
                "--path-format=absolute",
                "--git-dir",
                "--git-common-dir",
                check=False,
            )
            out = r.stdout.decode().split("\n")
            if r.returncode != 0 or len(out) < 2:
                return None
            self._dirs = (Path(out[0]), Path(out[1]))
        return self._dirs

    def stamp(self) -> Stamp:
        """What the count depends on, as file stamps: HEAD, the branch it names, packed refs,
        the notes ref. git replaces a ref file on every update (a new inode)."""
        dirs = self._git_dirs()
        if dirs is None:
            return ()
        gd, common = dirs
        try:
            head = (gd / "HEAD").read_bytes()
        except OSError:
            head = b""
        files = [common / "packed-refs", common / NOTES_REF, common / FEEDBACK_REF]
        if head.startswith(b"ref: "):
            files.append(common / head[5:].strip().decode("utf-8", "replace"))
        out: list[object] = [head]
        for f in files:
            try:
                st = f.stat()
                out.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def stale(self) -> bool:
        return self.stamp() != self.counted

    def recount(self) -> bool:
        """Read the count again if the refs moved; True when they had (the review screen
        follows even when the count stays: a new change to a note already listed)."""
        with self._lock:
            stamp = self.stamp()
            if stamp == self.counted:
                return False
            review = summaries(self.root)
            self.feedback = count(self.root)
            self.count = (review.unreviewed_commits, len(review.notes))
            self.review, self.counted = review, stamp
            return True

    def current(self) -> Review | None:
        """The review as last read, if the refs have not moved since (the review screen opens
        on it at once instead of reading it again)."""
        review, counted = self.review, self.counted
        return review if review is not None and counted == self.stamp() else None
