"""The wheel, installed into a fresh virtual environment, works on its own: the console scripts
start, the demo vault and the themes ship inside the package (`uv tool install`, `pipx` and `pip`
install nothing else), and nothing reaches back into this source tree."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import EXAMPLE, REPO
from .terminal import in_terminal, read_to_exit, read_until

# One worker runs the module in turn: the wheel and its environment (module fixtures, the
# costly part) are then built once, not again on each xdist worker that gets one of the tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("install")]

READ_TOOLS = {"get_context", "list_docs", "list_tags", "read_doc"}


def _uv() -> str:
    # `uv run` tells its children where it is; a bare `pytest` finds uv on PATH.
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        raise AssertionError("the install test needs uv (run the tests with `uv run pytest`)")
    return found


def _run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    r = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(_uv(), "build", "--wheel", "--out-dir", out, REPO, cwd=REPO)
    [built] = out.glob("vaultwatch-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel and its dependencies at the lock's versions (so uv
    takes them from its cache: no new downloads on a machine that ran `uv sync`)."""
    work = tmp_path_factory.mktemp("venv")
    env_dir = work / "env"
    pins = work / "pins.txt"
    export = ["export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes"]
    _run(_uv(), *export, "--output-file", pins, cwd=REPO)
    _run(_uv(), "venv", "--python", sys.executable, env_dir, cwd=work)
    _run(
        _uv(), "pip", "install", "--python", env_dir / "bin" / "python", "-c", pins, wheel, cwd=work
    )
    return env_dir


def _clean_env(home: Path) -> dict[str, str]:
    """The installed tool's environment: nothing that points at this checkout or its venv."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        XDG_CONFIG_HOME=str(home / "config"),
        TMPDIR=str(home),
        VAULTWATCH_SEMANTIC="off",  # the embedding model is not what this test is about
    )
    return env


def test_wheel_ships_the_demo_vault_and_the_themes(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    # every file git tracks there, dot-files included (a stray local .git/ is not the vault's)
    tracked = _run("git", "ls-files", "-z", "--", ".", cwd=EXAMPLE)
    vault_files = {f for f in tracked.split("\0") if f}
    assert vault_files, "example_vault/ is empty"
    assert {f"server/example_vault/{f}" for f in vault_files} <= names
    themes = {p.name for p in (REPO / "themes").glob("*.json")}
    assert {"vaultwatch-dark.json", "vaultwatch-light.json"} <= themes
    assert {f"app/themes/{t}" for t in themes} <= names
    # the tool installs its two packages and nothing else at the top level (bench/ and tests/
    # are for developers, run from a checkout)
    top = {n.split("/", 1)[0] for n in names if "/" in n and ".dist-info" not in n}
    assert top == {"server", "app"}, top


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path  # the installed commands run here, far from the source tree


def test_installed_help(venv: Path, home: Path) -> None:
    out = _run(venv / "bin" / "vaultwatch", "--help", cwd=home, env=_clean_env(home))
    assert "usage: vaultwatch" in out and "--demo" in out
    out = _run(venv / "bin" / "vaultwatch-server", "--help", cwd=home, env=_clean_env(home))
    assert "usage: vaultwatch-server" in out
    where = "import app, server; print(app.__file__); print(server.__file__)"
    out = _run(venv / "bin" / "python", "-c", where, cwd=home, env=_clean_env(home))
    assert all(Path(f).is_relative_to(venv) for f in out.split()), out  # not this checkout


@pytest.fixture
def installed_server(venv: Path, home: Path) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    proc = subprocess.Popen(
        [str(venv / "bin" / "vaultwatch-server"), "--demo", "--http", "127.0.0.1:0"],
        cwd=home,
        env=_clean_env(home),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    seen = ""
    try:
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen += line
            m = re.search(r"at (http://127\.0\.0\.1:\d+/mcp) \(bearer token in (.+)\)$", line)
            if m:
                token = Path(m.group(2)).read_text().strip()
                yield m.group(1), token, proc
                break
            if not line and proc.poll() is not None:
                raise AssertionError(f"the installed server exited:\n{seen}")
        else:
            raise AssertionError(f"the installed server did not start:\n{seen}")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(15)


@pytest.mark.anyio
async def test_installed_server_demo_answers_over_http(
    installed_server: tuple[str, str, subprocess.Popen[str]],
) -> None:
    url, token, proc = installed_server
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http)) as c,
    ):
        assert {t.name for t in (await c.list_tools()).tools} >= READ_TOOLS
        res = await c.call_tool("read_doc", {"path": "weeks/2026-W49.md", "section": "Log"})
        assert not res.is_error  # the demo vault's notes came along
    proc.terminate()
    assert proc.wait(15) == 0
    rest = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in rest, rest


def test_installed_dashboard_demo_runs_in_a_terminal(venv: Path, home: Path) -> None:
    """The real dashboard on a pseudo-terminal: it draws its screen (themes found), the demo's
    assistant writes through the installed server, `q` quits cleanly."""
    env = {**_clean_env(home), "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "40"}
    primary, proc = in_terminal([str(venv / "bin" / "vaultwatch"), "--demo"], env, 140, 40, home)
    try:
        # the demo's first write lands in the feed as a commit by the demo assistant
        screen = read_until(primary, b"demo-assistant", 90, proc)
        assert b"Traceback" not in screen, screen.decode(errors="replace")[-3000:]
        assert b"demo-assistant" in screen, screen.decode(errors="replace")[-3000:]
        os.write(primary, b"q")
        text = (screen + read_to_exit(primary, proc, 30)).decode(errors="replace")
        assert proc.poll() == 0, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        assert "the demo vault was removed" in text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(15)
        os.close(primary)
