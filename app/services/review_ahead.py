"""The review screen's net diffs, read once: each kept by what it depends on (the note's commits,
the branch and the file on disk), the diffs of the notes beside the one shown read ahead, so
that `j`, `k` and `n` show them at once. Plain Python: the screen runs the reads in threads."""

from __future__ import annotations

from pathlib import Path

from app.services.net_diff import NetDiff, net_diffs
from app.services.review import NoteSummary

Key = tuple[object, ...]
KEPT = 8  # diffs kept, the oldest first out


class NetDiffs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._diffs: dict[Key, NetDiff] = {}
        self.loading: Key | None = None  # the diff being read (no second read)

    def key(self, note: NoteSummary, since: str, stamp: object) -> Key:
        """What a note's net diff depends on: its commits, the branch (`stamp`) and the file."""
        try:
            st = (self.root / note.path).stat()
            disk: object = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            disk = None
        shas = tuple(c.sha for c in note.commits)
        return (note.path, since, note.base, shas, disk, stamp)

    def get(self, key: Key) -> NetDiff | None:
        return self._diffs.get(key)

    def read(self, note: NoteSummary, key: Key) -> NetDiff:
        """Read one note's diff (in a thread); kept before `loading` drops, so a second ask
        finds it."""
        try:
            [diff] = net_diffs(self.root, [note])
            self._diffs[key] = diff
        finally:
            if self.loading == key:
                self.loading = None
        return diff

    def read_ahead(self, notes: list[NoteSummary], since: str, stamp: object) -> None:
        """The diffs of these notes, those not read yet (in a thread)."""
        for note in notes:
            key = self.key(note, since, stamp)
            if key not in self._diffs:
                self._diffs[key] = net_diffs(self.root, [note])[0]
        while len(self._diffs) > KEPT:  # oldest first out (dicts keep their order)
            self._diffs.pop(next(iter(self._diffs)))
