"""The detail pane's text for a row that is not a diff to load: a refused write with what the AI
tried, a conflict with what changed between the AI's read and its write, and the no-op, server,
config and snapshot events in words (they were dumps of the event's dict)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from textual.content import Content

from app.services.feed import Row, event_paths
from app.services.history import FileChange, file_versions
from app.ui.widgets.diffview import render_unified
from app.ui.widgets.timeline import KIND_STYLE, REVERTED_MARK
from server.notes.note import content_hash
from server.write.journal import event_time

BOLD = "bold"


def _when(e: dict[str, Any]) -> datetime | None:
    return event_time(e)


def _stamp(e: dict[str, Any]) -> str:
    at = _when(e)
    return f"{at.astimezone():%Y-%m-%d %H:%M:%S}" if at else str(e.get("ts", ""))


def _paths(e: dict[str, Any]) -> str:
    return ", ".join(event_paths(e)) or "(no note)"


def commit_header(row: Row) -> list[Content]:
    c = row.commit
    assert c is not None
    lines = [
        Content.styled(f"{c.short}  {c.subject}", BOLD),
        Content(f"{c.author} <{c.email}>  {c.time.astimezone():%Y-%m-%d %H:%M:%S}"),
    ]
    if c.tool:
        lines.append(Content(f"tool {c.tool} · client {c.client}"))
    if c.action == "snapshot":
        lines.append(
            Content(
                "Your uncommitted edits to these notes, saved as your own commit "
                "before the AI wrote to them, so its commit holds only its change."
            )
        )
    elif c.action:
        lines.append(Content(f"action {c.action}"))
    if c.reverts:
        lines.append(Content(f"reverts {', '.join(s[:8] for s in c.reverts)}"))
    if row.reverted_by:
        lines.append(
            Content.styled(f"{REVERTED_MARK} by {row.reverted_by[:8]}", "bold $text-warning")
            + Content(f" (r on {row.reverted_by[:8]} brings this change back)")
        )
    return lines


def _diff_lines(text: str) -> list[Content]:
    out = []
    for line in text.splitlines():
        style = (
            "$text-success"
            if line.startswith("+")
            else "$text-error"
            if line.startswith("-")
            else ""
        )
        out.append(Content.styled(line, style) if style else Content(line))
    return out


def event_detail(row: Row, root: Path | None = None) -> Content:
    e: dict[str, Any] = row.event or {}
    kind = str(e.get("kind", ""))
    head = [
        Content.styled(f"{row.kind}  {row.who}", f"{BOLD} " + KIND_STYLE.get(row.kind, "")),
        Content(f"{_stamp(e)} · server pid {e.get('pid')}"),
        Content(""),
    ]
    return Content("\n").join(head + _body(kind, e, root))


def _body(kind: str, e: dict[str, Any], root: Path | None) -> list[Content]:
    tool, paths = e.get("tool") or "?", _paths(e)
    if kind == "rejected":
        tried = _diff_lines(str(e.get("diff") or ""))
        return [
            Content(f"{tool} on {paths} was refused; nothing was written."),
            Content(""),
            Content.styled("reason", BOLD),
            Content(f"{e.get('code')}: {e.get('message', '')}"),
            Content.styled("hint given to the AI", BOLD),
            Content(str(e.get("hint", ""))),
            Content.styled("what it tried (not written)", BOLD),
            *(tried or [Content("(this event is from before the journal kept attempts)")]),
        ]
    if kind == "conflict":
        return conflict_lines(e, root)
    if kind == "noop":
        return [
            Content(
                f"{tool} on {paths} asked for what the note already says: no change, no commit."
            )
        ]
    if kind == "server_started":
        mode = "read-only" if e.get("read_only") else "read and write"
        lines = [
            Content(
                f"A vault server started over {e.get('transport', '?')} ({mode}, "
                f"version {e.get('version', '?')})."
            )
        ]
        errors = e.get("config_errors") or []
        if errors:
            lines += [
                Content.styled("config errors at start", BOLD),
                *(Content(f"  {x}") for x in errors),
            ]
        return lines
    if kind == "server_stopped":
        return [Content(f"The vault server stopped ({e.get('reason') or 'no reason given'}).")]
    if kind == "config_reloaded":
        if e.get("ok"):
            return [Content(f"{e.get('file') or 'The config'} was read again and is in force.")]
        return [
            Content(
                f"{e.get('file') or 'The config'} has errors; the last good one stays in force:"
            ),
            *(Content(f"  {x}") for x in e.get("errors") or []),
        ]
    if kind == "recovered":
        return [
            Content(str(e.get("message", "an interrupted write was recovered"))),
            Content(f"notes: {paths}"),
        ]
    if kind == "error":
        return [Content(f"{tool} failed: {e.get('code', '')} {e.get('message', '')}".strip())]
    skip = {"v", "ts", "pid", "kind", "client"}
    return [Content(f"{k}: {v}") for k, v in e.items() if k not in skip]


def conflict_lines(e: dict[str, Any], root: Path | None) -> list[Content]:
    """What changed between the AI's read and its write: the commits since the version it read
    (the owner's edit or another AI write), or the owner's uncommitted edit, with the diff."""
    path, expected, actual = str(e.get("path", "")), e.get("expected"), e.get("actual")
    lines = [
        Content(
            f"{e.get('tool') or 'the write'} to {path} was refused: the note changed "
            "after the AI read it. Nothing was written; the AI was told to read it again."
        ),
        Content(""),
    ]
    if root is None or not path:
        return lines
    at = _when(e)
    versions = [(c, text) for c, text in file_versions(root, path) if at is None or c.time <= at]
    read = next(
        (i for i, (_, t) in enumerate(versions) if content_hash(t.encode()) == expected), None
    )
    on_disk = root / path
    try:
        now_text = on_disk.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        now_text = None
    if read is None:
        lines.append(
            Content(
                "The version the AI read is not in the history (an edit that was "
                "never committed), so what changed cannot be shown."
            )
        )
        return lines
    since = versions[:read]
    if since:
        lines.append(Content.styled("changed since the AI's read by", BOLD))
        for c, _ in since:
            who = f"AI ({(c.client or '?').split('/')[0]})" if c.is_ai else c.author
            lines.append(
                Content(f"  {c.short}  {c.time.astimezone():%m-%d %H:%M}  {who}: {c.subject}")
            )
        new_text = since[0][1]
    else:
        new_text = versions[0][1]
    if now_text is not None and content_hash(now_text.encode()) == actual and now_text != new_text:
        lines.append(Content.styled("and your edit, not committed yet", BOLD))
        new_text = now_text
    lines.append(Content(""))
    lines += render_unified(FileChange(path, "M", None, versions[read][1], new_text))
    return lines
