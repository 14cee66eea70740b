"""`vaultwatch-server`: serve one vault over stdio (default) or streamable HTTP with a token.

This module runs the process: start (the vault, recovery, the journal line), serve, and stop on
every way out. The arguments are `args`, HTTP serving `http_serve`, `eval` is
`services.evaluate`."""

from __future__ import annotations

import logging
import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from server import __version__
from server.core.gitrepo import ensure_repo
from server.notes.bundled import make_demo_vault
from server.protocol.args import build_parser, is_loopback, parse_bind
from server.protocol.http_serve import serve_http
from server.vault import Vault, VaultError
from server.write.journal import ServerStarted, ServerStopped
from server.write.leases import ignore_lease_breaks

log = logging.getLogger("vaultwatch")


def _watch_parent() -> None:
    """A dashboard killed outright (its terminal closed, SIGKILL) cannot stop its server child:
    the child notices it was orphaned and stops itself, the same way SIGTERM would."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["eval"]:
        from server.services.evaluate import main as eval_main

        eval_main(argv[1:])
        return
    args = build_parser().parse_args(argv)
    no_core_dumps()
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="vaultwatch-server: %(message)s"
    )
    root = make_demo_vault() if args.demo else Path(args.vault).expanduser().absolute()
    if not root.is_dir():
        raise SystemExit(f"vaultwatch-server: vault folder {root} does not exist")
    bind = parse_bind(args.http) if args.http else None
    if bind and not is_loopback(bind[0]) and not args.allow_remote:
        raise SystemExit(
            f"vaultwatch-server: refusing to listen on {bind[0]}: that is reachable from other "
            "machines. Use 127.0.0.1, or add --allow-remote if you mean it."
        )
    vault = open_vault(root)

    # imported late: the SDK is the slow part of start-up
    from server.protocol.tools import build_server

    mcp = build_server(vault, read_only=args.read_only)
    transport = "http" if bind else "stdio"
    vault.journal.append(
        ServerStarted(
            transport=transport,
            read_only=args.read_only,
            version=__version__,
            vault=str(root),
            config_errors=[str(p) for p in vault.config_errors],
        )
    )
    # SIGTERM (how the dashboard and clients stop us) should run the same shutdown as Ctrl-C.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, _raise_interrupt)
    ignore_lease_breaks()  # writes take file leases: an editor's save in flight is not lost
    if args.exit_with_parent:
        _watch_parent()
    if args.index_now:  # in a thread: the server answers meanwhile, as after a first call
        vault.start_semantic_soon()
        vault.keep_semantic_current()
    reason = "exit"
    try:
        if bind is None:
            mcp.run()
        else:
            serve_http(mcp, root, bind, args.token_file)
    except KeyboardInterrupt:
        reason = "signal"
    finally:
        stop(vault, ServerStopped(transport=transport, reason=reason))
        if _SIGNALLED.is_set():
            # A signal ends the server even when the interrupt surfaced wrapped (not caught
            # above): the SDK's stdin reader thread would keep a stdio server alive for as
            # long as its client keeps stdin open (adversarial pass 3, N12).
            leave()
    leave()  # stopped cleanly (an error went on to its traceback through the finally above)


def open_vault(root: Path) -> Vault:
    """The vault a server serves (in this process or resident): its repo made if missing, its
    config's problems said on stderr, and a write an earlier server died in rolled back."""
    ensure_repo(root)
    try:
        vault = Vault(root)
    except VaultError as exc:
        raise SystemExit(f"vaultwatch-server: {exc.message}") from None
    for problem in vault.config_errors:
        log.warning("config not applied: %s", problem)
    for warning in [vault.config_notice, *vault.private_glob_warnings()]:
        if warning:
            log.warning("%s", warning)
    restored = vault.store.recover()  # an earlier server died mid-write: put the files back
    if restored:
        log.warning("rolled back an interrupted write: %s", ", ".join(restored))
    return vault


_SIGNALLED = threading.Event()


def _raise_interrupt(_signum: int, _frame: Any) -> None:
    _SIGNALLED.set()
    raise KeyboardInterrupt


def no_core_dumps() -> None:
    """A core dump of this process holds the bearer token and note text, and lands in the
    working directory, which is often the vault itself (the default --vault is '.')."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


STOP_WAIT_S = 2.0  # under the SDK client's grace before it signals, and the dashboard's 10 s


def stop(vault: Vault, stopped: ServerStopped) -> None:
    """Every way out (the client closing stdin, SIGTERM, Ctrl-C, an error) ends here: recall's
    indexer is stopped and joined before the interpreter shuts down, since a thread still inside
    the model's native code then is killed there and the process aborts (SIGABRT, exit 134).
    `stopped` is journaled once the indexer has stopped, so it is the server's last line: an
    indexer still running would log its progress after it."""
    # A second signal (a client whose grace period ran out) must not cut the wait short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    done = vault.close(wait=STOP_WAIT_S)
    vault.journal.append(stopped)
    if done:
        return
    # Still inside one embedding call after the wait: leave without the interpreter's shutdown
    # (the journal line is written; the vectors are derived and re-embedded on the next start).
    log.warning("recall's indexer did not stop in %.0f s; exiting without waiting", STOP_WAIT_S)
    leave()


def leave() -> None:
    """Exit now that the vault is closed and the journal written. The interpreter's own
    shutdown (freeing the embedding model, numpy, the SDK's modules) took 1.5-2 s more, during
    which a client that closed stdin sees a server that has not exited, and signals it."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
