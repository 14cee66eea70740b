"""What stands in front of the MCP app over HTTP: a DNS-rebinding guard and the bearer token.

A web page the owner visits can make their browser send requests to 127.0.0.1. The Host and
Origin checks refuse those (403) before anything else; the token (401 without it) keeps out
every other local program that has not read `.git/vaultwatch/token`.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from server.core.state_files import read_state

LOOPBACK = {"127.0.0.1", "localhost", "::1"}

# A Host header is a name or a bracketed IPv6 address, then at most a port: nothing else.
# Taking everything before the last `:` let `127.0.0.1:PORT@evil.example` through
# (adversarial pass 3, #25).
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9.\-]+))(?::(?P<port>[0-9]{1,5}))?")


def _hostname(value: str) -> str | None:
    m = _HOST.fullmatch(value.strip().lower())
    if m is None:
        return None
    return m.group("v6") or m.group("name")


def host_ok(host: bytes | None) -> bool:
    return host is not None and _hostname(host.decode("latin-1")) in LOOPBACK


class TokenFile:
    """The bearer token as its file says now: a rotated token is the only one accepted from
    the next request on, and a deleted or emptied file accepts none (adversarial pass 3, #25:
    the old token kept working). One stat per request; the file is read again only when its
    stat changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int, int, int] | None = None
        self._token: str | None = None

    def current(self) -> str | None:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            self._seen, self._token = None, None
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key != self._seen:
            try:
                token = read_state(self.path, limit=4096).decode("utf-8").strip()
            except (OSError, ValueError):
                token = ""
            self._seen, self._token = key, token or None
        return self._token


def origin_ok(origin: bytes | None) -> bool:
    """No Origin (curl, MCP clients) is fine; a browser's must be this machine."""
    if origin is None:
        return True
    parts = urlsplit(origin.decode("latin-1"))
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK


async def _reply(send: Any, status: int, error: str, description: str, extra: list[Any]) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": body})


def guard(
    app: Any, token: str | TokenFile | Callable[[], str | None], *, loopback_only: bool = True
) -> Any:
    """ASGI wrapper: refuse foreign Host/Origin (403), then a missing or wrong token (401).
    `token` is fixed, or read per request (a TokenFile: the file as it is now)."""
    if isinstance(token, TokenFile):
        now: Callable[[], str | None] = token.current
    elif isinstance(token, str):
        fixed = token
        now = lambda: fixed  # noqa: E731
    else:
        now = token

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if loopback_only and not (
                host_ok(headers.get(b"host")) and origin_ok(headers.get(b"origin"))
            ):
                await _reply(
                    send,
                    403,
                    "forbidden",
                    "Host or Origin is not this machine: refused (DNS-rebinding guard)",
                    [],
                )
                return
            current = now()
            expected = f"Bearer {current}".encode() if current else None
            given = headers.get(b"authorization", b"")
            if expected is None or not hmac.compare_digest(given, expected):
                await _reply(
                    send,
                    401,
                    "invalid_token",
                    "send Authorization: Bearer <token> (the token is in .git/vaultwatch/token)",
                    [(b"www-authenticate", b'Bearer error="invalid_token"')],
                )
                return
        await app(scope, receive, send)

    return guarded
