"""Serving over streamable HTTP: the bearer token (its file, made once, 0600), the listening
socket, the guard in front of the app, and the start-up line that says how to connect."""

from __future__ import annotations

import os
import secrets
import socket
import sys
from pathlib import Path
from typing import Any, NamedTuple

from server.core.state_files import StateDamaged, open_state, read_state, state_dir
from server.protocol.args import is_loopback
from server.protocol.connect import claude_mcp_add_http
from server.protocol.http_guard import TokenFile, guard


def read_or_create_token(path: Path) -> str:
    """The bearer token, created with mode 0600 on first use. Safe when two servers race."""
    try:
        fd = open_state(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:  # never a link's target as the token (nor a token written through one)
            token = read_state(path, 4096).decode("utf-8").strip()
        except (StateDamaged, UnicodeDecodeError) as exc:
            raise SystemExit(f"vaultwatch-server: token file {path}: {exc}; delete it") from None
        if token:
            return token
        raise SystemExit(
            f"vaultwatch-server: token file {path} is empty; delete it to make a new one"
        ) from None
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token


def http_app(mcp: Any, root: Path, bind: tuple[str, int], token_file: str | None) -> HttpApp:
    """The listening socket (listening before we say so: a client may connect the moment it
    reads the URL), the guarded app and its URL, and the start-up line that says how to
    connect, printed on stderr. The token itself is never printed: the snippet reads it from
    its file when pasted."""
    token_path = Path(token_file) if token_file else state_dir(root) / "token"
    read_or_create_token(token_path)  # made on first use; each request checks the file as it is
    host, port = bind
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = guard(
        mcp.streamable_http_app(host=host), TokenFile(token_path), loopback_only=is_loopback(host)
    )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/mcp"
    said = (
        f"vaultwatch-server: serving {root} at {url} (bearer token in {token_path})\n"
        "vaultwatch-server: connect Claude Code with:\n"
        f"  {claude_mcp_add_http(url, token_path)}"
    )
    print(said, file=sys.stderr, flush=True)
    return HttpApp(sock, app, url, said)


class HttpApp(NamedTuple):
    sock: socket.socket
    app: Any
    url: str
    said: str  # the start-up lines, as printed


def serve_http(mcp: Any, root: Path, bind: tuple[str, int], token_file: str | None) -> None:
    import uvicorn

    sock, app, _url, _said = http_app(mcp, root, bind, token_file)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    server.run(sockets=[sock])
