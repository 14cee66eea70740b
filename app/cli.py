"""`vaultwatch review|revert|mv|rm|reads|context`: the dashboard's owner services from the shell, without
Textual. Each exits 0 when done and 1 with a one-line reason (on stderr) when it refuses, and
a refusal writes nothing.

    vaultwatch review [VAULT] [PATH] [--since last|today|7d|YYYY-MM-DD|REV] [--json | --markdown]
    vaultwatch review [VAULT] --mark-reviewed [PATH ...]
    vaultwatch revert [VAULT] SHA [--path PATH] [--json]
    vaultwatch undo [VAULT] SHA --path PATH --hunk N [--json]
    vaultwatch mv [VAULT] SRC DST [--dry-run] [--json]
    vaultwatch rm [VAULT] PATH [--yes] [--json]
    vaultwatch reads [VAULT] [--days N] [--json]
    vaultwatch context [VAULT] [--diff] [--mark-reviewed] [--json]
    vaultwatch stats [VAULT] [--since today|7d|4w|YYYY-MM-DD|REV] [--json]
    vaultwatch health [VAULT] [--json] [--include-ignored]
    vaultwatch transcribe [VAULT] FILE [--model NAME|PATH] [--language en|zh|auto] [--json]
                          [--into NOTE]
    vaultwatch feedback add [VAULT] PATH -m TEXT [--line N] [--commit SHA]
    vaultwatch feedback list [VAULT] [--all] [--json]
    vaultwatch feedback close|reopen [VAULT] ID

VAULT defaults to the current folder. Which first word is a command: exactly one of these
names; a vault folder that has one of these names opens in the dashboard as `./review`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from app.services.actions import ActionError
from app.services.cell_wrap import cells, hanging
from app.services.history import Commit, FileChange
from app.services.wording import plural
from server.core.errors import VaultwatchError
from server.core.safetext import visible

if TYPE_CHECKING:
    from app.services.review import NetDiff, Review

COMMANDS = (
    "review",
    "revert",
    "undo",
    "mv",
    "rm",
    "stats",
    "health",
    "reads",
    "context",
    "transcribe",
    "feedback",
)


class Refused(VaultwatchError):
    """The one-line reason a command did nothing."""

    code = "refused"


def _vault(raw: str) -> Path:
    root = Path(raw).expanduser().absolute()
    if not root.is_dir():
        raise Refused(f"{raw} is not a folder")
    if not (root / ".git").exists():
        raise Refused(f"{raw} is not a vault with git history (open it once with vaultwatch)")
    return root


def _split(values: list[str], want: int, usage: str) -> tuple[str, list[str]]:
    """`[VAULT] A B`: the optional leading vault before `want` positionals."""
    if len(values) == want:
        return ".", values
    if len(values) == want + 1:
        return values[0], values[1:]
    raise Refused(f"usage: {usage}")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _who(c: Commit | None) -> str:
    """Who wrote (or removed) a line: the AI's commit with tool, client and time, or you."""
    if c is None:
        return ""
    if c.sha == "worktree":
        return "you: unsaved edit"
    if c.is_ai:
        return f"AI {c.short} {c.tool} · {c.client or '?'} · {c.time.astimezone():%m-%d %H:%M}"
    return f"you: {c.short}"


# -- review -----------------------------------------------------------------------------------


def _vault_and_path(where: list[str]) -> tuple[str, str | None]:
    """`review [VAULT] [PATH]`: one word is the vault when it is a folder with git history,
    else a note of the vault here; two are the vault and the note."""
    if not where:
        return ".", None
    if len(where) == 1:
        raw = Path(where[0]).expanduser()
        return (where[0], None) if (raw / ".git").exists() else (".", where[0])
    if len(where) == 2:
        return where[0], where[1]
    raise Refused("usage: vaultwatch review [VAULT] [PATH] (one note at a time)")


LISTED = "review-listed"  # in the state folder: the commit the last `vaultwatch review` listed at


def _listed(root: Path) -> str | None:
    """The commit the last listing was made at, if one was kept (a damaged file: none)."""
    from server.core.gitrepo import read_state, state_dir

    try:
        text = read_state(state_dir(root) / LISTED, limit=128).decode("ascii").strip()
    except (OSError, ValueError):
        return None
    return text or None


def _keep_listed(root: Path, sha: str) -> None:
    from server.core.gitrepo import state_dir, state_file

    with contextlib.suppress(OSError):  # a hint for --mark-reviewed, never a failure
        path = state_file(state_dir(root) / LISTED)
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "w") as fh:
            fh.write(sha + "\n")


def _review(args: argparse.Namespace) -> int:
    from app.services.review import _head, mark_reviewed, net_diffs, summaries

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


COLOURS = {"bold": "1", "cyan": "36", "yellow": "33", "green": "32", "red": "31"}


def _colour_on(choice: str) -> bool:
    """--color: always, never, or auto (a terminal, and NO_COLOR not set: no-color.org)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _painter(choice: str) -> Callable[[str, str], str]:
    """Every line through `visible` first (the AI's text may hold control characters: shown,
    never sent), then our own colour codes around it; `_page` writes past `_Shown`."""
    on = _colour_on(choice)

    def paint(colour: str, text: str) -> str:
        text = visible(text)
        return f"\x1b[{COLOURS[colour]}m{text}\x1b[0m" if on and colour else text

    return paint


def _terminal_width() -> int | None:
    """Rows are wrapped to the terminal's width on a terminal (CJK prose has no spaces for the
    pager to break at); piped, lines stay whole."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else None


def _page(text: str, choice: str) -> None:
    """On a terminal, through $PAGER (`less -R` by default, as git does: -F quits when it fits)
    when the text is taller than the screen; piped, as it is."""
    import shlex
    import shutil
    import subprocess

    rows = shutil.get_terminal_size((80, 24)).lines
    # the lines are made visible already (`_painter`): past `_Shown`, or our colours would be too
    raw = sys.stdout._out if isinstance(sys.stdout, _Shown) else sys.stdout
    if not sys.stdout.isatty() or text.count("\n") < rows:
        raw.write(text)
        return
    pager = os.environ.get("PAGER") or "less"
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # raw colours, quit if one screen, keep the screen after
    try:
        proc = subprocess.Popen(shlex.split(pager), stdin=subprocess.PIPE, env=env)
    except OSError:  # no such pager: print it
        raw.write(text)
        return
    assert proc.stdin is not None
    raw.flush()
    try:
        proc.stdin.write(text.encode("utf-8", "surrogateescape"))
        proc.stdin.close()
    except BrokenPipeError:  # the owner quit the pager early
        pass
    proc.wait()


# -- what the AI reads ---------------------------------------------------------------------------


def _reads(args: argparse.Namespace) -> int:
    from server.core.gitrepo import state_dir
    from server.services.reads import reads_report
    from server.vault import Vault
    from server.write.journal import read_all

    root = _vault(args.vault)
    if args.days < 1:
        raise Refused(f"--days must be 1 or more, not {args.days}")
    events = read_all(state_dir(root) / "events.jsonl")
    vault = Vault(root)
    try:
        report = reads_report(vault, events, args.days)
    finally:
        vault.close()
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False))
        return 0
    notes = f"{report.notes:,} note{'' if report.notes == 1 else 's'}"
    print(f"Most read ({len(report.most):,} of {notes} read; tokens: a read's share)")
    for n in report.most[:20]:
        last = f"{n.last:%Y-%m-%d %H:%M}" if n.last else "?"
        clients = ", ".join(n.clients)
        print(f"  {n.reads:>5}  ≈{round(n.tokens):>8,} tok  {last}  {n.path}  ({clients})")
    print()
    print(f"Not read in {report.days} days: {len(report.unread):,} of {notes}")
    for u in report.unread[:40]:
        last = f"last read {u.last:%Y-%m-%d}" if u.last else "never read"
        print(f"  {last:<20}  modified {u.modified:%Y-%m-%d}  {u.path}")
    if len(report.unread) > 40:
        print(f"  … {len(report.unread) - 40} more (--json lists all)")
    per = report.per_day
    print()
    print(f"Context cost per day, {per.days[0]} to {per.days[-1]} (≈ tokens, local days)")
    for i, d in reversed(list(enumerate(per.days))):
        if per.calls[i]:
            calls = "call " if per.calls[i] == 1 else "calls"
            print(f"  {d:%a %Y-%m-%d}  {per.calls[i]:>5} {calls}  ≈{per.tokens[i]:>9,} tok")
    for name, series in (("client", per.clients), ("tool", per.tools)):
        for k, v in series.items():
            print(f"  {name} {k}: ≈{sum(v):,} tok")
    return 0


def _context(args: argparse.Namespace) -> int:
    from app.services.context_preview import mark_reviewed, preview

    root = _vault(args.vault)
    p = preview(root)
    if args.mark_reviewed:
        mark_reviewed(root, p.text)
        if args.json:
            print(json.dumps({"marked": True, "chars": p.chars, "tokens": p.tokens}))
        else:
            print(f"context marked reviewed ({p.chars:,} chars ≈ {p.tokens:,} tokens)")
        return 0
    if args.json:
        print(json.dumps(p.as_json(), ensure_ascii=False))
        return 0
    seen = (
        f"last marked reviewed {p.reviewed_at:%Y-%m-%d %H:%M}"
        if p.reviewed_at
        else "never marked reviewed"
    )
    state = "changed since" if p.changed and p.reviewed_at else "" if p.changed else "unchanged"
    print(
        f"get_context now: {p.chars:,} chars ≈ {p.tokens:,} tokens · {seen}"
        + (f" · {state}" if state else "")
    )
    if args.diff:
        for line in p.diff():
            print(line)
        return 0
    print()
    for line in p.lines:
        print(line)
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


# -- revert, mv, rm -----------------------------------------------------------------------------


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
    from app.services.review import hunk_text, net_diff, plan_undo, undo_hunk

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
    from app.services.file_actions import apply_move
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
    from app.services.file_actions import apply_remove
    from app.services.owner_flows import apply_plan, delete_preview

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


# -- stats ------------------------------------------------------------------------------------


def _stats(args: argparse.Namespace) -> int:
    from app.services.recording_trend import trend_table, weekly
    from app.services.stats import client_table, compute, describe, measure_table, week_table

    root = _vault(args.vault)
    stats = compute(root, args.since)
    recorded = weekly(root, stats.start.date() if stats.start else None)
    if args.json:
        out = {**stats.as_json(), "recordings": [r.as_json() for r in recorded]}
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(f"Write statistics · {describe(stats)}")
    quiet = sum(1 for w in stats.weeks if w.quiet)
    for title, (headings, rows) in (
        (
            "per week" + (f" ({plural(quiet, 'quiet week')} left out)" if quiet else ""),
            week_table(stats),
        ),
        ("trend", measure_table(stats)),
        ("per client", client_table(stats)),
        *([("practice recordings per week", trend_table(recorded))] if recorded else []),
    ):
        print(f"\n{title}")
        for line in _columns(headings, rows):
            print(f"  {line}".rstrip())
    return 0


def _columns(headings: list[str], rows: list[list[str | int]]) -> list[str]:
    """Aligned columns (counts right, text left), measured in terminal cells."""
    table = [headings, *[[f"{c:,}" if isinstance(c, int) else c for c in r] for r in rows]]
    right = [bool(rows) and isinstance(rows[0][i], int) for i in range(len(headings))]
    widths = [max(cells(r[i]) for r in table) for i in range(len(headings))]
    out = []
    for r in table:
        padded = []
        for i, cell in enumerate(r):
            pad = " " * (widths[i] - cells(cell))
            padded.append(pad + cell if right[i] else cell + pad)
        out.append("  ".join(padded))
    return out


# -- health -----------------------------------------------------------------------------------


def _health(args: argparse.Namespace) -> int:
    from server.services.health import TITLES, check_root

    root = _vault(args.vault)
    report = check_root(root, include_ignored=args.include_ignored)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 0
    for w in report.warnings:
        print(f"! {w}")
    hidden = (
        f", {len(report.ignored)} ignored (--include-ignored shows them)"
        if report.ignored and not args.include_ignored
        else ""
    )
    n = len(report.findings)
    print(f"{report.notes} notes · {n} finding{'' if n == 1 else 's'}{hidden}")
    ignored = {f.id for f in report.ignored}
    for kind, title in TITLES.items():
        found = report.by_kind(kind)
        if not found:
            continue
        print(f"\n{title} ({len(found)}) · {', '.join(found[0].actions)}")
        for f in found:
            where = f"{f.path}:{f.line}" if f.line else f.path
            what = f"{f.link}  " if f.link else ""
            mark = " [ignored]" if f.id in ignored else ""
            print(f"  {where}  {what}{f.reason}{mark}")
    return 0


# -- transcribe -------------------------------------------------------------------------------


def _transcribe(args: argparse.Namespace) -> int:
    from app.services.recordings import measure_file, write_into
    from server.services.transcribe import TranscribeError

    raw_vault, (raw_file,) = _split(args.args, 1, "vaultwatch transcribe [VAULT] FILE")
    given = Path(raw_vault).expanduser().absolute()
    root = _vault(raw_vault) if raw_vault != "." or (given / ".git").exists() else None
    if args.into and root is None:
        raise Refused("--into needs a vault: run it in the vault's folder or name the vault")
    audio = Path(raw_file).expanduser()
    if not audio.is_absolute() and not audio.exists() and root is not None:
        audio = root / raw_file
    if not audio.is_file():
        raise Refused(f"{raw_file}: no such file; nothing was changed")
    try:
        m = measure_file(root, audio, model=args.model, language=args.language)
    except TranscribeError as exc:
        raise Refused(exc.message) from None
    sha = write_into(root, args.into, audio, m) if args.into and root is not None else None
    if args.json:
        print(json.dumps({**m, "commit": sha, "into": args.into}, ensure_ascii=False))
        return 0
    for line in _recording_lines(m):
        print(line)
    if sha:
        print(
            f"\nwritten into {args.into} (commit {sha[:8]}; `vaultwatch revert {sha[:8]}` takes it back)"
        )
    return 0


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}"


def _recording_lines(m: dict[str, Any]) -> list[str]:
    noun = "characters" if "char" in m["unit"] else "words"
    rate = f"{m['wpm']:g} {m['unit']}" if m["wpm"] is not None else "-"
    longest = f", longest {m['longest_pause_s']:g} s" if m["pauses"] else ""
    first = m["first_sentence_s"]
    rows = [
        ("speaking rate", f"{rate} ({m['words']:,} {noun} in {_clock(m['spoken_s'])})"),
        (
            f"long pauses ≥ {m['long_pause_s']:g} s",
            f"{m['long_pauses']}"
            + (f" ({m['long_pauses_per_min']:g}/min)" if m["long_pauses"] else "")
            + longest,
        ),
        ("first sentence", f"{first:g} s" if first is not None else "no full stop heard"),
        ("fillers", ", ".join(f"{k} ×{v}" for k, v in m["fillers"].items()) or "none heard"),
        (
            "pauses",
            " · ".join(f"{_clock(p['start'])} {p['seconds']:g} s" for p in m["pauses"]) or "none",
        ),
    ]
    width = max(cells(k) for k, _ in rows)
    head = f"{Path(m['file']).name} · {_clock(m['duration_s'])} · {m['language']} · {m['model']}"
    out = [head, *[f"{k}{' ' * (width - cells(k))}  {v}" for k, v in rows], "", "transcript"]
    out += [f"  [{_clock(s['start'])}] {s['text']}" for s in m["segments"] if s["text"]]
    return out


# -- feedback ---------------------------------------------------------------------------------


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


# -- the parser ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Usage errors are refusals too: exit 1 with one line."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {_one_line(message)}", file=sys.stderr)
        raise SystemExit(1)


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="vaultwatch", description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "review",
        help="the AI's changes per note, from the reviewed state",
        usage="vaultwatch review [VAULT] [PATH] [--since ...] [--json | --markdown] "
        "[--color auto|always|never]",
    )
    r.add_argument("where", nargs="*", metavar="[VAULT] [PATH]", help="the vault; one note only")
    r.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the diff (auto: on a terminal, unless NO_COLOR is set)",
    )
    r.add_argument(
        "--since",
        default="last",
        help="last (default: not yet reviewed), today, 7d, YYYY-MM-DD or a commit",
    )
    fmt = r.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--markdown", action="store_true", help="a digest for a weekly note")
    r.add_argument(
        "--mark-reviewed",
        nargs="*",
        metavar="PATH",
        help="mark the AI changes the last listing showed reviewed (all, or those to these notes)",
    )
    r.add_argument(
        "--upto",
        metavar="SHA",
        help="with --mark-reviewed: only the commits up to this one (the listing's, printed by review)",
    )
    # one SHA: `[VAULT] SHA [[VAULT] SHA ...]` (argparse's usage for nargs="+") offered several
    v = sub.add_parser(
        "revert",
        help="revert one AI commit as the owner",
        usage="vaultwatch revert [VAULT] SHA [--path PATH] [--json]",
    )
    v.add_argument("args", nargs="+", metavar="SHA", help="one commit (after the vault, if given)")
    v.add_argument("--path", help="only the commit's change to this note")
    v.add_argument("--json", action="store_true")
    u = sub.add_parser(
        "undo",
        help="undo the AI's lines in one hunk of a note's review diff (yours stay)",
        usage="vaultwatch undo [VAULT] SHA --path PATH --hunk N [--json]",
    )
    u.add_argument("args", nargs="+", metavar="SHA", help="an AI commit with lines in the hunk")
    u.add_argument("--path", required=True, help="the note")
    u.add_argument("--hunk", type=int, required=True, help="its number in `review PATH`")
    u.add_argument("--json", action="store_true")
    m = sub.add_parser("mv", help="move a note or folder, rewriting links to it")
    m.add_argument("args", nargs="+", metavar="[VAULT] SRC DST")
    m.add_argument("--dry-run", action="store_true", help="print the preview, change nothing")
    m.add_argument("--json", action="store_true")
    d = sub.add_parser("rm", help="delete a file (one commit; revert brings it back)")
    d.add_argument("args", nargs="+", metavar="[VAULT] PATH")
    d.add_argument("--yes", action="store_true", help="do not ask")
    d.add_argument("--json", action="store_true")
    rd = sub.add_parser("reads", help="the notes the AI reads most, not at all, and the cost")
    rd.add_argument("vault", nargs="?", default=".")
    rd.add_argument("--days", type=int, default=30, help="not read in N days (default 30)")
    rd.add_argument("--json", action="store_true")
    cx = sub.add_parser("context", help="what get_context gives a new conversation now")
    cx.add_argument("vault", nargs="?", default=".")
    cx.add_argument("--diff", action="store_true", help="only what changed since reviewed")
    cx.add_argument("--mark-reviewed", action="store_true", help="mark it as it is now reviewed")
    cx.add_argument("--json", action="store_true")
    st = sub.add_parser(
        "stats", help="AI and owner commits, reverts, conflicts, rejections per week"
    )
    st.add_argument("vault", nargs="?", default=".")
    st.add_argument("--since", help="the period (default: all history): " + _since_help())
    st.add_argument("--json", action="store_true")
    h = sub.add_parser("health", help="library health: problems, broken links, orphans, ...")
    h.add_argument("vault", nargs="?", default=".")
    h.add_argument("--json", action="store_true")
    h.add_argument(
        "--include-ignored", action="store_true", help="also list the findings you ignored"
    )
    tr = sub.add_parser(
        "transcribe", help="transcribe a recording locally; speaking rate, pauses, fillers"
    )
    tr.add_argument("args", nargs="+", metavar="[VAULT] FILE")
    tr.add_argument("--model", help="a Whisper model name or folder (default: the config's)")
    tr.add_argument("--language", choices=["en", "zh", "auto"], help="default: the config's")
    tr.add_argument("--json", action="store_true")
    tr.add_argument("--into", metavar="NOTE", help="write the figures into this note (a commit)")
    fb = sub.add_parser("feedback", help="your comments to the AI: add, list, close, reopen")
    fbs = fb.add_subparsers(dest="action", required=True)
    fa = fbs.add_parser("add", help="comment on a note; prints the new id")
    fa.add_argument("args", nargs="+", metavar="[VAULT] PATH")
    fa.add_argument("-m", "--message", required=True, help="what the AI should know or change")
    fa.add_argument("--line", type=int, help="the line it is about (1-based)")
    fa.add_argument("--commit", help="the commit it is about")
    fl = fbs.add_parser("list", help="open and answered feedback (--all: closed too)")
    fl.add_argument("args", nargs="*", metavar="VAULT")
    fl.add_argument("--all", action="store_true")
    fl.add_argument("--json", action="store_true")
    for name, what in (("close", "settled: the AI no longer sees it"), ("reopen", "open again")):
        fc = fbs.add_parser(name, help=what)
        fc.add_argument("args", nargs="+", metavar="[VAULT] ID")
    return ap


def command_help() -> list[tuple[str, str]]:
    """Each command and its one-line description, as `vaultwatch --help` lists them."""
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [(str(a.dest), str(a.help)) for a in sub._choices_actions]


def _since_help() -> str:
    from app.services.stats import SINCE_HELP

    return SINCE_HELP


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "review": _review,
    "revert": _revert,
    "undo": _undo,
    "mv": _mv,
    "rm": _rm,
    "reads": _reads,
    "context": _context,
    "stats": _stats,
    "health": _health,
    "transcribe": _transcribe,
    "feedback": _feedback,
}


class _Shown:
    """A text stream that shows control characters instead of sending them (safetext.visible):
    every line a command prints goes through it, whoever wrote the text (the AI's note text,
    titles and headings, commit subjects, paths)."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return int(self._out.write(visible(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


def run(argv: Sequence[str]) -> NoReturn:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Shown(out), _Shown(err)
    try:
        _run(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _run(argv: Sequence[str]) -> NoReturn:
    args = parser().parse_args(list(argv))
    try:
        code = HANDLERS[args.command](args)
        sys.stdout.flush()
    except (Refused, ActionError) as exc:
        print(f"vaultwatch {args.command}: {_one_line(str(exc))}", file=sys.stderr)
        raise SystemExit(1) from None
    except BrokenPipeError:
        # the reader stopped (`vaultwatch stats | head`): end quietly as git does, and point
        # stdout at /dev/null so the interpreter's own flush at exit cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(141) from None
    raise SystemExit(code)
