"""`vaultwatch-server`, the command clients spawn: over stdio it is a thin relay to the vault's
resident server (server/protocol/resident.py), started on first use and shared by every client.

Standard library only, on purpose: importing the MCP SDK costs a new conversation 1-2 s of CPU
before its first answer; this relay answers its `initialize` in a tenth of that because the
resident already has the SDK, the index and the model loaded. Anything heavier than `server`'s
and `server.protocol`'s own `__init__` (a version string, a docstring) must not be imported at
module level here or in the modules it imports (tests/test_resident.py checks `sys.modules`
after a relayed session): the socket (resident_socket), starting a resident (resident_start),
the link and its hello (resident_link), the pump (relay_pump), status and stop
(resident_control). This module is the command: which call is relayed, and the signals.

The relay answers nothing itself. It pumps newline-delimited JSON-RPC both ways over a Unix
socket in the vault's state folder (`.git/vaultwatch/resident.sock`, 0600, in a 0700 folder
owned by us, the resident's uid checked with SO_PEERCRED), and reads just enough of it to
(a) replay the client's `initialize` to a restarted resident and (b) answer the calls that were
in flight when a resident died with a clear error. When the resident cannot be used (another
owner, an open mode, a version that will not match, no state folder), it says why on stderr and
serves in this process as before (server/protocol/cli.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from server.protocol.relay_pump import Relay
from server.protocol.resident_control import control
from server.protocol.resident_link import open_link
from server.protocol.resident_socket import Unusable


def relay_root(argv: list[str]) -> Path | None:
    """The vault to relay for, or None when this call is for the in-process server: HTTP, the
    demo, read-only, eval, --help, an explicit --in-process, VAULTWATCH_RESIDENT=off."""
    if os.environ.get("VAULTWATCH_RESIDENT", "").lower() in ("off", "0", "no", "false"):
        return None
    vault = "."
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--vault" and rest:
            vault = rest.pop(0)
        elif arg.startswith("--vault="):
            vault = arg.split("=", 1)[1]
        else:
            return None
    root = Path(vault).expanduser().absolute()
    return root if root.is_dir() else None


def _exit_on_signals() -> None:
    """A client that stops its server (SIGTERM, Ctrl-C, a closed terminal) gets a clean exit at
    once, whatever the pump threads are blocked on: the relay holds nothing that needs saving
    (a call in flight finishes, or is rolled back, in the resident), and the resident sees the
    connection close."""
    import signal

    def leave(_signum: int, _frame: object) -> None:
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, leave)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    import resource

    # the relay holds notes in its buffers too: no core file of it in the working directory
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if argv[:1] in (["status"], ["stop"]):
        raise SystemExit(control(argv))
    root = relay_root(argv)
    if root is not None:
        try:
            link = open_link(root, {"vaultwatch": "attach", "pid": os.getpid()})
        except Unusable as exc:
            print(
                f"vaultwatch-server: not using the shared resident server: {exc}. "
                "Serving in this process instead.",
                file=sys.stderr,
                flush=True,
            )
        else:
            assert link is not None
            _exit_on_signals()
            raise SystemExit(Relay(root, link).run())
    from server.protocol.cli import main as serve_here

    serve_here([a for a in argv if a != "--in-process"])


if __name__ == "__main__":
    main()
