"""The owner's feedback as the AI may see it: open items on notes the AI may read, for
get_context (and the `start` prompt), and the check of a write's `answers`.

Private rules apply as to notes: an item is shown, or may be answered, only while its note
exists and its path passes the vault's path policy (`Vault.resolve`, the one rule every tool
applies). An
item on a note that is private now is as if it did not exist: never shown, and refused in
`answers` with the same words as an unknown id.
"""

from __future__ import annotations

import json
from typing import Any

from server.core.budget import fit_text
from server.core.errors import VaultwatchError
from server.core.git_run import GitError
from server.vault import Vault
from server.write.feedback import CLOSED, OPEN, Feedback, read_all

SUMMARY_CHARS = 80  # the text of an item summarised to fit the context budget
MAX_ANSWERS = 20  # ids one write may answer


def _visible(vault: Vault, item: Feedback) -> bool:
    """The AI may see an item while its note exists and passes the path policy. A note gone
    from where git last saw it (moved in the file manager, not yet committed) might be private
    now: hidden until it is found again (fail closed)."""
    try:
        vault.resolve(item.path, must_exist=True)
    except VaultwatchError:
        return False
    return True


def open_feedback(vault: Vault) -> list[dict[str, Any]]:
    """The open items the AI may see, newest first, each with its note, the lines it is about
    (as the owner saw them) and the text: what get_context and the `start` prompt show."""
    items = [i for i in read_all(vault.root) if i.status == OPEN and _visible(vault, i)]
    return [_shown(i) for i in reversed(items)]


def _shown(item: Feedback) -> dict[str, Any]:
    out: dict[str, Any] = {"id": item.id, "path": item.path}
    if item.lines:
        out["lines"] = item.lines
    if item.quote:
        out["about"] = item.quote
    if item.commit:
        out["commit"] = item.commit[:12]
    out["text"] = item.text
    out["created"] = item.created
    return out


HOW_TO_ANSWER = (
    "The owner's comments on your notes, newest first. Fix what each asks (or explain in the "
    "note), and name its id in the write's answers, e.g. answers: ['fb-1a2b3c']."
)


def feedback_block(vault: Vault, room: int) -> dict[str, Any] | None:
    """get_context's first block: the open feedback in at most `room` characters (as JSON).
    When it does not fit, the oldest items are summarised first (their text cut to a line, the
    lines they are about left out), then left out with a count."""
    try:
        items = open_feedback(vault)
    except GitError as exc:  # a broken feedback ref: said, and the rest of the context stands
        return {
            "title": "Open feedback from the owner",
            "kind": "feedback",
            "items": [],
            "note": fit_text(f"the owner's feedback could not be read: {exc}", 300),
        }
    if not items:
        return None
    block: dict[str, Any] = {
        "title": "Open feedback from the owner",
        "kind": "feedback",
        "how": HOW_TO_ANSWER,
        "items": items,
    }

    def size() -> int:
        return len(json.dumps(block, ensure_ascii=False))

    def summarise(item: dict[str, Any]) -> None:
        item.pop("about", None)
        item["text"] = fit_text(item["text"], SUMMARY_CHARS + 2)
        item["summarised"] = True

    for item in reversed(items[1:]):  # oldest first; the newest is kept whole while it can be
        if size() <= room:
            break
        summarise(item)
    while size() > room and len(items) > 1:
        items.pop()
        block["more"] = block.get("more", 0) + 1
    if size() > room:  # the newest alone is over the room
        summarise(items[0])
        if size() > room:
            items[0]["text"] = fit_text(items[0]["text"], max(40, room // 4))
    if block.get("more"):
        block["how"] += f" {block['more']} older open item(s) left out for room."
    return block


class AnswersRefused(VaultwatchError):
    code = "feedback_answers"


def check_answers(vault: Vault, ids: list[str]) -> list[str]:
    """The ids a write answers, checked: each must be an item the AI may see that the owner has
    not closed. AnswersRefused (nothing written) names each bad id and what to do."""
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    if len(wanted) > MAX_ANSWERS:
        raise AnswersRefused(
            f"answers names {len(wanted)} feedback ids; one write answers at most {MAX_ANSWERS}",
            "split the write, or name only the feedback this write settles",
        )
    # only the items named are judged by the path policy (it lists their folders): this runs
    # under the write lock
    known = {i.id: i for i in read_all(vault.root) if i.id in wanted and _visible(vault, i)}
    unknown = [i for i in wanted if i not in known]
    closed = [i for i in wanted if i in known and known[i].status == CLOSED]
    problems = []
    if unknown:
        problems.append(
            f"no open feedback {', '.join(fit_text(i, 30) for i in unknown)} (unknown id)"
        )
    if closed:
        problems.append(f"the owner closed feedback {', '.join(closed)}: it needs no answer")
    if problems:
        raise AnswersRefused(
            "; ".join(problems),
            "call get_context for the open feedback ids, and leave answers out or name only those",
        )
    return wanted
