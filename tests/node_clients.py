"""Independent MCP clients from npm, installed once into a cache folder.

Node 22 itself comes from the npm package `node@22` (the machine has Node 20, and the current
Inspector needs 22.19+). Versions are pinned so a run tests what the notes say it tests. When
the npm registry cannot be reached the tests that need these are skipped with the reason.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

PACKAGES = {
    "node": "22",
    "@modelcontextprotocol/inspector": "2.12.0",
    "@modelcontextprotocol/sdk": "1.32.2",
    "@modelcontextprotocol/client": "2.4.0",
    "@anthropic-ai/claude-code": "2.1.332",
}
CACHE = Path(os.environ.get("VAULTWATCH_NODE_CACHE", Path.home() / ".cache" / "vaultwatch-node"))


class Unavailable(Exception):
    pass


def _installed(root: Path) -> bool:
    for name, version in PACKAGES.items():
        pkg = root / "node_modules" / name / "package.json"
        if not pkg.exists():
            return False
        got = json.loads(pkg.read_text())["version"]
        if not (got == version or got.startswith(version + ".")):
            return False
    return (root / "node_modules" / ".bin" / "node").exists()


def ensure() -> Path:
    """The cache folder with every package installed; raises Unavailable with the reason."""
    if shutil.which("npm") is None:
        raise Unavailable("npm is not installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time (xdist, parallel CI jobs)
        if _installed(CACHE):
            return CACHE
        (CACHE / "package.json").write_text(
            json.dumps({"name": "vaultwatch-test-clients", "private": True})
        )
        specs = [f"{n}@{v}" for n, v in PACKAGES.items()]
        r = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *specs],
            cwd=CACHE,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if r.returncode != 0:
            text = (r.stderr or r.stdout)[-600:]
            if any(
                w in text
                for w in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "network")
            ):
                raise Unavailable(f"npm registry unreachable: {text.strip()}")
            raise RuntimeError(f"npm install failed: {text}")
        if not _installed(CACHE):
            raise RuntimeError("npm install finished but the packages are not all there")
        return CACHE


def env(root: Path, home: Path) -> dict[str, str]:
    """An environment with Node 22 first on PATH and a throwaway HOME (clients write there)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "CLAUDE", "ANTHROPIC"))}
    e["PATH"] = f"{root / 'node_modules' / '.bin'}{os.pathsep}{e.get('PATH', '')}"
    e["HOME"] = str(home)
    e["DISABLE_AUTOUPDATER"] = "1"
    e["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    e["GIT_CONFIG_GLOBAL"] = os.devnull
    e["NO_COLOR"] = "1"
    return e
