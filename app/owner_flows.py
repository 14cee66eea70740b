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

from server.config import CONFIG_NAMES, Config, ConfigError, load_config

from .actions import ActionError, RevertConflict, revert
from .file_actions import MovePlan, RemovePlan, plan_move, plan_remove
from .history import Commit, FileChange, commit_changes

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
    `message` says it in words; `then` is a further action the owner may confirm (a revert
    that needs later commits reverted too)."""

    message: str
    sha: str | None = None
    severity: Literal["information", "warning", "error"] = "information"
    title: str = ""
    then: tuple[Preview, list[str]] | None = None  # (what to ask, the commits to revert)

    @property
    def ok(self) -> bool:
        return self.sha is not None


def revertable(c: Commit | None) -> bool:
    """AI commits, and the owner's own file actions (a delete is undone like any commit)."""
    return c is not None and (c.is_ai or c.action in ("move", "create", "remove"))


# -- revert ---------------------------------------------------------------------------------------


def revert_preview(root: Path, c: Commit) -> Preview:
    return Preview(
        f"Revert {c.short}?",
        "Revert",
        [
            Line(f"{c.short}  {c.subject}"),
            Line(f"by {c.author} ({c.client}) at {c.time.astimezone():%Y-%m-%d %H:%M}"),
            Line(""),
            Line("This undoes:"),
            Line(""),
        ],
        commit_changes(root, c.sha),
    )


def revert_commits(root: Path, shas: list[str]) -> Outcome:
    """Revert these commits as one owner commit. A conflict leaves the vault unchanged and,
    when later commits are in the way, offers reverting them too (`then`)."""
    try:
        sha = revert(root, shas)
    except RevertConflict as exc:
        if not exc.blockers:
            return Outcome(
                "the revert conflicted and was undone; nothing changed", severity="error"
            )
        names = [Line(f"  {b.short}  {b.subject}") for b in exc.blockers]
        ask = Preview(
            "Revert conflicts — vault unchanged",
            "Revert all",
            [
                Line("Later commits changed the same lines:"),
                Line(""),
                *names,
                Line(""),
                Line("Revert them too, newest first, as one action?"),
            ],
        )
        again = [b.sha for b in exc.blockers] + [t.sha for t in exc.targets]
        return Outcome(str(exc), severity="warning", then=(ask, again))
    except ActionError as exc:
        return Outcome(str(exc), severity="error")
    except Exception as exc:  # a git state the owner must fix (merge in progress, ...)
        return Outcome(str(exc), severity="error", title="revert refused")
    return Outcome(f"reverted as {sha[:8]}", sha)


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
    """Raises ActionError (with the reason) when the move is not possible."""
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
    n = len(plan.edits)
    links = f"Links change in {n} note{'s' if n != 1 else ''}:" if n else "No links to rewrite."
    lines += [Line(""), Line(links), Line("")]
    return plan, Preview(plan.subject, "Move", lines, plan.changes())


def delete_preview(root: Path, path: str) -> tuple[RemovePlan, Preview]:
    """Raises ActionError (with the reason) when the file cannot be deleted."""
    plan = plan_remove(root, path)
    if plan.backlinks:
        lines = [Line(f"{len(plan.backlinks)} link(s) to it will break:", "warning"), Line("")]
        lines += [Line(f"  {src}:{n}  {text}") for src, n, text in plan.backlinks[:BACKLINKS_MOST]]
    else:
        lines = [Line("No note links to it.")]
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
