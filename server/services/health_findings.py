"""What health finds: each kind of finding with its title and what the owner can do about it
(`Finding`, with an id stable across runs), and the report of one check (`Report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

KINDS = (
    "problem",
    "broken_link",
    "orphan",
    "duplicate",
    "stale",
    "too_big",
    "superseded",
    "same_subject",
)
TITLES = {
    "problem": "Problems under the config",
    "broken_link": "Broken links",
    "orphan": "Orphans",
    "duplicate": "Near-duplicates",
    "stale": "Stale open items",
    "too_big": "Too big to read in one call",
    "superseded": "Superseded",
    "same_subject": "Same subject, newer",
}
# What the owner can do with each kind (the screen offers these keys; the CLI prints them).
ACTIONS = {
    "problem": ("open", "ignore"),
    "broken_link": ("open", "ignore"),
    "orphan": ("open", "move", "delete", "ignore"),
    "duplicate": ("open", "delete", "ignore"),
    "stale": ("open", "move", "ignore"),
    "too_big": ("open", "move", "ignore"),
    "superseded": ("open", "delete", "ignore"),
    "same_subject": ("open", "delete", "ignore"),
}
# problems a move or rename mends (the note is in another type's folder, or misnamed)
MOVE_FIXES = ("wrong_folder", "wrong_filename")


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    path: str  # the note the finding is about (a duplicate: the first of the pair; same
    # subject: the older)
    reason: str  # one line, for the owner
    other: str | None = None  # a duplicate's second note; same subject: the newer one
    link: str | None = None  # a broken link as written
    line: int | None = None  # where the link is (1-based)
    code: str | None = None  # a problem's code (missing_field, bad_date, ...)
    key: str | None = None  # what a problem is about (field, tag): part of its id
    score: float | None = None  # a duplicate's score
    days: int | None = None  # orphans and stale items: days since the note changed
    rank: float | None = None  # a duplicate's place in the list (higher first); not shown

    @property
    def id(self) -> str:
        """Stable across runs and edits elsewhere in the note: kind, paths, and the link or the
        problem's code (a link's line is left out: a line added above it must not un-ignore)."""
        if self.kind == "duplicate":
            a, b = sorted((self.path, self.other or ""))
            return f"duplicate:{a}|{b}"
        if self.kind == "same_subject":
            return f"same_subject:{self.path}|{self.other}"
        if self.kind == "broken_link":
            return f"broken_link:{self.path}:{self.link}"
        if self.kind == "problem":
            return f"problem:{self.path}:{self.code}:{self.key}"
        return f"{self.kind}:{self.path}"

    @property
    def paths(self) -> list[str]:
        return [self.path, self.other] if self.other else [self.path]

    @property
    def actions(self) -> tuple[str, ...]:
        if self.kind == "problem" and self.code in MOVE_FIXES:
            return ("open", "move", "ignore")  # what the finding itself says to do
        return ACTIONS[self.kind]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "path": self.path}
        for k in ("other", "link", "line", "code", "score", "days"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        out["reason"] = self.reason
        out["actions"] = list(self.actions)
        return out


@dataclass
class Report:
    notes: int  # visible notes checked
    findings: list[Finding]  # not ignored (all of them with include_ignored)
    ignored: list[Finding]  # the ignored ones found now
    warnings: list[str] = field(default_factory=list)  # config, ignore file, recall not ready
    duplicates_checked: bool = False
    duplicates_unlisted: int = 0  # pairs at or above the threshold beyond MAX_DUPLICATES
    seconds: float = 0.0

    def by_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def to_json(self) -> dict[str, Any]:
        ignored_ids = {f.id for f in self.ignored}
        return {
            "notes": self.notes,
            "problems": [
                {"path": f.path, "code": f.code, "message": f.reason}
                for f in self.by_kind("problem")
            ],
            "broken_links": [
                {"path": f.path, "link": f.link, "line": f.line, "reason": f.reason}
                for f in self.by_kind("broken_link")
            ],
            "orphans": [f.path for f in self.by_kind("orphan")],
            "duplicates": [
                {"a": f.path, "b": f.other, "score": f.score} for f in self.by_kind("duplicate")
            ],
            "duplicates_checked": self.duplicates_checked,
            "duplicates_not_listed": self.duplicates_unlisted,
            "stale": [f.path for f in self.by_kind("stale")],
            "too_big": [f.path for f in self.by_kind("too_big")],
            "superseded": [f.path for f in self.by_kind("superseded")],
            "same_subject": [
                {"older": f.path, "newer": f.other, "score": f.score}
                for f in self.by_kind("same_subject")
            ],
            "findings": [{**f.to_json(), "ignored": f.id in ignored_ids} for f in self.findings],
            "ignored": len(self.ignored),
            "warnings": self.warnings,
        }
