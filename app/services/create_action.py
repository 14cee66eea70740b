"""A new note from a doc type: planned from the form (its path from the type's folder and file
name pattern, checked by the write path's own rules) and created, one commit as the owner
(action_tree). No Textual here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.services.action_tree import commit_action, open_action, why_failed
from app.services.actions import ActionError
from app.services.note_types import from_date
from app.services.vault_files import refuse_links, vault_config
from server.core.git_run import GitError
from server.notes.note import parse_doc
from server.write.leases import WriteRace
from server.write.validate import problems


@dataclass
class NewNote:
    path: str
    text: str


def plan_create(root: Path, type_name: str, fields: dict[str, str], title: str = "") -> NewNote:
    """A new note of `type_name`: its path from the type's folder and filename pattern,
    frontmatter then a heading, checked by the write path's own rules (`validate.problems`:
    required fields, dates, allowed values), said in the form's words."""
    # the server's write path (pydantic, the vault's indexes) loads when a note is first made,
    # not with the dashboard (its first paint)
    from server.services.op_plans import note_path
    from server.services.write_plan import Rejected
    from server.write.frontmatter_edits import render_new_note

    config = vault_config(root)
    if config is None or type_name not in config.types:
        raise ActionError(f"unknown type {type_name!r}")
    t = config.types[type_name]
    values = {k: v.strip() for k, v in fields.items() if v.strip()}
    values = {**from_date(t, values), **values}  # what the owner typed wins
    body = f"# {title.strip()}\n" if title.strip() else ""
    text = render_new_note(values, [], "\n" + body if body else "")
    try:
        path: str | None = note_path(config, type_name, {**values, "title": title.strip()}, body)
    except Rejected as exc:
        path, naming = None, f"{exc.message} ({exc.hint})"
    doc = parse_doc(path or f"{t.folder}/{type_name}.md", text.encode())
    # without a path (the name pattern lacks a field), the stand-in's name is not the owner's
    found = [p for p in problems(doc, config) if path is not None or p.code != "wrong_filename"]
    missing = [p.key for p in found if p.code == "missing_field"]
    if missing:
        raise ActionError(f"fill in {', '.join(missing)}")
    if found:
        raise ActionError("; ".join(str(p) for p in found))
    if path is None:
        raise ActionError(naming)
    if (root / path).exists():
        raise ActionError(f"{path} exists already; change the fields or the title")
    return NewNote(path, text)


def apply_create(root: Path, note: NewNote) -> str:
    with open_action(root, []) as tree:
        refuse_links(root, [note.path])  # a folder that is a link would put the note outside
        data = note.text.encode()
        try:
            tree.intend("create", [(note.path, None, data)], {note.path: b""})
            tree.write(note.path, data, None)
            sha = commit_action(tree, [note.path], f"create: {note.path}", "create")
        except FileExistsError:
            tree.rollback()
            raise ActionError(f"{note.path} exists already; nothing was written") from None
        except (OSError, GitError, WriteRace) as exc:
            tree.rollback()
            raise ActionError(
                f"creating {note.path} failed and was undone: {why_failed(exc)}"
            ) from None
    return sha
