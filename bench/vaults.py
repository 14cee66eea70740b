"""A corpus of real public vaults, for links (issue 28): fetched into bench/.cache/vaults/ (never
committed: most have no license), then each checked as tests/test_vault_corpus.py checks the
committed slice: an independent reading of Obsidian's links (tests/link_oracle.py) before and
after a round of owner moves made with the app's move service, and health against it.

    uv run python -m bench.vaults            # fill the cache, check every vault
    uv run python -m bench.vaults --sample   # ... and print 20 of each finding, to check by hand
    uv run python -m bench --only vaults     # the same, from the bench

How the cache is filled, per vault, first that works:
1. bench/.cache/vaults/<name>/ exists: used as it is;
2. a git mirror of the repository at $VAULTWATCH_MIRROR/<owner>+<name>/repo (default
   /work/.mirror, where the sessions' `fetch` tool puts GitHub repositories): its HEAD is
   extracted with `git archive`;
3. `git clone --depth 1 https://github.com/<owner>/<name>` (needs the network).
A vault that cannot be had is reported and skipped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache" / "vaults"
MIRROR = Path(os.environ.get("VAULTWATCH_MIRROR", "/work/.mirror"))


@dataclass(frozen=True)
class Corpus:
    name: str
    repo: str  # owner/name on GitHub
    folder: str  # the vault inside the repository ("" for its root)
    license: str  # "none" for no license: cache only, never committed
    what: str


VAULTS = (
    Corpus(
        "obsidian-hub",
        "obsidian-community/obsidian-hub",
        "",
        "none",
        "6,500 notes, wikilinks, emoji and dotted names (🗂️ 03.01 Structure)",
    ),
    Corpus("obsidian-help", "obsidianmd/obsidian-help", "en", "none", "Obsidian's own help"),
    Corpus(
        "wwpkx-it",
        "wwpkx/Obsidian",
        "IT",
        "none",
        "Chinese, markdown links (.obsidian/app.json), relative paths with %20",
    ),
    Corpus(
        "javaguide",
        "Snailclimb/JavaGuide",
        "docs",
        "Apache-2.0",
        "Chinese, 430 notes, markdown links relative and from the site's root",
    ),
    Corpus(
        "advanced-java",
        "doocs/advanced-java",
        "",
        "CC-BY-SA-4.0",
        "Chinese, relative markdown links (a slice is committed: tests/advanced_java)",
    ),
)


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def _extract(mirror: Path, folder: str, dest: Path) -> int:
    """HEAD's files under `folder` written into `dest` (as `git archive` would, but a mirror
    may lack its largest blobs: those are left out and counted)."""
    listing = _git("--git-dir", str(mirror), "ls-tree", "-r", "-z", "HEAD", "--", folder or ".")
    rows = []
    for item in listing.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in ("100644", "100755"):
            rows.append((sha, path))
    skipped = 0
    with subprocess.Popen(
        ["git", "--git-dir", str(mirror), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for sha, path in rows:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            head = proc.stdout.readline().split()
            if len(head) < 3 or head[1] != b"blob":
                skipped += 1
                continue
            data = proc.stdout.read(int(head[2]) + 1)[:-1]
            out = dest / path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        proc.stdin.close()
    return skipped


def fill(c: Corpus) -> Path | None:
    """The vault's folder in the cache, filled from the mirror or the network if need be."""
    dest = CACHE / c.name
    if dest.is_dir() and any(dest.iterdir()):
        return dest
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        got = Path(tmp) / "repo"
        got.mkdir()
        mirror = MIRROR / c.repo.replace("/", "+") / "repo"
        if mirror.is_dir():
            skipped = _extract(mirror, c.folder, got)
            if skipped:
                print(f"  {c.name}: {skipped} files absent from the mirror (its largest) left out")
        else:
            shutil.rmtree(got)
            clone = _git("clone", "-q", "--depth", "1", f"https://github.com/{c.repo}", str(got))
            if clone.returncode != 0:
                print(
                    f"  {c.name}: not cached, no mirror at {mirror}, and git clone failed "
                    f"({clone.stderr.decode().strip()[:120]}): skipped"
                )
                return None
            shutil.rmtree(got / ".git", ignore_errors=True)
        src = got / c.folder if c.folder else got
        if not src.is_dir():
            print(f"  {c.name}: {c.folder}/ is not in {c.repo}: skipped")
            return None
        shutil.move(str(src), dest)
    return dest


def check(c: Corpus, src: Path, sample: bool) -> dict[str, object]:
    """The corpus test on a copy of the cached vault (a git repo of its own)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests import link_oracle as oracle

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / c.name
        shutil.copytree(src, root, ignore=shutil.ignore_patterns(".git"))
        oracle.make_repo(root)
        notes = sum(1 for f in oracle.vault_files(root) if f.lower().endswith(".md"))
        before = oracle.scan(root)
        t0 = time.perf_counter()
        found = oracle.health_findings(root, before)
        health_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        moved = oracle.owner_moves(root, before)
        moves_s = time.perf_counter() - t0
        after = oracle.scan(root)
        broken_by_moves = oracle.broken_by_moves(before, after, moved)
    row: dict[str, object] = {
        "vault": c.name,
        "notes": notes,
        "links": before.count,
        "broken_before": len(before.broken()),
        "moved_files": len(moved),
        "broken_by_moves": len(broken_by_moves),
        "broken_after": len(after.broken()),
        "health_broken": len(found["broken"]),
        "health_orphans": len(found["orphans"]),
        "false_broken": len(found["false_broken"]),
        "false_orphans": len(found["false_orphans"]),
        "missed_broken": len(found["missed_broken"]),
        "health_s": round(health_s, 2),
        "moves_s": round(moves_s, 1),
    }
    print("  " + "  ".join(f"{k} {v}" for k, v in row.items()))
    for label, items in (
        ("links broken by the moves", broken_by_moves),
        ("false broken links", found["false_broken"]),
        ("false orphans", found["false_orphans"]),
        ("broken links health missed", found["missed_broken"]),
    ):
        for item in items[:5]:
            print(f"    {label}: {item}")
    if sample:
        for label in ("broken", "orphans"):
            step = max(1, len(found[label]) // 20)
            print(f"    sample of health's {label} (every {step}th), to check by hand:")
            for item in found[label][::step][:20]:
                print(f"      {item}")
    return row


def run(sample: bool = False, only: list[str] | None = None) -> list[dict[str, object]]:
    os.environ.setdefault("VAULTWATCH_SEMANTIC", "off")  # links only: no model is loaded
    rows = []
    for c in VAULTS:
        if only and c.name not in only:
            continue
        print(f"\nvault {c.name} ({c.repo}/{c.folder}; license {c.license}): {c.what}")
        src = fill(c)
        if src is not None:
            rows.append(check(c, src, sample))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.vaults")
    ap.add_argument("--sample", action="store_true", help="print 20 of each finding")
    ap.add_argument("--fetch-only", action="store_true")
    ap.add_argument("names", nargs="*", help="only these vaults")
    args = ap.parse_args()
    if args.fetch_only:
        for c in VAULTS:
            print(c.name, fill(c))
        return
    run(args.sample, args.names)


if __name__ == "__main__":
    main()
