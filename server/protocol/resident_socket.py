"""The resident server's socket, as a client finds it: the vault's state folder, that folder and
the socket ours and closed to others, and a connection whose peer runs as us. Unusable says why
the resident cannot be used, for the owner.

Standard library only: the relay (server/protocol/relay.py) imports it, and a new conversation
must not pay for our package's imports (tests/test_resident.py holds it)."""

from __future__ import annotations

import os
import socket
import stat
import struct
from pathlib import Path

SOCKET_NAME = "resident.sock"


class Unusable(Exception):
    """The resident server cannot be used: the message says why, for the owner."""


def state_dir(root: Path) -> Path:
    """`.git/vaultwatch` of the vault, as server.core.state_files.state_dir finds it (a `.git`
    file's `gitdir:` for a worktree), without importing it. Unusable when there is no repo yet
    (the in-process server makes it; the next client relays)."""
    dot = root / ".git"
    if dot.is_dir():
        return dot / "vaultwatch"
    if dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            return (target if target.is_absolute() else root / target) / "vaultwatch"
    raise Unusable(f"{root} has no git repository yet")


def check_private(path: Path, *, want_socket: bool = False) -> None:
    """The state folder and the socket must be ours and closed to others: a socket another user
    made (or could reach) would let them read the notes we send or answer in the server's name."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):  # it would lead to someone else's socket or folder
        raise Unusable(f"{path} is a symbolic link, not a {'socket' if want_socket else 'folder'}")
    kind_ok = stat.S_ISSOCK(st.st_mode) if want_socket else stat.S_ISDIR(st.st_mode)
    if not kind_ok:
        raise Unusable(f"{path} is not a {'socket' if want_socket else 'folder'}")
    if st.st_uid != os.getuid():
        raise Unusable(f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()})")
    if st.st_mode & 0o077:
        raise Unusable(
            f"{path} has mode {stat.S_IMODE(st.st_mode):o}: others could use it "
            f"(it must be {'600' if want_socket else '700'})"
        )


def socket_address(path: Path) -> str:
    """A Unix socket's address is at most 107 bytes: a deeper vault is reached through its
    state folder's descriptor (/proc/self/fd/N/resident.sock), kept open for the process."""
    text = os.fsdecode(path)
    if len(os.fsencode(text)) < 100:
        return text
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    return f"/proc/self/fd/{fd}/{path.name}"


def peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def try_connect(sdir: Path) -> socket.socket | None:
    """A connection to the running resident, None when none runs (no socket, or a stale one a
    dead resident left). Unusable when one is there that is not safely ours."""
    path = sdir / SOCKET_NAME
    try:
        check_private(sdir)
        check_private(path, want_socket=True)
    except FileNotFoundError:
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(socket_address(path))
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None
    except PermissionError as exc:
        s.close()
        raise Unusable(f"no permission to connect to {path} ({exc.strerror})") from None
    uid = peer_uid(s)  # asked once: the socket is closed before the refusal names it
    if uid != os.getuid():
        s.close()
        raise Unusable(f"the server at {path} runs as uid {uid}, not as you")
    return s
