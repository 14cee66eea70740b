"""The MCP prompts (Claude Code shows them as slash commands): `start` opens a conversation on
the vault, `remember` turns a conversation's conclusions into notes. Their words are the
vault's to change: `prompts: {start: prompts/start.md}` in the config names a note whose text
replaces the default below (read as read_doc would read it: inside the vault, never private).
No MCP here: `protocol.prompts` registers them.
"""

from __future__ import annotations

import copy
import logging

from server.core.budget import escaped_len, fit_result, fit_text, json_len, paths_named
from server.services.context import build_context
from server.vault import Vault, VaultError

log = logging.getLogger("vaultwatch.prompts")

DEFAULTS = {
    "start": """\
You are starting a conversation with the owner's notes vault (vaultwatch), your memory across \
conversations. Below is what get_context returns now: the owner's rules for you (follow them), \
the notes that matter most and the tags in use. Open feedback from the owner, if any, comes \
first: answer it before anything else (fix the note, or say why not), naming the feedback in \
your write. Then ask what the owner wants to work on; look things up with search_text, recall \
and read_doc before answering from memory.""",
    "remember": """\
Distil this conversation into the vault: what did we conclude that is worth keeping?

For each conclusion, keep it only if all three hold:
1. Would it be asked again? (a decision, a fact about the owner's work, a lesson, a how-to)
2. Can it not be found in five seconds elsewhere (the code, the docs, a web search)?
3. Will it still hold in six months?

Then, for each one you keep:
- Search first: search_text for its words and names, recall for its meaning (any language). \
If a note already says it, add to that note (append_section, edit_text) instead of writing a \
new one. If yours replaces what a note says, write yours, then call supersede_doc on the old \
note (it is kept, marked replaced, never deleted).
- Write it as a conclusion, in a sentence or a short list, with why and the date; use the vault's \
doc types and existing tags (list_tags). One note per subject.
- create_doc refuses a note the vault already holds and names the close ones: read them; only \
if yours says something else, create it again with distinct_from.

Finish with a short list of what you wrote (paths), and what you chose not to keep and why.""",
}
DESCRIPTIONS = {
    "start": "Start a conversation on the vault: its rules, what matters now, open feedback",
    "remember": "Save this conversation's conclusions to the vault: only what will be asked "
    "again, cannot be found elsewhere and will still hold; search first, then write",
}
PROMPT_CHARS = 20_000  # of a vault's prompt note: a prompt is instructions, not a library
PROMPT_ENVELOPE = 300  # the prompt result's JSON around its text (messages, role, type)


def prompt_text(vault: Vault, name: str) -> str:
    """The vault's text for prompt `name` (the note `prompts.<name>` names), else the default.
    A note that cannot be read as read_doc would (private since, gone, not text) is the
    default, and the server's log says why."""
    rel = vault.config.prompts.get(name)
    if rel is None:
        return DEFAULTS[name]
    try:
        vp = vault.resolve(rel)
        text = vp.disk.read_text(encoding="utf-8", errors="replace").strip()
    except (VaultError, OSError) as exc:
        log.warning("prompt %s: %s cannot be read (%s); the default text is used", name, rel, exc)
        return DEFAULTS[name]
    return fit_text(text, PROMPT_CHARS) if text else DEFAULTS[name]


def open_feedback(vault: Vault) -> str | None:
    """PLUG-IN POINT for owner feedback (issue 31, branch `feedback`): the owner's open
    feedback as text for the `start` prompt, or None when there is none. This branch has no
    feedback store yet, so there is none; the integrator wires the feedback service's reader
    here (private rules apply to it as to notes). If get_context itself already shows the open
    feedback first, this may stay None: `start` includes get_context's text below."""
    del vault
    return None


def render_start(vault: Vault) -> tuple[str, list[str]]:
    """`start`: its instructions, the owner's open feedback, then get_context's text exactly
    as the tool would return it now (build_context through the tools' last step, as
    context.context_text does); and the notes that text names, for the journal."""
    limit = vault.config.limits.result_chars
    parts = [fit_text(prompt_text(vault, "start"), limit // 5)]
    feedback = open_feedback(vault)
    if feedback:
        parts.append(fit_text(f"Open feedback from the owner:\n{feedback}", limit // 5))
    # the whole prompt, as the client receives it (JSON-escaped), stays under the budget: the
    # context gets what the instructions leave, measured escaped (its quotes count twice)
    target = limit - json_len("\n\n".join(parts)) - PROMPT_ENVELOPE
    full, _ = build_context(vault)
    room = target
    data, text = fit_result(copy.deepcopy(full), room)
    for _ in range(8):  # bounded: each pass takes off what the last one was over
        over = escaped_len(text) - target
        if over <= 0:
            break
        room -= over + 50
        data, text = fit_result(copy.deepcopy(full), max(room, 200))
    if escaped_len(text) > target:  # a budget too small for any context: say where it is
        data, text = {}, "(too long for this prompt: call get_context)"
    parts.append(f"get_context:\n{text}")
    return "\n\n".join(parts), paths_named(data)


def render_remember(vault: Vault, focus: str | None = None) -> str:
    """`remember`: its instructions, and what to focus on when the owner said."""
    text = prompt_text(vault, "remember")
    if focus and focus.strip():
        text += f"\n\nThe owner asks you to focus on: {fit_text(focus.strip(), 2_000)}"
    return text
