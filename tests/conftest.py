"""Shared fixtures: real vaults in temp folders (real git), the real server, a real MCP client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from server.core.gitrepo import ensure_repo
from server.notes.bundled import make_demo_vault
from server.protocol.tools import build_server
from server.vault import Vault

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "example_vault"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests must not depend on (or write to) the machine's git config.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Owner")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "owner@example.test")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Owner")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "owner@example.test")


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The dashboard keeps its settings under XDG_CONFIG_HOME: each test has its own, so no test
    # writes the developer's ~/.config or sees another test's (they run in parallel).
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return tmp_path / "xdg-config"


@pytest.fixture
def settings_dir(_own_settings: Path) -> Path:
    """The test's own XDG_CONFIG_HOME (every test has one), for a test that reads what the
    dashboard saved there."""
    return _own_settings


# Tests that use every core take turns on one xdist worker while the other runs everything else
# (`--dist loadgroup` in pyproject): the embedding and speech models (`semantic`, and the voice
# tests) and the CPU hogs (`load`: start_hogs, twice as many busy processes as cores). Two at
# once only slowed each other past their bounds: two hogged runs together took 36 s each against
# 20 s alone, and the embedding tests took twice as long beside a hogged run.
HEAVY = pytest.mark.xdist_group("heavy")


# tryfirst: xdist's own hook turns xdist_group marks into work units, so the group added here
# must be on the item before it runs (a plain conftest hook ran after it, and was ignored).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("semantic") or item.get_closest_marker("load"):
            item.add_marker(HEAVY)
    # Longest first: `slow` tests are handed out before the rest (xdist deals tests in this
    # order, groups with the most tests first), so the run ends on short tests on both workers
    # instead of one worker finishing a minute-long test while the other idles. A stable sort:
    # the order within each kind stays as collected.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _semantic_only_where_asked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Embedding every temp vault in the background would make each test load a 150 MB model
    # and race its own teardown; tests marked `semantic` run recall for real.
    if request.node.get_closest_marker("semantic") is None:
        monkeypatch.setenv("VAULTWATCH_SEMANTIC", "off")


@pytest.fixture(autouse=True)
def _no_resident_left_behind(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """`vaultwatch-server` over stdio relays to a resident server per vault, which outlives
    its clients for a quiet period (10 minutes by default). A test's resident goes when the
    test ends: a short quiet period for those started with this environment, and, since MCP
    clients start servers with a minimal environment of their own (the SDKs pass PATH and
    HOME, not VAULTWATCH_*), every resident left in the test's temp folder is stopped."""
    monkeypatch.setenv("VAULTWATCH_RESIDENT_IDLE_S", "2")
    # taken now: a fixture set up inside this one is torn down after it
    base = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if base is not None:
        stop_residents(base)


def stop_residents(base: Path) -> list[int]:
    """Stop the resident servers of the vaults under `base` (a vault at most 3 folders deep);
    returns their pids, each gone when this returns."""
    from server.protocol.resident_control import ask
    from server.protocol.resident_socket import Unusable

    pids = []
    for depth in range(4):
        for sock in base.glob("/".join(["*"] * depth + [".git", "vaultwatch", "resident.sock"])):
            root = sock.parent.parent.parent
            try:
                answer = ask(root, "stop")
            except (Unusable, OSError):
                continue
            if answer and answer.get("pid"):
                pids.append(int(answer["pid"]))
    for pid in pids:
        wait_gone(pid, 30)
    return pids


def resident_looked(root: Path, uptime_s: float) -> dict[str, Any] | None:
    """The status of `root`'s resident once its watch has looked at its quiet period at
    `uptime_s` of uptime or later (status gives uptime to a tenth of a second: a twentieth is
    added), else None; fails if the resident is gone. A test that checks a quiet period did
    NOT start waits for this look instead of sleeping past the period."""
    from server.protocol.resident_control import ask

    status = ask(root, "status")
    assert status is not None, f"the resident of {root} left"
    return status if status["checked_s"] >= uptime_s + 0.05 else None


def wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} still runs after {timeout:g} s")
        time.sleep(0.02)


def wait_for(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `cond` (outside an app: a process, a socket, a file) until it gives something true,
    which is returned; on timeout say what was awaited and what was seen last."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}; last saw {got!r}")
        time.sleep(0.02)


def pid_alive(pid: int) -> bool:
    from server.core.pids import pid_alive as alive

    return alive(pid)


# CPU hogs beside the load tests (two servers and a human, Obsidian Git): the windows between a check and a rename open up when every
# process waits for a core (it once failed only at load 11-14 on 2 cores). Each hog ends by
# itself after HOG_S, so none outlives a test that was killed.
HOGS = int(os.environ.get("VAULTWATCH_LOAD_HOGS", str(2 * (os.cpu_count() or 1))))
HOG_S = 600
HOG = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end: pass\n"


_IN_LOAD_TEST = [False]  # whether the running test is marked `load` (one test at a time a worker)


@pytest.fixture(autouse=True)
def _hogs_only_in_load_tests(request: pytest.FixtureRequest) -> None:
    _IN_LOAD_TEST[0] = request.node.get_closest_marker("load") is not None


def start_hogs() -> list[subprocess.Popen[bytes]]:
    """HOGS processes that keep every core busy until stop_hogs (or HOG_S seconds). Only a
    test marked `load` may start them: those take turns (pytest_collection_modifyitems)."""
    assert _IN_LOAD_TEST[0], "a test that starts CPU hogs is marked @pytest.mark.load"
    return [subprocess.Popen([sys.executable, "-c", HOG, str(HOG_S)]) for _ in range(HOGS)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
        hog.wait(30)


def second_machine(root: Path, tmp_path: Path) -> tuple[Path, str]:
    """A bare remote (`tmp_path/remote.git`) the vault pushes its branch to, and a clone of it
    (`tmp_path/other`): another machine syncing the same vault. Returns the clone and the
    branch."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "-u", "origin", branch)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    return other, branch


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


@pytest.fixture
def pinned_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where a snapshot test builds its vault: a folder of its own under the test's temp dir,
    with HOME set above it, so the header shows `~/vault` whatever the temp dir is. (A fixed
    /tmp path kept every run's pictures alike but made tests, and two checkouts, delete each
    other's vaults when run in parallel.)"""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = home / "vault"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def example_vault(tmp_path: Path) -> Path:
    """A fresh copy of example_vault/ as its own git repo (never the original)."""
    return make_demo_vault(tmp_path / "vault")


@pytest.fixture
def make_vault(tmp_path: Path) -> Callable[..., Path]:
    def make(files: dict[str, str | bytes], *, git: bool = True, name: str = "v") -> Path:
        root = tmp_path / name
        root.mkdir()
        write_files(root, files)
        if git:
            ensure_repo(root)
        return root

    return make


class Session:
    """A real MCP client on the real server, with helpers that unwrap results."""

    def __init__(self, client: Client, vault: Vault) -> None:
        self.client = client
        self.vault = vault

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        r = await self.client.call_tool(tool, args)
        assert not r.is_error, f"{tool} failed: {tool_text(r)}"
        text = tool_text(r)
        assert json.loads(text) == r.structured_content
        assert r.structured_content is not None  # held by the line above: the text is an object
        return r.structured_content

    async def error(self, tool: str, **args: Any) -> str:
        r = await self.client.call_tool(tool, args)
        assert r.is_error, f"{tool} unexpectedly succeeded: {r.structured_content}"
        return tool_text(r)


def tool_text(r: CallToolResult) -> str:
    """The text of a tool result: every result and error of ours is one text block (its JSON,
    or the error's message)."""
    block = r.content[0]
    assert isinstance(block, TextContent), f"not a text result: {block!r}"
    return block.text


@pytest.fixture
def connect() -> Callable[..., Any]:
    """`async with connect(root) as s:` — in-memory client on a server for that vault."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def _connect(root: Path, **kw: Any) -> AsyncIterator[Session]:
        vault = Vault(root)
        async with Client(build_server(vault, **kw), raise_exceptions=True) as c:
            yield Session(c, vault)

    return _connect


def git_log(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "log", *args], capture_output=True, text=True, check=True
    ).stdout


def git(root: Path, *args: str) -> str:
    """stdout of a git command in `root` (tests read history and status with it)."""
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


def head(root: Path) -> str:
    """The sha HEAD is at (a write that commits nothing leaves it where it was)."""
    return git(root, "rev-parse", "HEAD").strip()


VAULTWATCH = str(Path(sys.executable).parent / "vaultwatch")


def vaultwatch_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `vaultwatch` command, as the owner runs it from a shell (recall off: no
    command here needs the model, and loading it would only cost time)."""
    return subprocess.run(
        [VAULTWATCH, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={**os.environ, "VAULTWATCH_SEMANTIC": "off"},
    )


def vaultwatch_here(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`vaultwatch ARGS` run from `cwd` through the same entry point (`app.main:main`), in this
    process: what `vaultwatch_cli` answers, without a Python start and the app's imports per
    call (about half a second each on the CI machine). For tests that run many commands to
    check what they open and refuse; tests about the command as a process (its exit, its
    signals, its environment) use `vaultwatch_cli`."""
    import io

    from app.main import main

    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_sigio = os.getcwd(), signal.getsignal(signal.SIGIO)
    old_semantic = os.environ.get("VAULTWATCH_SEMANTIC")
    os.environ["VAULTWATCH_SEMANTIC"] = "off"  # as vaultwatch_cli runs them
    code: int | str | None = 0
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(old_cwd)
        signal.signal(signal.SIGIO, old_sigio)  # main() ignores SIGIO for its leases
        if old_semantic is None:
            os.environ.pop("VAULTWATCH_SEMANTIC", None)
        else:
            os.environ["VAULTWATCH_SEMANTIC"] = old_semantic
    if isinstance(code, str):  # SystemExit("message"): printed to stderr, exit status 1
        err.write(code + "\n")
        code = 1
    return subprocess.CompletedProcess(
        ["vaultwatch", *args], code or 0, out.getvalue(), err.getvalue()
    )


async def workers_done(app: Any, timeout: float = 60) -> None:
    """Every worker of `app` running now has finished (those they start are not awaited). An
    exclusive worker a newer ask replaced ends cancelled: that is the app working as meant, so
    the wait goes on for the rest. Bounded: a worker still running after `timeout` (one waiting
    on a dialog nobody answers) fails the test with its name instead of hanging it."""
    from textual.worker import WorkerState

    awaited = list(app.workers)
    deadline = time.monotonic() + timeout
    while running := [w for w in awaited if not w.is_finished]:
        if time.monotonic() > deadline:
            names = [f"{w.group}:{w.name}" for w in running]
            raise AssertionError(f"workers still running after {timeout:g} s: {names}")
        await asyncio.sleep(0.02)
    failed = [w for w in awaited if w.state == WorkerState.ERROR]
    if failed:  # as wait_for_complete did: the error a worker raised fails the test
        raise AssertionError(f"worker {failed[0].name} failed") from failed[0].error


async def until(
    pilot: Any,
    check: Callable[[], object],
    what: str = "the dashboard",
    timeout: float = 30,
    describe: Callable[[], object] | None = None,
) -> None:
    """Wait for `check` (an event, not the clock); on timeout say what was awaited and what was
    seen instead, which is what a maintainer has to go on when it fails under CI's load."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            seen = describe() if describe is not None else _screen_seen(pilot)
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}: saw {seen!r}")
        await pilot.pause(0.05)


def _screen_seen(pilot: Any) -> str:
    """What the terminal shows (its rows with text) and the workers still running: what a
    wait with nothing better to describe saw when it gave up."""
    from textual.worker import WorkerState

    try:
        rows = [s.text.rstrip() for s in pilot.app.screen._compositor.render_strips()]
        running = [w.name for w in pilot.app.workers if w.state == WorkerState.RUNNING]
    except Exception as exc:  # the app closing, no screen yet: said, not raised
        return f"(no screen: {exc})"
    shown = "\n".join(r for r in rows if r.strip())
    return f"{shown}\n(workers running: {running})"


async def diff_shown(pilot: Any, row: Any) -> None:
    """The main screen's diff pane shows `row`'s commit (its first line starts with the short
    sha): the row's Highlighted message was handled and its diff read in the background. What
    a test waits for after moving the timeline's cursor, before its next key."""
    from app.ui.widgets.diff_pane import DiffPane

    pane = pilot.app.main.query_one(DiffPane)
    short = row.commit.short

    def first() -> str:
        return pane.lines[0].plain if pane.lines else ""

    await until(pilot, lambda: first().startswith(short), f"the diff of {short}", describe=first)


async def screen_is(pilot: Any, kind: type) -> Any:
    """The screen on top is a `kind`, composed and mounted (its on_mount has run: a dialog's
    body is in it), and is returned. On top is not enough: a pushed screen is on top before it
    is composed, and a test that read its body then found it empty under load."""
    app = pilot.app

    def up() -> bool:
        screen = app.screen
        return bool(screen.is_mounted) and isinstance(screen, kind)

    await until(pilot, up, f"a {kind.__name__} on top", describe=lambda: app.screen)
    return app.screen


@contextlib.contextmanager
def no_lease() -> Iterator[None]:
    """An in-process server without file leases, as on a filesystem that has none (NFS, SMB,
    FUSE): the server takes a lease only where SIGIO is ignored (its main ignores it), so with
    SIGIO at its default the write decides by what it sees of the file alone."""
    previous = signal.signal(signal.SIGIO, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)
