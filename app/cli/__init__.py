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
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from app.cli.common import Refused, _one_line, _Shown
from app.cli.feedback import _feedback
from app.cli.files import _mv, _revert, _rm, _undo
from app.cli.insights import _context, _health, _reads, _stats
from app.cli.recordings import _transcribe
from app.cli.review import _review
from app.services.actions import ActionError
from server.core.state_files import StateLinked

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
    except (Refused, ActionError, StateLinked) as exc:  # a state link: refused, as any
        print(f"vaultwatch {args.command}: {_one_line(str(exc))}", file=sys.stderr)
        raise SystemExit(1) from None
    except BrokenPipeError:
        # the reader stopped (`vaultwatch stats | head`): end quietly as git does, and point
        # stdout at /dev/null so the interpreter's own flush at exit cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(141) from None
    raise SystemExit(code)
