"""`vaultwatch-server`'s arguments: the parser, and what `--http HOST:PORT` binds to (and whether
that is this machine only)."""

from __future__ import annotations

import argparse
import ipaddress

from server import __version__


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
    ap.add_argument(
        "--index-now",
        action="store_true",
        help="embed the vault for recall as the server starts, not after a client's first call, "
        "and each note the owner saves within seconds (the dashboard's server: the owner's "
        "health check compares notes by meaning)",
    )
    ap.add_argument("--version", action="version", version=f"vaultwatch {__version__}")
    return ap
