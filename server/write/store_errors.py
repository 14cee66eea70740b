"""What the write path refuses or fails with (`StoreError`, `GitBusy` when another git is at
work), in words for the model and for the owner, and how long an AI write waits for git."""

from __future__ import annotations

from server.core.errors import VaultwatchError
from server.core.git_index import index_busy_message


class StoreError(VaultwatchError):
    """The write path refused or failed (git busy, mid-merge, the write undone). `message` is
    written for the model; `for_owner` says the same to the owner, whose dashboard and shell
    commands go through this path too (the model is told to "tell the owner")."""

    def __init__(self, code: str, message: str, hint: str = "", owner: str = "") -> None:
        super().__init__(code, message, hint)
        self.for_owner = owner or message


class GitBusy(StoreError):
    """Another git command holds the index, or git is in the middle of a rebase, merge,
    cherry-pick or revert (the Obsidian Git plugin's sync, the owner at a terminal): nothing
    was written. The AI's write path waits for it to end (within the call's budget) and
    plans again; the dashboard's actions report it."""


# How long an AI write waits for another git's operation (a rebase, a merge, a held index) to
# end before it refuses: an Obsidian Git sync rebases in well under a second, and MCP clients
# give a call a minute or more.
GIT_WAIT_S = 20.0
_GIT_POLL_S = 0.02


def _busy_in_progress(command: str, what: str, waited: float) -> GitBusy:
    return GitBusy(
        "git_in_progress",
        f"the owner's git is in the middle of {what} (another git tool on the vault, e.g. the "
        f"Obsidian Git plugin's sync); waited {waited:.0f} s for it to end; nothing was written. "
        "Call again in a minute; if it keeps saying this, tell the owner to finish or abort "
        f"the {command}.",
        owner=f"git is in the middle of {what}; nothing was changed. Finish it, or abort it "
        f"(A in the dashboard, or git {command} --abort), then try again.",
    )


def _busy_index(waited: float) -> GitBusy:
    return GitBusy(
        "git_busy",
        index_busy_message(waited),
        owner="git's index is locked (.git/index.lock): another git command is running or one "
        "crashed; nothing was changed. Try again in a moment; if no git command is running, "
        "delete .git/index.lock.",
    )
