"""What stands in front of the MCP app over HTTP: a DNS-rebinding guard and the bearer token.

A web page the owner visits can make their browser send requests to 127.0.0.1. The Host and
Origin checks refuse those (403) before anything else; the token (401 without it) keeps out
every other local program that has not read `.git/vaultwatch/token`.
"""

from __future__ import annotations

import hmac
import json
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _hostname(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8765
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_ok(host: bytes | None) -> bool:
    return host is not None and _hostname(host.decode("latin-1")) in LOOPBACK


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


def guard(app: Any, token: str, *, loopback_only: bool = True) -> Any:
    """ASGI wrapper: refuse foreign Host/Origin (403), then a missing or wrong token (401)."""
    expected = f"Bearer {token}".encode()

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
            if not hmac.compare_digest(headers.get(b"authorization", b""), expected):
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
