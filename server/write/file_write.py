"""One note's write as the write path carries it: the bytes planned on and the bytes to write,
and whether an owner's save met on the way may be merged with it (issue 27)."""

from __future__ import annotations

from dataclasses import dataclass

from server.write.leases import Stamp
from server.write.merge3 import adds_lines_only


@dataclass
class FileWrite:
    rel: str  # NFC path (the model's)
    disk: str  # path on disk, relative to the root
    old: bytes | None  # None: a new file
    new: bytes | None  # None: the file is deleted (owner actions only, e.g. undoing a create)
    stamp: Stamp | None = None  # of the file the plan read (None: no file, or not known)
    # pinned to the bytes it was planned on (replace_doc, a hash given): an owner's save met
    # at the rename is a conflict, never merged with it
    pinned: bool = False


def mergeable(w: FileWrite) -> bool:
    """Whether an owner's save met at the rename may be merged with this write rather than
    the write planned again: not pinned, and the write only adds lines (`adds_lines_only`),
    so the merge holds the owner's text and lines that were checked when planned."""
    return (
        not w.pinned and w.old is not None and w.new is not None and adds_lines_only(w.old, w.new)
    )
