"""`vaultwatch feedback add|list|close|reopen`: the owner's feedback to the AI from the shell."""

from __future__ import annotations

import argparse
import json

from app.cli.common import Refused, _one_line, _split, _vault


def _feedback(args: argparse.Namespace) -> int:
    from app.services.feedback import add_feedback, close_feedback, list_feedback, reopen_feedback

    if args.action == "add":
        vault, (path,) = _split(args.args, 1, "vaultwatch feedback add [VAULT] PATH -m TEXT")
        if args.line is not None and args.line < 1:
            raise Refused(f"--line {args.line}: lines count from 1")
        item = add_feedback(_vault(vault), path, args.message, line=args.line, commit=args.commit)
        print(item.id)
        return 0
    if args.action == "list":
        if len(args.args) > 1:
            raise Refused("usage: vaultwatch feedback list [VAULT] [--all] [--json]")
        items = list_feedback(_vault(args.args[0] if args.args else "."), include_closed=args.all)
        if args.json:
            print(json.dumps({"feedback": [i.public() for i in items]}, ensure_ascii=False))
            return 0
        if not items:
            print("no feedback" + ("" if args.all else " open or answered (--all: closed too)"))
        for i in items:
            where = f"{i.path}:{i.lines}" if i.lines else i.path
            by = f" by {i.answered_by[:8]}" if i.answered_by else ""
            print(f"{i.id}  {i.status}{by}  {where}  {_one_line(i.text)}")
        return 0
    usage = f"vaultwatch feedback {args.action} [VAULT] ID"
    vault, (fid,) = _split(args.args, 1, usage)
    done = (close_feedback if args.action == "close" else reopen_feedback)(_vault(vault), fid)
    print(f"{done.id} {done.status}")
    return 0
