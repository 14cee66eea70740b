"""What the owner does from the dashboard fails with an ActionError: a sentence for the owner,
and the vault as it was. The actions themselves: `revert` (revert.py) and the file actions
(move_action, remove_action, create_action)."""

from __future__ import annotations

from server.core.errors import VaultwatchError


class ActionError(VaultwatchError):
    """What the owner asked for was not done; the message says why, for the owner."""

    code = "refused"
