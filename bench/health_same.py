"""Every health finding but the near-duplicates, with the warnings, written to a JSON file: run
it before and after a change to health and compare the files (`cmp`), to show the findings
stayed the same. From the repository's root:

    uv run python -m bench.health_same /tmp/before.json   # on the old code
    uv run python -m bench.health_same /tmp/after.json    # on the new
    cmp /tmp/before.json /tmp/after.json

Vaults: tests/apisix_docs, the planted vault of tests/health_vault.py (its FILES, read from the
file: that module imports the test helpers) and the bench's cached 10,000-note vault when it is
there. Each is checked three times in one process, so what a check keeps for the next (in the
process, and on disk for the next process) is compared too.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

from server.services import health, health_links
from server.services.health import check
from server.vault import Vault

out: dict[str, object] = {}


def forget() -> None:
    """What a check keeps in this process, dropped: the next reads what it keeps on disk."""
    for cache in ("_CACHE", "_INDEXES"):
        getattr(health_links, cache, {}).clear()
    for cache in ("_PROBLEMS", "_PROBLEMS_CFG"):
        getattr(health, cache, {}).clear()


def dump(name: str, root: Path, dups: bool) -> int:
    v = Vault(root, client="vaultwatch-health")
    try:
        # the second reads whatever the first cached in this process; the third, as a new
        # process would, what the first kept on disk (when the code keeps anything there)
        for run in ("first", "again", "stored"):
            if run == "stored":
                forget()
            r = check(v, include_ignored=True, today=date(2026, 12, 5), duplicates=dups)
            out[f"{name}:{run}"] = [f.to_json() for f in r.findings] + r.warnings
    finally:
        v.close()
    return len(r.findings)


tmp = Path(tempfile.mkdtemp())
for name in ("apisix_docs",):
    dst = tmp / name
    shutil.copytree(Path("tests") / name, dst)
    subprocess.run(["git", "init", "-q", str(dst)], check=True)
    print(name, dump(name, dst, False))
# tests/health_vault.py's planted vault (its FILES and CONFIG, without its Pilot imports)
src = Path("tests/health_vault.py").read_text()
ns: dict[str, object] = {}
exec(src[src.index("CONFIG = ") : src.index("\n\n\n", src.index("FILES"))], ns)
hv = tmp / "health_vault"
files = ns["FILES"]
assert isinstance(files, dict)
for rel, body in files.items():
    f = hv / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(body if isinstance(body, bytes) else body.encode())
subprocess.run(["git", "init", "-q", str(hv)], check=True)
subprocess.run(["git", "-C", str(hv), "add", "-A"], check=True)
subprocess.run(
    ["git", "-C", str(hv), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    check=True,
)
print("health_vault", dump("health_vault", hv, False))
bench = Path("bench/.cache/vault-10000-7")
if bench.is_dir():
    print("bench", dump("bench", bench, False))
Path(sys.argv[1]).write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
shutil.rmtree(tmp)
