"""The server driven by MCP clients nobody here wrote: the MCP Inspector CLI, the TypeScript
SDK (v1, legacy handshake; v2, 2026-07-28 discovery), and Claude Code's own `claude mcp list`
with exactly the snippets the README prints."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.core.tool_names import ToolName
from server.write.journal import read_all
from server.write.write_ops import WRITE_OPS

from . import node_clients
from .conftest import EXAMPLE, REPO
from .servers import HttpServer

pytestmark = pytest.mark.slow
SERVER = str(Path(sys.executable).parent / "vaultwatch-server")
# Every tool the server registers, and those that only read (the names are said once, in
# ToolName; writes are the write operations and batch): a new tool needs no edit here.
ALL_TOOLS = {t.value for t in ToolName}
READ_ONLY = ALL_TOOLS - set(WRITE_OPS) - {ToolName.BATCH.value}


@pytest.fixture(scope="module")
def node() -> Path:
    try:
        return node_clients.ensure()
    except node_clients.Unavailable as exc:
        pytest.skip(f"independent clients not available: {exc}")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def run(
    node: Path,
    home: Path,
    *cmd: str,
    cwd: Path | None = None,
    shell: bool = False,
    timeout: int = 120,
) -> subprocess.CompletedProcess[str]:
    args: list[str] | str = " ".join(cmd) if shell else list(cmd)
    return subprocess.run(
        args,
        cwd=cwd or home,
        env=node_clients.env(node, home),
        shell=shell,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def inspector(
    node: Path, home: Path, *args: str, target: list[str]
) -> subprocess.CompletedProcess[str]:
    return run(node, home, "mcp-inspector", "--cli", *args, *target)


def stdio_target(vault: Path) -> list[str]:
    return ["--", SERVER, "--vault", str(vault)]


def events(vault: Path) -> list[dict]:
    return read_all(vault / ".git/vaultwatch/events.jsonl")


def git_log(vault: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(vault), "log", "--format=%an|%s|%b"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_inspector_lists_portable_schemas(node: Path, home: Path, vault: Path) -> None:
    r = inspector(
        node,
        home,
        "--strict",
        "--method",
        "tools/list",
        "--format",
        "json",
        "-q",
        target=stdio_target(vault),
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    tools = {t["name"]: t for t in data.get("result", data)["tools"]}
    assert set(tools) == ALL_TOOLS
    assert all(t.get("outputSchema") for t in tools.values())
    assert tools["read_doc"]["annotations"]["readOnlyHint"] is True
    assert tools["append_section"]["annotations"]["destructiveHint"] is False
    assert all(
        "  " not in t["description"] and "\n" not in t["description"] for t in tools.values()
    )
    assert all(len(t["description"]) < 2000 for t in tools.values())  # clients cut at ~2 KB


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_read_write_conflict_rejection(
    node: Path, home: Path, vault: Path, era: str
) -> None:
    era_args = ["--protocol-era", "modern"] if era == "modern" else []
    target = stdio_target(vault)
    r = inspector(
        node,
        home,
        *era_args,
        "--method",
        "tools/call",
        "--tool-name",
        "read_doc",
        "--tool-arg",
        "path=weeks/2026-W49.md",
        "--format",
        "json",
        "-q",
        target=target,
    )
    assert r.returncode == 0, r.stderr
    read = json.loads(r.stdout)
    read = read.get("result", read)
    h = read["structuredContent"]["hash"]

    r = inspector(
        node,
        home,
        *era_args,
        "--method",
        "tools/call",
        "--tool-name",
        "append_section",
        "--tool-arg",
        "path=weeks/2026-W49.md",
        "--tool-arg",
        "heading=Log",
        "--tool-arg",
        f"content=- via inspector ({era})",
        "--format",
        "json",
        "-q",
        target=target,
    )
    assert r.returncode == 0, r.stderr
    log = git_log(vault)
    assert log.startswith(
        "Claude|append_section: weeks/2026-W49.md § Log|Vaultwatch-Tool: append_section"
    )
    client = re.search(r"Vaultwatch-Client: (\S+)", log).group(1)  # type: ignore[union-attr]
    assert "inspector" in client.lower() or client != "unknown"

    seen = len(events(vault))
    r = inspector(
        node,
        home,
        *era_args,
        "--method",
        "tools/call",
        "--tool-name",
        "replace_doc",
        "--tool-arg",
        "path=weeks/2026-W49.md",
        "--tool-arg",
        "content=# stale",
        "--tool-arg",
        f"hash={h}",
        "--format",
        "json",
        "-q",
        target=target,
    )
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)  # isError -> exit 5
    # recall's background progress may interleave, so look among what this call added
    assert "conflict" in r.stdout
    assert "conflict" in [e["kind"] for e in events(vault)[seen:]]

    r = inspector(
        node,
        home,
        *era_args,
        "--method",
        "tools/call",
        "--tool-name",
        "create_doc",
        "--tool-args-json",
        json.dumps({"path": "inbox/x.md", "tags": ["nope-nope"]}),
        "--format",
        "json",
        "-q",
        target=target,
    )
    assert r.returncode == 5 and "unknown_tag" in r.stdout
    assert [e for e in events(vault) if e["kind"] == "rejected"][-1]["code"] == "unknown_tag"


def test_inspector_over_http_with_and_without_the_header(
    node: Path, home: Path, vault: Path
) -> None:
    srv = HttpServer(vault)
    try:
        base = [srv.url, "--transport", "http"]
        r = inspector(
            node,
            home,
            "--header",
            f"Authorization: Bearer {srv.token}",
            "--method",
            "tools/call",
            "--tool-name",
            "list_docs",
            "--tool-args-json",
            '{"type": "application"}',
            "--format",
            "json",
            "-q",
            target=base,
        )
        assert r.returncode == 0, r.stderr
        assert "northwind" in r.stdout
        r = inspector(node, home, "--stored-auth-only", "--method", "tools/list", "-q", target=base)
        assert r.returncode != 0  # refused without the token
    finally:
        srv.stop()


@pytest.fixture
def ts_script(node: Path) -> Iterator[Path]:
    dest = node / "ts_client.mjs"  # beside node_modules, so the SDK imports resolve
    shutil.copy(REPO / "tests" / "clients" / "ts_client.mjs", dest)
    yield dest


def _steps(out: str) -> dict[str, dict]:
    return {
        s["step"]: s
        for s in (json.loads(line) for line in out.splitlines() if line.startswith("{"))
    }


@pytest.mark.parametrize("sdk", ["v1", "v2"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_typescript_sdk(
    node: Path, home: Path, vault: Path, ts_script: Path, sdk: str, transport: str
) -> None:
    srv = HttpServer(vault) if transport == "http" else None
    try:
        if srv:
            cmd = ["node", str(ts_script), sdk, "http", srv.url, srv.token]
        else:
            subprocess.run([SERVER, "--help"], capture_output=True, check=True)
            cmd = ["node", str(ts_script), sdk, "stdio", SERVER, "", "--", "--vault", str(vault)]
        r = run(node, home, *cmd, cwd=node)
    finally:
        if srv:
            srv.stop()
    assert r.returncode == 0, r.stderr[-2000:]
    steps = _steps(r.stdout)
    assert steps["connected"]["server"]["name"] == "vaultwatch"
    assert set(steps["tools"]["names"]) == ALL_TOOLS
    assert set(steps["tools"]["readOnly"]) == READ_ONLY
    assert not steps["read"]["isError"] and len(steps["read"]["structured"]["hash"]) == 16
    assert not steps["append"]["isError"] and steps["append"]["structured"]["commit"]
    assert steps["conflict"]["isError"] and "conflict" in steps["conflict"]["text"]
    assert steps["rejected"]["isError"] and "unknown_tag" in steps["rejected"]["text"]
    assert "done" in steps
    log = git_log(vault)
    assert f"- from {sdk} over {transport}" in (vault / "weeks/2026-W49.md").read_text()
    assert f"Vaultwatch-Client: ts-sdk-{sdk}-probe" in log


def readme_snippet(marker: str) -> str:
    """The shell snippet after `marker` in README.md, as a user would copy it."""
    text = (REPO / "README.md").read_text()
    block = text[text.index(marker) :]
    code = block[block.index("```sh") + 5 : block.index("```", block.index("```sh") + 5)]
    return code.replace("\\\n", " ").strip()


def test_claude_code_connects_with_the_readme_snippets(
    node: Path, home: Path, vault: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    stdio = readme_snippet("**Claude Code, stdio**")
    http = readme_snippet("**Claude Code, HTTP**")
    subst = {"/path/to/vaultwatch": str(REPO), "/path/to/notes": str(vault)}
    for a, b in subst.items():
        stdio, http = stdio.replace(a, b), http.replace(a, b)
    # The HTTP snippet names port 8765; serve there if free, else rewrite the snippet's port.
    server = HttpServer(vault)
    port = server.url.rsplit(":", 1)[1].split("/")[0]
    http = http.replace("http://127.0.0.1:8765/mcp", f"http://127.0.0.1:{port}/mcp")
    try:
        http = http.replace(" vaultwatch ", " vaultwatch-http ", 1)  # both in one config
        for snippet in (stdio, http):
            r = run(node, home, snippet, cwd=project, shell=True)
            assert r.returncode == 0, r.stderr
        r = run(node, home, "claude", "mcp", "list", cwd=project, timeout=180)
    finally:
        server.stop()
    assert r.returncode == 0, r.stderr
    lines = {ln.split(":")[0]: ln for ln in r.stdout.splitlines() if ":" in ln}
    assert "✔ Connected" in lines["vaultwatch"], r.stdout
    assert "✔ Connected" in lines["vaultwatch-http"], r.stdout
    assert server.token not in r.stdout + r.stderr


def test_claude_code_connects_with_the_dashboards_snippet(
    node: Path, home: Path, vault: Path, tmp_path: Path
) -> None:
    from app.services.supervisor import ServerSupervisor, snippets

    project = tmp_path / "project2"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    sup = ServerSupervisor(vault)
    try:
        url = sup.start()
        snippet = snippets(vault, url)["Claude Code (HTTP, this server)"]
        r = run(node, home, snippet, cwd=project, shell=True)
        assert r.returncode == 0, r.stderr
        r = run(node, home, "claude", "mcp", "list", cwd=project, timeout=180)
    finally:
        sup.stop()
    assert "vaultwatch: " in r.stdout and "✔ Connected" in r.stdout, r.stdout
