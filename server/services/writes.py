"""A write: planned against the current files (`op_plans` over a `write_plan.Plan`), checked
(`write_checks`), then committed, and the result the model sees.

Every operation is planned first (in memory, under the write lock) into the new bytes of each
file it touches; the checks run on that plan; only a plan that passes every check is written.
A batch plans all its operations in order over the same in-memory files, reports every error
at once, and commits once. Nothing here knows MCP.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic

from server.core.git_log import ANSWERS
from server.core.gitrepo import filtered_paths, ignored_paths
from server.core.safetext import CONTROLS_HINT, added_controls, controls_message
from server.core.tool_names import ToolName
from server.notes.note import content_hash, decode, parse_doc
from server.services.dedupe import SHOWN
from server.services.feedback import AnswersRefused, check_answers
from server.services.op_plans import attempted, plan_op
from server.services.write_checks import _diff, _message_secret, check, vocab_write
from server.services.write_plan import Conflict, Outcome, Plan, Rejected
from server.vault import Vault
from server.write import store_errors
from server.write.commits import git_moment
from server.write.file_write import FileWrite
from server.write.journal import cap_diff
from server.write.leases import WriteRace
from server.write.store import Store
from server.write.store_errors import GitBusy, StoreError
from server.write.write_ops import (
    WRITE_OPS,
    WriteOp,
)

log = logging.getLogger("vaultwatch.writes")

DIFF_IN_RESULT = 1_500


# ------------------------------------------------------------------------------------------------
# plan (op_plans), check (write_checks), commit, and the result the model sees


@dataclass
class WriteResult:
    commit: str | None
    outcomes: list[Outcome]
    paths: list[str]
    warnings: dict[str, list[str]]
    hashes: dict[str, str]
    diff: str
    # problems after the commit landed (an index that could not be updated): the write stands
    after_commit: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)  # feedback ids the commit names


REPLANS = 5


def _checked_args(name: str, args: dict[str, Any], n: int) -> WriteOp:
    """Operation `n`'s arguments, checked against its model: a batch's operations get the same
    checking as the tools themselves (the tools' parameters are the same models' fields)."""
    model = WRITE_OPS.get(name)
    if model is None:
        raise Rejected(
            "unknown_tool",
            f"operation {n}: unknown tool {name!r}",
            f"use one of {', '.join(WRITE_OPS)}",
            [],
        )
    try:
        return model.model_validate(args)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise Rejected(
            "bad_arguments",
            f"operation {n} ({name}) has bad arguments: {problems}",
            "check the argument names and types against the tool",
            [],
        ) from exc


def apply(
    vault: Vault,
    store: Store,
    tool: str,
    client: str,
    ops: list[tuple[str, dict[str, Any]]],
    message: str | None = None,
    answers: list[str] | None = None,
) -> WriteResult:
    """Plan, check and commit `ops` as one commit. Raises Rejected (all errors), Conflict,
    StoreError; returns with commit None when nothing would change (a no-op). `answers`: ids
    of the owner's open feedback the commit names (`Vaultwatch-Answers`), checked first.

    If the owner changes a file between the plan and the write, a plan that did not pin the
    file's content (no hash, no replace_doc) is simply made again on the new text: appending
    to the end of a section means the section as it is now. A pinned one is a conflict.
    """
    pinned = _pinned(ops)
    # Another git tool on the vault (the Obsidian Git plugin's sync: add, commit, rebase or
    # merge) is waited for, up to this, never written through: a commit made mid-rebase lands
    # on a branch the rebase resets (`git rebase --abort` drops it).
    deadline = time.monotonic() + store_errors.GIT_WAIT_S
    try:
        with store.locked():
            # git allows a commit (waited for); a writer that died mid-write is undone first
            store.begin(deadline)
            answered = _checked_answers(vault, answers or [])
            attempt = 0
            while True:
                moment = git_moment(vault.root)
                try:
                    return _apply_once(vault, store, tool, client, ops, message, answered)
                except GitBusy:
                    # git took its index or began an operation after the check: nothing was
                    # written; wait for it as above, then plan again on what it left
                    if time.monotonic() >= deadline:
                        raise
                    store.check_repo(deadline)
                except Rejected:
                    # planned while a rebase or merge begun after the check rewrote the notes
                    # (a note missing for a moment of its checkout): what the plan read is not
                    # the vault; waited for, then planned again on what it left
                    if git_moment(vault.root) == moment or time.monotonic() >= deadline:
                        raise
                    store.check_repo(deadline)
                except WriteRace as race:
                    attempt += 1
                    if pinned or attempt == REPLANS:
                        raise Conflict(
                            race.rel,
                            content_hash(race.expected)
                            if race.expected is not None
                            else "(no file)",
                            content_hash(race.actual) if race.actual is not None else "(deleted)",
                            race.reason,
                        ) from race
    except Rejected as exc:
        exc.finish()  # the lock is released: other writers no longer wait for the hints
        raise
    raise AssertionError("unreachable")


def _pinned(ops: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether the write is pinned to the text it was planned on (replace_doc, a hash given):
    a change of the note meanwhile is a conflict, never planned again or merged with."""
    return any(name == ToolName.REPLACE_DOC or args.get("hash") for name, args in ops)


def _apply_once(
    vault: Vault,
    store: Store,
    tool: str,
    client: str,
    ops: list[tuple[str, dict[str, Any]]],
    message: str | None,
    answers: list[str],
) -> WriteResult:
    plan = Plan(vault)
    outcomes: list[Outcome] = []
    errors: list[Rejected] = []
    for i, (name, args) in enumerate(ops):
        plan.op = i + 1
        try:
            outcomes.append(plan_op(plan, _checked_args(name, args, i + 1)))
        except Rejected as exc:
            if not exc.paths:  # a rule about the arguments (a tag, a type): name the note anyway
                exc.paths = [p for p, nums in plan.touched.items() if plan.op in nums]
            exc.diff = exc.diff or cap_diff(attempted(name, args))
            if len(ops) > 1:
                exc.message = f"operation {i + 1} ({name}): {exc.message}"
            errors.append(exc)
    # Check the files even when an operation failed, so a batch reports every problem.
    writes, warnings, rejected = check(plan)
    for w in writes:
        w.pinned = _pinned(ops)  # else the store may merge an owner's save met at the rename
    if len(ops) > 1:
        for r in rejected:
            nums = sorted({n for path in r.paths for n in plan.touched.get(path, [])})
            label = "operation" + ("s " if len(nums) > 1 else " ") + ", ".join(map(str, nums))
            r.message = f"{label}: {r.message}"
    for r in rejected:  # the owner sees what the AI tried for every refusal, not only some
        r.diff = r.diff or cap_diff(
            "".join(_diff(plan.files[p]) for p in r.paths if p in plan.files)
        )
    if errors or rejected:
        raise _merge(errors + rejected)
    vw = vocab_write(plan)
    if vw is not None:
        vw.pinned = True  # the vocabulary is checked whole: never merged with an owner's save
        writes.append(vw)
    _refuse_ignored(vault, writes)
    _refuse_filtered(vault, writes)
    if not writes:
        res = WriteResult(None, outcomes, [o.path for o in outcomes], warnings, _hashes(plan), "")
        res.answered = answers  # named, but no commit carries them: the result says so
        return res
    if len(ops) == 1:
        subject = outcomes[0].subject
    else:
        notes = len({w.rel for w in writes})
        subject = (
            message.strip().splitlines()[0]
            if message and message.strip()
            else (f"batch: {len(ops)} operations on {notes} note{'s' if notes != 1 else ''}")
        )
    leaked = _message_secret(plan, subject)
    if leaked is not None:
        raise leaked
    if codes := added_controls("", message or ""):
        raise Rejected(
            "control_chars",
            controls_message("message", codes),
            CONTROLS_HINT,
            sorted(plan.touched),
        )
    sha = store.commit(
        writes,
        subject=subject,
        tool=tool,
        client=client,
        config=plan.config,
        trailers=[(ANSWERS, a) for a in answers],
    )
    # The commit exists: from here on nothing may turn this into a failure (a retry would
    # write twice). The indexes are caches that catch up by themselves.
    res = WriteResult(sha, outcomes, [w.rel for w in writes], warnings, _hashes(plan, writes), "")
    res.answered = answers

    def diff() -> None:
        res.diff = "".join(_diff(f) for f in plan.files.values() if f.text is not None)

    after_commit(res, "diff", diff)
    after_commit(res, "the search index", lambda: _reindex(vault, writes))
    return res


# a write that changed nothing made no commit, so it answered nothing
NOT_ANSWERED = "; so the feedback in answers stays open: make the change it asks for"


def _checked_answers(vault: Vault, answers: list[str]) -> list[str]:
    """The feedback ids a write answers, or Rejected (nothing written) naming the bad ones."""
    if not answers:
        return []
    try:
        return check_answers(vault, answers)
    except AnswersRefused as exc:
        raise Rejected(exc.code, exc.message, exc.hint, []) from exc


def after_commit(res: WriteResult, what: str, step: Callable[[], object]) -> None:
    """Run one piece of upkeep after a commit landed, best effort: a failure is logged and
    reported in the result (`after_commit`), never raised, since the write itself stands."""
    try:
        step()
    except Exception as exc:
        log.warning("after commit %s: updating %s failed", res.commit, what, exc_info=True)
        # The cause only, never the inner error's own words: those are written for a failed
        # call ("nothing was changed. Try again shortly"), and here the write stands
        # (adversarial pass 3, N17).
        cause = exc.__cause__ or exc
        detail = (
            cause.strerror
            if isinstance(cause, OSError) and cause.strerror
            else str(cause)[:120]
            if cause is not exc
            else type(exc).__name__
        )
        res.after_commit.append(
            f"the write is committed ({res.commit}), but updating {what} failed ({detail}); "
            "it catches up by itself. Do not repeat the write."
        )


def _refuse_ignored(vault: Vault, writes: list[FileWrite]) -> None:
    """A note git ignores is one the owner keeps out of history: committing it (as the AI's
    change, or as an owner snapshot before it) would put it there."""
    ignored = ignored_paths(vault.root, [w.disk for w in writes])
    if ignored:
        rels = [w.rel for w in writes if w.disk in ignored]
        raise Rejected(
            "git_ignored",
            f"{', '.join(rels)} is listed in .gitignore: the owner keeps it out of git, and the "
            "assistant does not write such notes",
            "leave it to the owner, or write to a note that is in git",
            rels,
        )


def _refuse_filtered(vault: Vault, writes: list[FileWrite]) -> None:
    """A note under a git filter (git-crypt, LFS) is stored as the filter makes it; our commits
    hold the bytes on disk, so committing it would put git-crypt's plaintext into history."""
    filtered = filtered_paths(vault.root, [w.disk for w in writes])
    if filtered:
        rels = [w.rel for w in writes if w.disk in filtered]
        names = ", ".join(sorted(set(filtered.values())))
        raise Rejected(
            "git_filtered",
            f"{', '.join(rels)} goes through the owner's git filter ({names}, e.g. git-crypt "
            "encryption): the assistant does not write such notes",
            "leave it to the owner, or write to another note",
            rels,
        )


def _hashes(plan: Plan, written: list[FileWrite] | None = None) -> dict[str, str]:
    """Each note's hash as the write leaves it: the planned text's, or, for a note the store
    merged an owner's save into (`late_saves`), the bytes it committed (the plan's was of a
    text the note never had: a replace_doc pinned to it was refused)."""
    hashes = {
        f.rel: content_hash(f.text.encode("utf-8"))
        for f in plan.files.values()
        if f.text is not None
    }
    for w in written or []:
        if w.new is not None and w.rel in hashes:
            hashes[w.rel] = content_hash(w.new)
    return hashes


def _merge(errors: list[Rejected]) -> Rejected:
    if len(errors) == 1:
        return errors[0]
    merged = Rejected(
        errors[0].code,
        f"{len(errors)} problems, nothing was written: " + " | ".join(e.message for e in errors),
        " | ".join(dict.fromkeys(e.hint for e in errors)),
        [p for e in errors for p in e.paths],
        cap_diff("".join(e.diff for e in errors)),
    )
    for e in errors:
        merged.later.update(e.later)
    return merged


def _reindex(vault: Vault, writes: list[FileWrite]) -> None:
    """Written means searchable: the doc index and the search index, before the tool returns."""
    for w in writes:
        if w.new is None:  # the server never deletes; only owner actions do
            continue
        path = vault.root / w.disk
        st = path.stat()
        doc = parse_doc(w.rel, w.new, disk=w.disk, mtime_ns=st.st_mtime_ns, full=False)
        if vault.policy.is_note_name(w.rel):
            vault.index.put(doc, st)
            vault.search.update(doc, decode(w.new)[0])


def result_for(res: WriteResult, limit: int = DIFF_IN_RESULT) -> dict[str, Any]:
    """The shape the model sees for one write."""
    o = res.outcomes[0]
    out: dict[str, Any] = {"path": o.path, "hash": o.hash or res.hashes.get(o.path)}
    if o.existing:
        out["created"] = False
        out["note"] = "a note with this title already exists in that folder; update it instead"
        return out
    if o.created is not None:
        out["created"] = True
    out["commit"] = res.commit
    if res.answered and res.commit:
        out["answered"] = res.answered
    if res.commit is None:
        out["noop"] = True
        out["note"] = "the note already had exactly this content; nothing was committed" + (
            NOT_ANSWERED if res.answered else ""
        )
    if res.warnings.get(o.path):
        out["warnings"] = res.warnings[o.path]
    if o.similar and res.commit is not None:
        out["similar"] = o.similar
    if res.after_commit:
        out["after_commit"] = res.after_commit
    if res.diff:
        out["diff"] = _diff_in_result(res.diff, limit)
    return out


def batch_result_for(res: WriteResult, limit: int = DIFF_IN_RESULT) -> dict[str, Any]:
    """The shape the model sees for a batch: the commit, each operation's note and hash."""
    results = []
    for o in res.outcomes:
        item = {"path": o.path, "hash": o.hash or res.hashes.get(o.path), "created": o.created}
        results.append({k: v for k, v in item.items() if v is not None})
    similar = sorted(
        {s["path"]: s for o in res.outcomes for s in o.similar}.values(), key=lambda s: -s["score"]
    )
    return {
        "commit": res.commit,
        "results": results,
        "answered": res.answered if res.commit and res.answered else None,
        "note": NOT_ANSWERED.lstrip("; ") if res.commit is None and res.answered else None,
        "similar": similar[:SHOWN] if similar and res.commit is not None else None,
        "noop": True if res.commit is None else None,
        "warnings": res.warnings or None,
        "diff": _diff_in_result(res.diff, limit) if res.diff else None,
    }


def _diff_in_result(diff: str, limit: int) -> str:
    return diff if len(diff) <= limit else diff[:limit] + "\n… (diff cut)"


__all__ = [
    "Conflict",
    "Rejected",
    "StoreError",
    "apply",
    "batch_result_for",
    "plan_op",
    "result_for",
]
