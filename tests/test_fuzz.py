"""Property-based fuzzing of every tool's arguments against the real in-memory server: each
call returns a result or an isError with a message, nothing raises through the protocol, and
a call that reports failure has written nothing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp import Client

from server.gitrepo import ensure_repo
from server.tools import build_server
from server.vault import Vault

from .conftest import EXAMPLE

PATHS = [
    "weeks/2026-W49.md",
    "study/crdts-for-offline-sync.md",
    "../x.md",
    "/etc/passwd",
    ".git/config",
    "private/salary-notes.md",
    "CLAUDE.md",
    "vault.config.yaml",
    "a\x00b.md",
    "%2e%2e/x.md",
    "notes\\x.md",
    "new/fuzz.md",
    "",
    " ",
    "weeks",
    "weeks/",
    "é/ü.md",
    "bad/../../x.md",
    "~/x.md",
    "C:/x.md",
    "applications/星河科技-后端工程师.md",
]
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.sampled_from(PATHS),
)
value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)

PARAMS = {
    "get_context": [],
    "list_docs": [
        "type",
        "folder",
        "tags_all",
        "tags_any",
        "tags_none",
        "tag_prefix",
        "where",
        "date_from",
        "date_to",
        "date_field",
        "sort",
        "fields",
        "group_by",
        "limit",
        "cursor",
    ],
    "list_tags": ["days", "prefix", "limit", "cursor"],
    "search_text": ["query", "type", "folder", "tags", "limit", "cursor"],
    "read_doc": ["path", "section", "tail", "offset"],
    "create_doc": ["type", "path", "fields", "body", "tags"],
    "append_section": ["path", "heading", "content", "hash"],
    "edit_text": ["path", "old", "new", "count", "hash"],
    "update_frontmatter": ["path", "set", "unset", "add_tags", "remove_tags", "hash"],
    "replace_doc": ["path", "content", "hash"],
    "batch": ["ops", "message"],
}


@st.composite
def calls(draw: Any) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(sorted(PARAMS)))
    names = PARAMS[tool]
    args: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(names), unique=True)) if names else []:
        if name == "path":
            args[name] = draw(st.one_of(st.sampled_from(PATHS), st.text(max_size=30)))
        elif name == "ops":
            # mostly well-formed ops on real notes with badly typed or missing arguments, the
            # shape a confused model sends
            op_args = st.fixed_dictionaries(
                {"path": st.sampled_from(PATHS[:2])},
                optional={
                    k: value
                    for k in (
                        "heading",
                        "content",
                        "old",
                        "new",
                        "set",
                        "count",
                        "unset",
                        "add_tags",
                        "hash",
                        "body",
                        "fields",
                    )
                },
            )
            op = st.fixed_dictionaries(
                {"tool": st.sampled_from([*PARAMS, "delete"]), "args": st.one_of(op_args, value)}
            )
            args[name] = draw(st.one_of(st.lists(op, max_size=3), value))
        else:
            args[name] = draw(value)
    if draw(st.booleans()) and draw(st.booleans()):
        args[draw(st.text(min_size=1, max_size=8))] = draw(value)  # an argument that does not exist
    return tool, args


class Loop:
    """One event loop in a thread, one client in one task (anyio wants a context manager
    entered and left by the same task), so every example reuses the same server."""

    def __init__(self, root: Path) -> None:
        self.vault = Vault(root)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready = concurrent.futures.Future[None]()
        self.done = asyncio.run_coroutine_threadsafe(self._serve(), self.loop)
        self.ready.result(timeout=60)

    async def _serve(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        async with Client(build_server(self.vault), raise_exceptions=True) as client:
            self.ready.set_result(None)
            while (item := await self.queue.get()) is not None:
                tool, args, fut = item
                try:
                    fut.set_result(await client.call_tool(tool, args))
                except BaseException as exc:  # handed back to the test thread
                    fut.set_exception(exc)

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (tool, args, fut))
        return fut.result(timeout=120)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)
        self.done.result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.vault.close()


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Loop]:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    ensure_repo(root)
    lp = Loop(root)
    yield lp
    lp.close()


def state(root: Path) -> tuple[str, str]:
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return head, status


@pytest.mark.slow
@settings(
    max_examples=int(os.environ.get("VAULTWATCH_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(call=calls())
def test_every_tool_answers_every_argument(loop: Loop, call: tuple[str, dict[str, Any]]) -> None:
    tool, args = call
    before = state(loop.vault.root)
    result = loop.call(tool, args)  # raises only if the protocol broke
    event(
        f"{tool}: {'error' if result.is_error else 'ok'}"
    )  # shown with --hypothesis-show-statistics
    if result.is_error:
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.strip() and "Traceback" not in text
        assert "failed inside the server" not in text, (tool, args, text)  # no unexpected crash
        assert state(loop.vault.root) == before, (tool, args, text)  # nothing written
    else:
        assert isinstance(result.structured_content, dict)
        assert len(result.content[0].text) <= loop.vault.config.limits.result_chars  # type: ignore[union-attr]
        assert state(loop.vault.root)[1] == ""  # a successful write leaves a clean tree
