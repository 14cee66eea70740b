"""`vaultwatch reads|context|stats|health`: what the AI reads, what it is told first, what it
wrote, and the library's health."""

from __future__ import annotations

import argparse
import json

from app.cli.common import Refused, _columns, _vault
from app.services.wording import plural


def _reads(args: argparse.Namespace) -> int:
    from server.core.state_files import state_dir
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


def _health(args: argparse.Namespace) -> int:
    from server.services.health import check_root
    from server.services.health_findings import TITLES

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
