"""`vaultwatch-server`: serve one vault over stdio (default) or streamable HTTP with a token."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import resource
import secrets
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from server import __version__
from server.core.gitrepo import ensure_repo, state_dir
from server.notes.bundled import make_demo_vault
from server.protocol.connect import claude_mcp_add_http
from server.protocol.http_guard import guard
from server.vault import Vault, VaultError
from server.write.journal import ServerStarted, ServerStopped
from server.write.store import ignore_lease_breaks

log = logging.getLogger("vaultwatch")


def read_or_create_token(path: Path) -> str:
    """The bearer token, created with mode 0600 on first use. Safe when two servers race."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
        raise SystemExit(
            f"vaultwatch-server: token file {path} is empty; delete it to make a new one"
        ) from None
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_bind(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    try:
        return host.strip("[]") or "127.0.0.1", int(port)
    except ValueError:
        raise SystemExit(
            f"vaultwatch-server: --http takes HOST:PORT, e.g. 127.0.0.1:8765 (got {text!r})"
        ) from None


def _watch_parent() -> None:
    """A dashboard killed outright (its terminal closed, SIGKILL) cannot stop its server child:
    the child notices it was orphaned and stops itself, the same way SIGTERM would."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="vaultwatch-server",
        description="MCP server over a markdown vault kept in git. stdio by default.",
    )
    ap.add_argument("--vault", default=".", help="vault folder (default: current folder)")
    ap.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP (port 0: any free)")
    ap.add_argument("--token-file", help="bearer token file (default .git/vaultwatch/token)")
    ap.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --http bind")
    ap.add_argument("--read-only", action="store_true", help="leave the write tools out")
    ap.add_argument("--demo", action="store_true", help="serve a fresh copy of example_vault")
    ap.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when the process that started this one is gone (the dashboard)",
    )
    ap.add_argument("--version", action="version", version=f"vaultwatch {__version__}")
    return ap


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
    ignore_lease_breaks()  # writes take file leases: an editor's save in flight is not lost
    if args.exit_with_parent:
        _watch_parent()
    reason = "exit"
    try:
        if bind is None:
            mcp.run()
        else:
            serve_http(mcp, root, bind, args.token_file)
    except KeyboardInterrupt:
        reason = "signal"
    finally:
        vault.journal.append(ServerStopped(transport=transport, reason=reason))
        stop(vault)


def _raise_interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def no_core_dumps() -> None:
    """A core dump of this process holds the bearer token and note text, and lands in the
    working directory, which is often the vault itself (the default --vault is '.')."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


STOP_WAIT_S = 2.0  # under the SDK client's grace before it signals, and the dashboard's 10 s


def stop(vault: Vault) -> None:
    """Every way out (the client closing stdin, SIGTERM, Ctrl-C, an error) ends here: recall's
    indexer is stopped and joined before the interpreter shuts down, since a thread still inside
    the model's native code then is killed there and the process aborts (SIGABRT, exit 134)."""
    # A second signal (a client whose grace period ran out) must not cut the wait short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if vault.close(wait=STOP_WAIT_S):
        return
    # Still inside one embedding call after the wait: leave without the interpreter's shutdown
    # (the journal line is written; the vectors are derived and re-embedded on the next start).
    log.warning("recall's indexer did not stop in %.0f s; exiting without waiting", STOP_WAIT_S)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def serve_http(mcp: Any, root: Path, bind: tuple[str, int], token_file: str | None) -> None:
    import uvicorn

    token = read_or_create_token(Path(token_file) if token_file else state_dir(root) / "token")
    host, port = bind
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # listening before we say so: a client may connect the moment it reads the URL
    port = sock.getsockname()[1]
    app = guard(mcp.streamable_http_app(host=host), token, loopback_only=is_loopback(host))
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/mcp"
    token_path = Path(token_file) if token_file else state_dir(root) / "token"
    # The token itself is never printed: the snippet reads it from its file when pasted.
    print(
        f"vaultwatch-server: serving {root} at {url} (bearer token in {token_path})\n"
        "vaultwatch-server: connect Claude Code with:\n"
        f"  {claude_mcp_add_http(url, token_path)}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
