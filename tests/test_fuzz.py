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
from mcp.types import TextContent

from server.core.gitrepo import ensure_repo
from server.core.tool_names import ToolName
from server.protocol.tools import build_server
from server.vault import Vault
from server.write.write_ops import WRITE_OPS, WriteArgs

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


def draw_call(draw: Any, params: dict[str, list[str]]) -> tuple[str, dict[str, Any]]:
    """A call to any tool the server lists, with any subset of its parameters (and now and then
    one it does not have). `params` come from tools/list, so a new tool or parameter is fuzzed
    the day it exists; batch operations' arguments come from the write operations' models."""
    tool = draw(st.sampled_from(sorted(params)))
    names = params[tool]
    args: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(names), unique=True)) if names else []:
        if name == "path":
            args[name] = draw(st.one_of(st.sampled_from(PATHS), st.text(max_size=30)))
        elif name == "ops":
            # mostly well-formed ops on real notes with badly typed or missing arguments, the
            # shape a confused model sends
            op = st.sampled_from(sorted(WRITE_OPS)).flatmap(
                lambda op_name: st.fixed_dictionaries(
                    {
                        "tool": st.sampled_from([op_name, op_name, *params, "delete"]),
                        "args": st.one_of(op_args(WRITE_OPS[op_name]), value),
                    }
                )
            )
            args[name] = draw(st.one_of(st.lists(op, max_size=3), value))
        else:
            args[name] = draw(value)
    if draw(st.booleans()) and draw(st.booleans()):
        args[draw(st.text(min_size=1, max_size=8))] = draw(value)  # an argument that does not exist
    return tool, args


def op_args(model: type[WriteArgs]) -> st.SearchStrategy[dict[str, Any]]:
    """A batch operation's arguments: a real note's path and any of the model's other fields,
    with values of any type."""
    others = [n for n in model.model_fields if n != "path"]
    return st.fixed_dictionaries(
        {"path": st.sampled_from(PATHS[:2])}, optional={k: value for k in others}
    )


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
            listed = (await client.list_tools()).tools
            self.params = {t.name: list(t.input_schema.get("properties", {})) for t in listed}
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


def test_the_fuzz_covers_every_tool_the_server_lists(loop: Loop) -> None:
    """Nothing hand-copied to drift: the fuzz draws from the tools/list of the real server."""
    assert set(loop.params) == {t.value for t in ToolName}
    assert loop.params["recall"] and loop.params["batch"] == ["ops", "message", "answers"]


@pytest.mark.slow
@settings(
    max_examples=int(os.environ.get("VAULTWATCH_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_every_tool_answers_every_argument(loop: Loop, data: st.DataObject) -> None:
    tool, args = data.draw(st.composite(draw_call)(loop.params), label="call")
    before = state(loop.vault.root)
    result = loop.call(tool, args)  # raises only if the protocol broke
    event(
        f"{tool}: {'error' if result.is_error else 'ok'}"
    )  # shown with --hypothesis-show-statistics
    block = result.content[0]
    assert isinstance(block, TextContent)
    text = block.text
    if result.is_error:
        assert text.strip() and "Traceback" not in text
        assert "failed inside the server" not in text, (tool, args, text)  # no unexpected crash
        assert state(loop.vault.root) == before, (tool, args, text)  # nothing written
    else:
        assert isinstance(result.structured_content, dict)
        assert len(text) <= loop.vault.config.limits.result_chars
        assert state(loop.vault.root)[1] == ""  # a successful write leaves a clean tree
