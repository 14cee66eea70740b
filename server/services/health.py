"""Library health: what in the vault needs the owner's look, each finding with a reason and what
can be done about it. A plain service (no MCP, no Textual): `vaultwatch health` and the
dashboard's health screen both call `check`.

Every rule comes from where it already lives: problems under the config are the write checks'
(`validate.problems`), links are parsed and resolved as the owner's move rewrites them
(`links`), "modified" is the vault's (last commit, or mtime for unsaved edits), "too big" is
read_doc's own budget (`reading.fits_one_read`), near-duplicates use the vectors recall already
stored (nothing is embedded here). Health never changes a note; the files it writes are the
ignore list, `.git/vaultwatch/health-ignore.json`, and its cache of each note's judgment,
`.git/vaultwatch/health.sqlite` (health_store.py).

Private notes never appear: they are not in the vault's note index, a link that resolves into a
private folder is neither a link nor a broken one, and a private note's own links are not read.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.core.gc_pause import gc_paused
from server.notes.config import Config
from server.notes.entry import Entry
from server.notes.superseded import DATE_FIELD, is_superseded
from server.services.health_duplicates import SAME_SUBJECT, _duplicates, _Near, _same_subject
from server.services.health_findings import KINDS, Finding, Report
from server.services.health_ignore import load_ignored
from server.services.health_links import _links, _parse_all, _Parsed
from server.services.health_store import Rows, config_digest
from server.services.supersede import successor
from server.write.validate import problems as note_problems

if TYPE_CHECKING:
    from server.vault import Vault


# Each note's problems under the config, per process, keyed by the note's path and content hash
# (a Doc is a pure function of its bytes, and `note_problems` of the Doc and the config): a
# re-check (the screen's `r`, its next opening, another check in the same process) judges only
# the notes that changed. Dropped whole when the config is not the one they were judged under.
_PROBLEMS: dict[tuple[str, str], tuple[str, list[Finding]]] = {}  # (root, path) -> (hash, ...)
_PROBLEMS_CFG: dict[str, Config] = {}  # vault root -> the config `_PROBLEMS` was judged under
_PROBLEMS_LOCK = threading.Lock()


def _problems(
    vault: Vault, cfg: Config, entries: dict[str, Entry], rows: Rows | None = None
) -> list[Finding]:
    root = str(vault.root)
    # loaded_at is when the file was read, not what it says: a fresh Vault reads the same file
    same = dataclasses.replace(cfg, loaded_at="")
    with _PROBLEMS_LOCK:
        if _PROBLEMS_CFG.get(root) != same:
            for k in [k for k in _PROBLEMS if k[0] == root]:
                del _PROBLEMS[k]
            _PROBLEMS_CFG[root] = same
        known = {k[1]: v for k, v in _PROBLEMS.items() if k[0] == root}
    digest: str | None = None
    found: list[Finding] = []
    fresh: dict[tuple[str, str], tuple[str, list[Finding]]] = {}
    for path, e in entries.items():
        hit = known.get(path)
        if hit is not None and hit[0] == e.doc.hash:
            found += hit[1]
            continue
        got: list[Finding] | None = None
        if rows is not None:  # judged by an earlier process, under the same config?
            if digest is None:
                digest = config_digest(cfg) or ""
            row = rows.get(path, e.doc.hash) if digest else None
            if row is not None and row.get("cfg") == digest:
                got = _stored_problems(path, row.get("problems"))
        if got is None:
            got = [
                Finding("problem", path, f"{pr.message} ({pr.hint})", code=pr.code, key=pr.key)
                for pr in note_problems(e.doc, cfg)
            ]
            if rows is not None:
                rows.fresh.add(path)
        fresh[(root, path)] = (e.doc.hash, got)
        found += got
    with _PROBLEMS_LOCK:
        if _PROBLEMS_CFG.get(root) == same:  # not judged under a config loaded meanwhile
            for k in [k for k in _PROBLEMS if k[0] == root and k[1] not in entries]:
                del _PROBLEMS[k]  # notes gone (deleted, moved, now private)
            _PROBLEMS.update(fresh)
    return found


def _stored_problems(path: str, stored: object) -> list[Finding] | None:
    """A note's problems as health.sqlite keeps them; None when they are not that form."""
    if not isinstance(stored, list):
        return None
    out = []
    for item in stored:
        if not (
            isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)
        ):
            return None
        out.append(Finding("problem", path, item[0], code=item[1], key=item[2]))
    return out


def _keep(
    vault: Vault,
    cfg: Config,
    entries: dict[str, Entry],
    parsed: dict[str, _Parsed],
    rows: Rows,
) -> None:
    """Write what this check judged afresh to health.sqlite (each note's row whole: its
    reading and its problems, both of the content the index has), and delete the rows of
    notes no longer in the index."""
    root = str(vault.root)
    digest = config_digest(cfg)
    with _PROBLEMS_LOCK:
        judged = {p: _PROBLEMS.get((root, p)) for p in rows.fresh}
    put: dict[str, tuple[str, dict[str, Any]]] = {}
    for path, problems in judged.items():
        e, p = entries.get(path), parsed.get(path)
        if e is None or p is None or problems is None or digest is None:
            continue
        if not (p.hash == e.doc.hash == problems[0]):
            continue  # changed on disk while it was judged: the next check judges it again
        row = p.row()
        row["cfg"] = digest
        row["problems"] = [[f.reason, f.code or "", f.key or ""] for f in problems[1]]
        put[path] = (e.doc.hash, row)
    rows.finish(entries, put)


def _age_days(e: Entry, today: date) -> int:
    return (today - e.modified.date()).days


def check(
    vault: Vault,
    *,
    include_ignored: bool = False,
    today: date | None = None,
    duplicates: bool = True,
) -> Report:
    """Every finding in the vault now. Reads only; writes nothing. `duplicates=False` leaves
    the near-duplicates out (`with_duplicates` adds them): the screen shows the rest first."""
    started = time.monotonic()
    # the notes read once for the whole check: each vault.entries() walks the vault again
    entries = vault.entries()
    with gc_paused():  # thousands of findings and parsed notes made at once (gc_pause.py)
        found, warnings = _findings(vault, today or date.today(), entries)
    report = _report(vault, found, warnings, include_ignored, started, len(entries))
    if not duplicates:
        return report
    return with_duplicates(vault, report, include_ignored=include_ignored, entries=entries)


def with_duplicates(
    vault: Vault,
    report: Report,
    *,
    include_ignored: bool = False,
    entries: dict[str, Entry] | None = None,
) -> Report:
    """`report` (made with `duplicates=False`) with the near-duplicates added (`entries`: the
    notes the report was made of, when the caller has them; read again otherwise)."""
    started = time.monotonic() - report.seconds
    seen = {f.id for f in report.findings}
    found = report.findings + [f for f in report.ignored if f.id not in seen]
    entries = vault.entries() if entries is None else entries
    threshold = vault.config.health.duplicate_score
    sem = vault.semantic() if vault.semantic_wanted() else None
    near = _Near(sem, [threshold, SAME_SUBJECT]) if sem is not None else None
    dups, warning, checked, unlisted = _duplicates(vault, entries, threshold, near)
    warnings = [*report.warnings, *([warning] if warning else [])]
    dups += _same_subject(vault, entries, near) if checked else []
    out = _report(vault, found + dups, warnings, include_ignored, started, len(entries))
    out.duplicates_checked, out.duplicates_unlisted = checked, unlisted
    return out


def _findings(
    vault: Vault, today: date, entries: dict[str, Entry]
) -> tuple[list[Finding], list[str]]:
    """Every finding but the near-duplicates, and the warnings so far."""
    cfg: Config = vault.config
    hc = cfg.health
    warnings: list[str] = []
    if vault.config_notice:
        warnings.append(vault.config_notice)
    warnings += [f"health config: {p}" for p in cfg.health_problems]
    limit = cfg.limits.result_chars
    rows = Rows(vault.root)  # health.sqlite, read only if this process has not judged a note
    parsed = _parse_all(vault, entries, limit, rows)
    found: list[Finding] = _problems(vault, cfg, entries, rows)
    _keep(vault, cfg, entries, parsed, rows)

    broken, incoming, linking = _links(vault, parsed)
    found += broken

    owners = {p.casefold() for p in cfg.protected_paths()}
    for path, e in entries.items():
        age = _age_days(e, today)
        if (
            age >= hc.orphan_days
            and not incoming.get(path)
            and path not in linking
            and path.casefold() not in owners
        ):
            found.append(
                Finding(
                    "orphan",
                    path,
                    f"no note links to it and it links to none; unchanged for {age} days",
                    days=age,
                )
            )

    for path, e in entries.items():
        rule = hc.stale_rule(e.type)
        status = e.doc.frontmatter.get(rule.field)
        if not isinstance(status, str) or status.strip().casefold() not in {
            s.casefold() for s in rule.open
        }:
            continue
        age = _age_days(e, today)
        if age >= rule.days:
            found.append(
                Finding(
                    "stale",
                    path,
                    f"{rule.field}: {status} and unchanged for {age} days "
                    f"(since {e.modified.date().isoformat()}; stale after {rule.days})",
                    days=age,
                )
            )

    for path, p in parsed.items():
        if not p.fits:
            found.append(
                Finding(
                    "too_big",
                    path,
                    f"{p.chars:,} chars: more than one read_doc returns under "
                    f"limits.result_chars ({limit:,}); the AI reads it in parts",
                )
            )

    found += _superseded(entries)
    return found, warnings


def _superseded(entries: dict[str, Entry]) -> list[Finding]:
    """Notes marked superseded: the AI no longer finds them; the owner deletes them when ready."""
    out = []
    for path, e in entries.items():
        fm = e.doc.frontmatter
        if not is_superseded(fm):
            continue
        by = successor(fm, entries)
        when = fm.get(DATE_FIELD)
        out.append(
            Finding(
                "superseded",
                path,
                f"superseded by {by or 'a note that is not in the vault'}"
                + (f" on {when}" if when not in (None, "") else "")
                + ": the AI no longer finds it; delete it when you no longer need it",
                other=None,
            )
        )
    return out


def _report(
    vault: Vault,
    found: list[Finding],
    warnings: list[str],
    include_ignored: bool,
    started: float,
    notes: int,
) -> Report:
    """The findings one per id, in order, the ignored ones set apart (or marked)."""
    ignored_ids, ignore_warning = load_ignored(vault.root)
    if ignore_warning:  # last, and once (`with_duplicates` passes the first report's on)
        warnings = [w for w in warnings if w != ignore_warning] + [ignore_warning]
    # one finding per id: the id is what the screen keys its rows by and what an ignore names
    firsts: dict[str, Finding] = {}
    for f in found:
        firsts.setdefault(f.id, f)
    found = list(firsts.values())
    order = {k: i for i, k in enumerate(KINDS)}
    found.sort(
        key=lambda f: (order[f.kind], -(f.rank or f.score or 0), f.path, f.other or "", f.line or 0)
    )
    ignored = [f for f in found if f.id in ignored_ids]
    shown = found if include_ignored else [f for f in found if f.id not in ignored_ids]
    return Report(
        notes=notes,
        findings=shown,
        ignored=ignored,
        warnings=warnings,
        seconds=time.monotonic() - started,
    )


def check_root(root: Path, *, include_ignored: bool = False, today: date | None = None) -> Report:
    """`check` on the vault at `root`, opened and closed here (the CLI and the screen)."""
    from server.vault import Vault

    vault = Vault(root, client="vaultwatch-health")
    try:
        return check(vault, include_ignored=include_ignored, today=today)
    finally:
        vault.close()
