"""`vaultwatch review`: what the AI changed since the owner last looked, as `git log -p` shows it;
`--markdown` for a digest, `--json` for tools, `--mark-reviewed` to mark it seen."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.common import Refused, _page, _painter, _terminal_width, _vault, _vault_and_path, _who
from app.services.cell_wrap import hanging
from app.services.wording import plural

if TYPE_CHECKING:
    from app.services.net_diff import NetDiff
    from app.services.review import Review


LISTED = "review-listed"  # in the state folder: the commit the last `vaultwatch review` listed at


def _listed(root: Path) -> str | None:
    """The commit the last listing was made at, if one was kept (a damaged file: none)."""
    from server.core.state_files import read_state, state_dir

    try:
        text = read_state(state_dir(root) / LISTED, limit=128).decode("ascii").strip()
    except (OSError, ValueError):
        return None
    return text or None


def _keep_listed(root: Path, sha: str) -> None:
    from server.core.state_files import state_dir, state_file

    with contextlib.suppress(OSError):  # a hint for --mark-reviewed, never a failure
        path = state_file(state_dir(root) / LISTED)
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "w") as fh:
            fh.write(sha + "\n")


def _review(args: argparse.Namespace) -> int:
    from app.services.net_diff import _head, net_diffs
    from app.services.review import mark_reviewed, summaries

    args.vault, args.path = _vault_and_path(args.where)
    root = _vault(args.vault)
    if args.mark_reviewed is not None:
        # what the owner saw: the commit named, else the last listing's (a change that landed
        # after it stays unreviewed), else everything up to now
        upto: str | None = args.upto or _listed(root)
        count, paths = mark_reviewed(root, args.mark_reviewed or None, upto)
        if args.json:
            print(json.dumps({"marked_commits": count, "paths": paths}))
        else:
            print(f"marked {plural(count, 'AI commit')} reviewed in {plural(len(paths), 'note')}")
            # with no notes named, what is still unreviewed is what came after the listing
            left = summaries(root).unreviewed_commits if upto and not args.mark_reviewed else 0
            if left and upto:
                print(
                    f"{plural(left, 'AI commit')} not marked: they landed after the listing at "
                    f"{upto[:12]}; run `vaultwatch review` to see them"
                )
        return 0
    if args.upto:
        raise Refused("--upto goes with --mark-reviewed")
    tip = _head(root)  # the listing is of exactly these commits, whatever lands meanwhile
    review = summaries(root, args.since, upto=tip)
    if tip:
        _keep_listed(root, tip)
    if review.warning:
        print(f"vaultwatch review: warning: {review.warning}", file=sys.stderr)
    if args.path:
        one = [n for n in review.notes if n.path == args.path]
        if not one:
            raise Refused(
                f"{args.path}: no AI changes to review"
                + ("" if args.since != "last" else " (--since today|7d shows reviewed ones)")
            )
        review = dataclasses.replace(review, notes=one)
    diffs = net_diffs(root, review.notes)
    if args.json:
        notes = []
        for n, d in zip(review.notes, diffs, strict=True):
            notes.append(
                {
                    "path": n.path,
                    "title": n.title,
                    "commits": [c.sha for c in n.commits],
                    "added": d.added,
                    "removed": d.removed,
                    "tools": n.tools,
                    "clients": n.clients,
                    "first": n.first.isoformat(),
                    "last": n.last.isoformat(),
                    "reviewed": n.reviewed,
                    "diff": d.unified(),
                    "binary": d.binary,
                    "lines": [
                        {
                            "kind": ln.kind,
                            "text": ln.text,
                            "commit": ln.commit.sha if ln.commit else None,
                            "owner": ln.owner,
                        }
                        for h in d.hunks
                        for ln in h.lines
                        if ln.kind != " "
                    ],
                }
            )
        out = {
            "since": args.since,
            "unreviewed_commits": review.unreviewed_commits,
            "warning": review.warning,
            "upto": tip,
        }
        print(json.dumps({**out, "notes": notes}, ensure_ascii=False))
        return 0
    if args.markdown:
        print(_digest(review, diffs, _private_now(root)))
        return 0
    what = "unreviewed" if args.since == "last" else f"since {args.since}"
    paint = _painter(args.color)
    wrap = _terminal_width()
    shown = [
        paint(
            "",
            f"{plural(review.unreviewed_commits, 'unreviewed AI commit')}; "
            f"{plural(len(review.notes), 'note')} with AI changes ({what})",
        )
    ]
    for n, d in zip(review.notes, diffs, strict=True):
        shown.append("")
        mark = "  (reviewed)" if n.reviewed and args.since != "last" else ""
        shown.append(paint("bold", f"{n.path} — {n.title}{mark}"))
        shown.append(
            paint(
                "",
                f"  {plural(len(n.commits), 'AI commit')}, +{d.added} −{d.removed}, "
                f"{', '.join(n.tools)} · {', '.join(n.clients)}, "
                f"{n.first.astimezone():%Y-%m-%d %H:%M} – {n.last.astimezone():%Y-%m-%d %H:%M}",
            )
        )
        for i, h in enumerate(d.hunks, 1):
            shown.append(paint("cyan", f"  {h.header}  hunk {i} of {len(d.hunks)}"))
            run: object = None  # whose lines these are: said once above each run, as git blame
            for ln in h.lines:
                text = ln.text.rstrip("\n")
                colour = {"+": "green", "-": "red"}.get(ln.kind, "")
                if ln.kind == " ":
                    run = None
                else:
                    who = _who(ln.commit)
                    if who != run:
                        shown.append(paint("yellow", f"  ┌ {who}"))
                        run = who
                # the gutter once per line: a wrapped row is not another changed line
                shown += [paint(colour, row) for row in hanging(f"  {ln.kind} ", text, wrap)]
    if review.notes and tip:
        shown.append("")
        shown.append(
            paint(
                "",
                f"mark exactly these reviewed: vaultwatch review --mark-reviewed --upto {tip[:12]}",
            )
        )
    _page("\n".join(shown) + "\n", args.color)
    return 0


def _private_now(root: Path) -> Callable[[str], bool]:
    """Whether a path is private under the vault's rules now (a config that does not load:
    the last good rules, or every path, as the server reads them)."""
    from server.vault import Vault

    vault = Vault(root)
    try:
        return vault.policy.is_private
    finally:
        vault.close()


def _digest(
    review: Review, diffs: list[NetDiff], private: Callable[[str], bool] = lambda _: False
) -> str:
    """Markdown the owner can paste into a weekly note. A weekly note is one the AI reads: a
    note private now is left out, name, title and diff (adversarial pass 3, N8), and counted."""
    what = "not yet reviewed" if review.since == "last" else f"since {review.since}"
    out = [f"## AI changes {what}", ""]
    shown = [(n, d) for n, d in zip(review.notes, diffs, strict=True) if not private(n.path)]
    hidden = len(review.notes) - len(shown)
    out.append(
        f"{plural(len(review.notes), 'note')}, "
        f"{plural(review.unreviewed_commits, 'unreviewed AI commit')}."
    )
    if hidden:
        out.append(f"{hidden} of them private: left out here (`vaultwatch review` shows them).")
    out.append("")
    for n, d in shown:
        stem = Path(n.path).with_suffix("").as_posix()
        out.append(f"### [[{stem}|{n.title}]]")
        out.append("")
        out.append(f"- `{n.path}`: {plural(len(n.commits), 'AI commit')}, +{d.added} −{d.removed}")
        out.append(
            f"- by {', '.join(n.clients) or '?'} with {', '.join(n.tools)}, "
            f"{n.first.astimezone():%Y-%m-%d %H:%M} – {n.last.astimezone():%Y-%m-%d %H:%M}"
        )
        owner = sum(1 for h in d.hunks for ln in h.lines if ln.kind != " " and ln.owner)
        if owner:
            out.append(f"- {plural(owner, 'changed line')} in this span are yours")
        out += ["", "```diff", d.unified().rstrip("\n"), "```", ""]
    return "\n".join(out)
