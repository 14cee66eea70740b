"""`vaultwatch revert|undo|mv|rm`: the owner's file actions from the shell, with the dashboard's
checks and refusals."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from app.cli.common import Refused, _split, _vault
from app.services.history import FileChange


def _print_changes(changes: list[FileChange]) -> None:
    import difflib

    for ch in changes:
        old, new = ch.old.splitlines(keepends=True), ch.new.splitlines(keepends=True)
        name = f"{ch.old_path} → {ch.path}" if ch.old_path else ch.path
        print(f"== {name} ({ch.status})")
        # the first two lines are the file header; a removed line of the note's own that
        # starts with "--" (a YAML fence, a signature) reads "---" too and must stay
        for line in list(difflib.unified_diff(old, new, n=2))[2:]:
            print(line.rstrip("\n"))


def _revert(args: argparse.Namespace) -> int:
    from app.services.history import read_commits
    from app.services.revert import offered, revert

    vault, (sha,) = _split(
        args.args, 1, "vaultwatch revert [VAULT] SHA [--path PATH] (one commit at a time)"
    )
    if vault != "." and not Path(vault).expanduser().is_dir():
        raise Refused(
            f"{vault} is not a folder: revert takes one commit, `vaultwatch revert [VAULT] SHA`"
        )
    root = _vault(vault)
    # a commit id, checked before git sees it: `revert -- --output=FILE` reached git log as an
    # option and wrote the file (adversarial pass 3, N14)
    if not re.fullmatch(r"[0-9a-fA-F]{4,64}", sha):
        raise Refused(f"{sha!r} is not a commit id (4 to 40 hex digits, as review and git print)")
    c = next(iter(read_commits(root, limit=1, rev=f"{sha}^{{commit}}")), None)
    if c is None:
        raise Refused(f"{sha} is not a commit here")
    if not offered(c):
        raise Refused(
            f"{c.short} is your own edit: revert reverts AI commits and your "
            "dashboard actions; edit the note to change it back"
        )
    new = revert(root, [c.sha], args.path)
    if args.json:
        print(json.dumps({"reverted": c.sha, "commit": new, "path": args.path}))
    else:
        where = f" in {args.path}" if args.path else ""
        print(f"reverted {c.short}{where} as {new[:8]}")
    return 0


def _undo(args: argparse.Namespace) -> int:
    """The AI's lines in one hunk of a note's review diff taken back, as the dashboard's `u`
    does (the same service, the same refusals). SHA names an AI commit with lines in that hunk:
    the hunk is the one the owner read (`vaultwatch review PATH` numbers them)."""
    from app.services.net_diff import net_diff
    from app.services.review_undo import hunk_text, plan_undo, undo_hunk

    vault, (sha,) = _split(args.args, 1, "vaultwatch undo [VAULT] SHA --path PATH --hunk N")
    root = _vault(vault)
    diff = net_diff(root, args.path)
    if not 1 <= args.hunk <= len(diff.hunks):
        raise Refused(
            f"{args.path} has no hunk {args.hunk} to undo (it has {len(diff.hunks)}); "
            f"`vaultwatch review {args.path}` numbers them"
        )
    h = diff.hunks[args.hunk - 1]
    _, undone = plan_undo(diff, args.hunk - 1)  # the dashboard's refusals first, in its words
    ai = {c.sha for c in undone}
    if len(sha) < 4 or not any(c.startswith(sha) for c in ai):
        raise Refused(
            f"hunk {args.hunk} of {args.path} has no lines of {sha}; "
            f"`vaultwatch review {args.path}` shows whose lines each hunk has"
        )
    new = undo_hunk(root, args.path, args.hunk - 1, "last", hunk_text(h))
    if args.json:
        print(json.dumps({"undone_hunk": args.hunk, "path": args.path, "commit": new}))
    else:
        print(f"undid the AI's lines in hunk {args.hunk} of {args.path} as {new[:8]}")
    return 0


def _mv(args: argparse.Namespace) -> int:
    from app.services.move_action import apply_move
    from app.services.owner_flows import apply_plan, move_preview

    vault, (src, dst) = _split(args.args, 2, "vaultwatch mv [VAULT] SRC DST [--dry-run]")
    root = _vault(vault)
    plan, preview = move_preview(root, src, dst)
    if not args.json:
        _print_preview(preview.title, [ln.text for ln in preview.lines], preview.changes)
    if args.dry_run:
        if args.json:
            print(json.dumps({"dry_run": True, "moves": plan.moves, "edits": sorted(plan.edits)}))
        return 0
    done = apply_plan(root, apply_move, plan, "moved")
    return _outcome(args, done, {"moves": plan.moves, "edits": sorted(plan.edits)})


def _rm(args: argparse.Namespace) -> int:
    from app.services.owner_flows import apply_plan, delete_preview
    from app.services.remove_action import apply_remove

    vault, (path,) = _split(args.args, 1, "vaultwatch rm [VAULT] PATH [--yes]")
    root = _vault(vault)
    plan, preview = delete_preview(root, path)
    if not args.json:
        _print_preview(preview.title, [ln.text for ln in preview.lines], preview.changes)
    if not args.yes:
        if not sys.stdin.isatty() or args.json:
            raise Refused(f"{plan.path} not deleted: pass --yes to delete it")
        if input("Delete? [y/N] ").strip().lower() not in ("y", "yes"):
            raise Refused(f"{plan.path} not deleted")
    done = apply_plan(root, apply_remove, plan, "deleted")
    links = [{"note": s, "line": n, "link": t} for s, n, t in plan.backlinks]
    return _outcome(args, done, {"path": plan.path, "broken_links": links})


def _print_preview(title: str, lines: list[str], changes: list[FileChange]) -> None:
    print(title)
    for line in lines:
        print(f"  {line}" if line else "")
    _print_changes(changes)


def _outcome(args: argparse.Namespace, done: Any, extra: dict[str, Any]) -> int:
    if not done.ok:
        raise Refused(done.message)
    if args.json:
        print(json.dumps({"commit": done.sha, **extra}))
    else:
        print(done.message)
    return 0
