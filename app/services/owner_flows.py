"""The owner's actions (revert, move, create, delete) as plain steps, without Textual.

Each flow is the same three steps whoever drives it, the dashboard's screens or a shell
command: *preview* what will happen (a `Preview`: a title, the verb that confirms, lines to
read and the diff), ask the owner, then *apply* and get an `Outcome` that says what happened
in words and names the commit it made. Nothing here asks or shows anything itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from app.services.actions import ActionError
from app.services.cell_wrap import wrap_text
from app.services.history import Commit, FileChange, commit_changes
from app.services.move_action import MovePlan, plan_move
from app.services.remove_action import RemovePlan, plan_remove
from app.services.revert import (
    RevertConflict,
    abort_operation,
    offered,
    plan_revert,
    recover,
    revert,
)
from app.services.wording import plural
from server.notes.config import CONFIG_NAMES, Config, ConfigError, load_config
from server.notes.frontmatter import split_frontmatter
from server.notes.note import decode
from server.notes.paths import is_note

Tone = Literal["", "bold", "warning"]
MOVE_LIST_MOST = 20  # files a move's preview names one by one before "… and N more"
BACKLINKS_MOST = 200


@dataclass(frozen=True)
class Line:
    text: str
    tone: Tone = ""


@dataclass
class Preview:
    """What the owner reads before saying yes: `lines`, then the diff of `changes`."""

    title: str
    yes: str  # the verb on the confirming button
    lines: list[Line]
    changes: list[FileChange] = field(default_factory=list)


@dataclass
class Outcome:
    """What an applied action did. `sha` is the commit it made (None: nothing changed);
    `message` says it in words."""

    message: str
    sha: str | None = None
    severity: Literal["information", "warning", "error"] = "information"
    title: str = ""

    @property
    def ok(self) -> bool:
        return self.sha is not None


def revertable(c: Commit | None) -> bool:
    """What `r` offers: AI commits, and the owner's own dashboard actions (a revert, a move, a
    new note, a delete are undone like any commit)."""
    return c is not None and offered(c)


def why_not_revertable(c: Commit | None) -> str:
    if c is None:
        return "select a commit to revert: an AI commit, or your own move, create, delete or revert"
    return (
        f"{c.short} is your own edit: r reverts AI commits and your dashboard actions (move, "
        "create, delete, revert). Edit the note to change it back."
    )


# -- revert ---------------------------------------------------------------------------------------


@dataclass
class Blocker:
    """A later commit in the way of a revert: who made it, when, and what it changed there."""

    commit: Commit
    ticked: bool  # reverted too unless the owner unticks it; the owner's own edits start unticked
    changes: list[FileChange]

    @property
    def label(self) -> str:
        c = self.commit
        who = f"AI · {c.client or '?'} · {c.tool}" if c.is_ai else f"you ({c.author})"
        return f"{c.short}  {c.subject}  —  {who}, {c.time.astimezone():%Y-%m-%d %H:%M}"


@dataclass
class Blocked:
    """The revert does not apply as it stands; the vault is unchanged. The owner ticks which
    later commits to revert with it (`targets` + the ticked blockers, in one revert)."""

    title: str
    lines: list[Line]
    targets: list[str]
    blockers: list[Blocker]


def revert_preview(root: Path, c: Commit) -> Preview | Blocked:
    """What reverting `c` will change, or what is in the way. Raises ActionError (with the
    reason: already reverted, nothing to undo, git busy) when there is nothing to confirm."""
    try:
        recover(root)  # a dead writer's half-write is no part of what the owner sees
        plan = plan_revert(root, [c.sha])
    except RevertConflict as exc:
        return _blocked(root, exc)
    by = f"{c.author} ({c.client})" if c.is_ai else c.author
    return Preview(
        f"Revert {c.short}?",
        "Revert",
        [
            Line(f"{c.short}  {c.subject}"),
            Line(f"by {by} at {c.time.astimezone():%Y-%m-%d %H:%M}"),
            Line(""),
            Line("The revert will change:"),
            Line(""),
        ],
        plan.changes(),
    )


def _blocked(root: Path, exc: RevertConflict) -> Blocked:
    names = ", ".join(t.short for t in exc.targets)
    lines = [Line(f"Reverting {names} does not apply as the notes are now; nothing was changed.")]
    if exc.uncommitted:
        lines.append(
            Line(
                f"Your unsaved edits to {', '.join(exc.uncommitted)} touch the same lines: "
                "save or undo them in the note first.",
                "warning",
            )
        )
    if exc.blockers:
        lines += [
            Line(""),
            Line(
                "Later commits changed the same lines. Tick the ones to revert with it "
                "(space); yours are never reverted unless you tick them:"
            ),
        ]
    elif not exc.uncommitted:
        lines.append(Line(f"{', '.join(exc.paths)} changed since in a way a revert cannot undo."))
    blockers = []
    for b in exc.blockers:
        changes = [ch for ch in commit_changes(root, b.sha) if ch.path in exc.paths]
        blockers.append(Blocker(b, offered(b), changes))
    return Blocked(
        "Revert blocked — vault unchanged", lines, [t.sha for t in exc.targets], blockers
    )


def why_ticks_fail(root: Path, shas: list[str]) -> str:
    """Why reverting these commits (the targets and the ticked blockers) cannot apply, or "" when
    it can: planned only, nothing written. The blockers dialog offered "Revert ticked" for a
    choice bound to fail (the owner's unticked commit between the AI's)."""
    try:
        plan_revert(root, shas)
    except RevertConflict as exc:
        left = [b for b in exc.blockers if b.sha not in shas]
        if left:
            who = ", ".join(f"{b.short} ({'AI' if b.is_ai else 'yours'})" for b in left)
            return f"as ticked the revert cannot apply: {who} changed the same lines since. Tick it too, or cancel."
        return f"as ticked the revert cannot apply: {exc}"
    except ActionError as exc:
        return f"as ticked the revert is refused: {exc}"
    return ""


def revert_commits(root: Path, shas: list[str]) -> Outcome:
    """Revert these commits as one owner commit; anything in the way leaves the vault as it
    was and says why."""
    try:
        sha = revert(root, shas)
    except RevertConflict as exc:
        return Outcome(str(exc), severity="error", title="revert blocked — vault unchanged")
    except ActionError as exc:
        return Outcome(str(exc), severity="error", title="revert refused")
    n = len(shas)
    return Outcome(f"reverted {n} commit{'s' if n != 1 else ''} as {sha[:8]}", sha)


def abort_preview(what: str, command: str) -> Preview:
    return Preview(
        f"Abort {what}?",
        "Abort",
        [
            Line(f"git is in the middle of {what}: every AI write is refused until it ends."),
            Line(""),
            Line(
                f"git {command} --abort puts HEAD, the index and the files back as they were "
                f"before {what} started. Finish it in a terminal instead if you want to keep it."
            ),
        ],
    )


def abort_git(root: Path) -> Outcome:
    try:
        what = abort_operation(root)
    except ActionError as exc:
        return Outcome(str(exc), severity="error", title="abort failed")
    return Outcome(f"aborted {what}; AI writes can go ahead")


def named_by_config(root: Path) -> dict[str, str]:
    """The files the vault's config names by path (the same list the server protects), each
    with what it is: moving one breaks the vault's setup."""
    try:
        cfg = load_config(root)
    except ConfigError:
        cfg = Config()  # a broken config: still warn about the default names
    what = {cfg.rules: "the rules file", cfg.source or CONFIG_NAMES[0]: "the vault's config"}
    if cfg.tags.vocabulary:
        what[cfg.tags.vocabulary] = "the tag vocabulary"
    return {p: what.get(p, "a file the config protects") for p in cfg.protected_paths()}


# -- move and delete ------------------------------------------------------------------------------


def move_preview(root: Path, source: str, dest: str) -> tuple[MovePlan, Preview]:
    """Raises ActionError (with the reason) when the move is not possible.

    The move is said once, then the notes whose links change by name, then their diffs: the
    preview said the move three times (its title, a line, a RENAMED header) and pushed the
    note whose link changes below the fold of an 80x24 dialog (audit turn 3, #21)."""
    recover(root)  # a dead writer's half-write is no part of what the owner moves
    plan = plan_move(root, source, dest)
    moves = list(plan.moves.items())
    named = named_by_config(root)
    lines = [Line(f"{old}  →  {new}", "bold") for old, new in moves[:MOVE_LIST_MOST]]
    if len(moves) > MOVE_LIST_MOST:
        lines.append(Line(f"… and {len(moves) - MOVE_LIST_MOST} more files"))
    lines += [Line(f"⚠ {p}", "warning") for p in plan.problems]
    lines += [
        Line(f"⚠ {old} is {named[old]}: moved, the server no longer finds it", "warning")
        for old, _ in moves
        if old in named
    ]
    edited = list(plan.edits)
    if edited:
        lines += [Line(""), Line(f"Links change in {plural(len(edited), 'note')}:")]
        lines += [Line(f"  {p}") for p in edited[:MOVE_LIST_MOST]]
        if len(edited) > MOVE_LIST_MOST:
            lines.append(Line(f"  … and {len(edited) - MOVE_LIST_MOST} more"))
        lines.append(Line(""))
    else:
        lines += [Line(""), Line("No links to rewrite.")]
    # each edited note's diff under its path after the move (a RENAMED header said the move
    # again); the moves themselves are the lines above
    changes = [FileChange(p, "M", None, before, after) for p, (before, after) in plan.edits.items()]
    return plan, Preview(move_title(plan), "Move", lines, changes)


def move_title(plan: MovePlan) -> str:
    """The question, without the paths the body names."""
    if len(plan.moves) == 1:
        (old,) = plan.moves
        return f"Move {'this note' if is_note(old, plan.extensions) else 'this file'}?"
    return f"Move {plural(len(plan.moves), 'file')}?"


NOTE_START_ROWS = 5  # rows of the note the delete confirm shows
NOTE_START_WIDTH = 56  # ... wrapped at this many cells: inside an 80-column dialog's body


def note_start(
    data: bytes, rows: int = NOTE_START_ROWS, width: int = NOTE_START_WIDTH
) -> list[str]:
    """The first `rows` rows of a note's text after its frontmatter, wrapped by cells with the
    shared line breaking (`cell_wrap`), blank lines run together, and `…` when more follows;
    a file that is not text says what it is instead."""
    if b"\0" in data[:8192]:
        return [f"(a binary file, {plural(len(data), 'byte')})"]
    text = decode(data)[0]
    _, _, body = split_frontmatter(text)
    out: list[str] = []
    more = False
    for line in text[body:].strip("\n").splitlines():
        if not line.strip():
            if out and out[-1]:
                out.append("")
            continue
        for row in wrap_text(line.rstrip(), width):
            if len(out) >= rows:
                more = True
                break
            out.append(row)
        if more:
            break
    while out and not out[-1]:
        out.pop()
    if not out:
        return ["(empty)"]
    if more:
        out[-1] = out[-1] + " …"
    return out


def delete_preview(root: Path, path: str) -> tuple[RemovePlan, Preview]:
    """Raises ActionError (with the reason) when the file cannot be deleted. The confirm shows
    the start of what goes (it listed only the links that break: audit turn 3, #30)."""
    recover(root)  # nor of what the owner deletes
    plan = plan_remove(root, path)
    data = plan.original
    size = plural(data.count(b"\n") + int(bool(data) and not data.endswith(b"\n")), "line")
    # the title names the file; the body what is in it, then what breaks, on one 80x24 screen
    lines = [Line(f"{size}; it begins:")]
    lines += [Line(f"  │ {row}" if row else "  │") for row in note_start(plan.original)]
    lines.append(Line(""))
    if plan.backlinks:
        lines.append(Line(f"{plural(len(plan.backlinks), 'link')} to it will break:", "warning"))
        lines += [Line(f"  {src}:{n}  {text}") for src, n, text in plan.backlinks[:BACKLINKS_MOST]]
    else:
        lines.append(Line("No note links to it."))
    lines += [Line(""), Line("git rm, one commit; r on it in the timeline brings it back.")]
    return plan, Preview(f"Delete {path}?", "Delete", lines)


P = TypeVar("P")


def apply_plan(root: Path, apply: Callable[[Path, P], str], plan: P, done: str) -> Outcome:
    """Run a planned move, create or delete; `done` says what happened ("moved", ...)."""
    try:
        sha = apply(root, plan)
    except ActionError as exc:
        return Outcome(str(exc), severity="error")
    return Outcome(f"{done} ({sha[:8]})", sha)
