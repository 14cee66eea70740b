"""The owner's actions on the vault from the main screen's keys: revert (and abort a git
operation), move, new note and delete. Each asks through a dialog, runs an `owner_flows`
service in a thread (no Textual there), says what it did and puts the timeline's cursor on the
commit it made. A screen gets them by deriving from `OwnerActions`; the asks a move, a delete
or any previewed action make (`confirm`, `ask_move`, `ask_delete`) are shared with the health
screen's."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from textual import work
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from app.services import owner_flows as flows
from app.services.actions import ActionError
from app.services.create_action import apply_create
from app.services.feed import Row
from app.services.move_action import MovePlan, apply_move
from app.services.note_types import doc_types, suggest_folder
from app.services.remove_action import RemovePlan, apply_remove
from app.services.vault_files import finder_order, folders_of, vault_files
from app.ui.dialogs.modals import ConfirmModal
from app.ui.dialogs.revert_dialog import BlockersModal
from app.ui.navigation import Desk, desk
from app.ui.widgets.preview import preview_body
from app.ui.widgets.timeline import Timeline
from app.ui.widgets.timeline_pane import TimelinePane
from server.core.gitrepo import operation_in_progress


async def confirm(screen: Screen[Any], p: flows.Preview) -> bool:
    """Ask the owner, showing the action's preview: yes or no."""
    ok: bool = await screen.app.push_screen_wait(ConfirmModal(p.title, preview_body(p), yes=p.yes))
    return ok


async def ask_move(
    screen: Screen[Any], root: Path, source: str, files: list[str]
) -> MovePlan | None:
    """Where `source` goes (a folder suggested), its preview, the owner's yes: the plan to
    apply, or None when the owner said no or the move is not possible (said why)."""
    from app.ui.dialogs.file_dialogs import DestinationPrompt  # loaded when first opened

    suggested = await asyncio.to_thread(suggest_folder, root, source)
    dest = await screen.app.push_screen_wait(
        DestinationPrompt(source, folders_of(files), suggested)
    )
    if not dest:
        return None
    try:
        plan, preview = await asyncio.to_thread(flows.move_preview, root, source, dest)
    except ActionError as exc:
        screen.notify(str(exc), title="cannot move", severity="error", timeout=8)
        return None
    return plan if await confirm(screen, preview) else None


async def ask_delete(screen: Screen[Any], root: Path, path: str) -> RemovePlan | None:
    """The delete's preview and the owner's yes: the plan to apply, or None (said why)."""
    try:
        plan, preview = await asyncio.to_thread(flows.delete_preview, root, path)
    except ActionError as exc:
        screen.notify(str(exc), title="cannot delete", severity="error", timeout=8)
        return None
    return plan if await confirm(screen, preview) else None


class VaultChanged(Message):
    """The owner's action made commit `sha`: look at the vault now (and select that row)."""

    def __init__(self, sha: str) -> None:
        super().__init__()
        self.sha = sha


class OwnerActions(Screen[None]):
    """The actions, for a screen with a `#timeline` (a TimelinePane) whose cursor they act on."""

    @property
    def dash(self) -> Desk:
        return desk(self)

    def _cursor_row(self) -> Row | None:
        """The row under the timeline's cursor now. A key pressed right after `j` acts on the
        row the owner sees highlighted, not on the one whose Highlighted message has not been
        handled yet (`j r` typed fast offered to revert the row before)."""
        with contextlib.suppress(NoMatches):
            return self.query_one("#timeline", Timeline).current
        return None

    # -- the owner's actions ----------------------------------------------------------------------

    def _done(self, out: flows.Outcome) -> None:
        """Say what an action did; a new commit is looked for at once. The action ran in a
        thread the UI does not stop: it committed (or rolled back) whole whatever happened
        here. When it comes back to a screen being taken down (the app quitting: the
        timeline already gone), there is nobody to tell; the next start shows the commit."""
        try:
            pane = self.query_one("#timeline", TimelinePane)
        except NoMatches:
            return
        if out.ok:
            assert out.sha is not None
            self.notify(out.message, timeout=4)
            pane.select_when_shown(f"c:{out.sha}")
            self.post_message(VaultChanged(out.sha))
        else:
            self.notify(out.message, title=out.title, severity=out.severity, timeout=8)

    @work(exclusive=True, group="revert")
    async def action_revert(self) -> None:
        row = self._cursor_row()
        c = row.commit if row is not None else None
        if c is None or not flows.revertable(c):
            self.notify(flows.why_not_revertable(c), title="cannot revert", severity="warning")
            return
        root = self.dash.root
        try:
            preview = await asyncio.to_thread(flows.revert_preview, root, c)
        except ActionError as exc:  # already reverted, nothing to undo, git busy
            self.notify(str(exc), title="nothing reverted", severity="warning", timeout=8)
            return
        if isinstance(preview, flows.Blocked):
            shas = await self.app.push_screen_wait(BlockersModal(preview, root))
            if not shas:
                return
        elif await confirm(self, preview):
            shas = [c.sha]
        else:
            return
        self._done(await asyncio.to_thread(flows.revert_commits, root, shas))

    @work(exclusive=True, group="revert")
    async def action_abort_git(self) -> None:
        busy = operation_in_progress(self.dash.root)
        if busy is None:
            self.notify("git is not in the middle of anything", timeout=4)
            return
        if await confirm(self, flows.abort_preview(busy[1], busy[0])):
            self._done(await asyncio.to_thread(flows.abort_git, self.dash.root))
            self.post_message(VaultChanged(""))

    def _selected_file(self) -> str:
        row = self._cursor_row()
        for p in row.paths if row else ():
            if (self.dash.root / p).is_file():
                return p
        return ""

    async def _pick(self, title: str, folders: bool) -> tuple[str | None, list[str]]:
        """(the file or folder chosen in the finder, every file of the vault)."""
        from app.ui.dialogs.file_dialogs import (
            FileFinder,  # the dialogs load when first opened (first paint)
        )

        files = await asyncio.to_thread(vault_files, self.dash.root)
        first = self._selected_file()
        ordered = finder_order(self.dash.root, files, first)
        candidates = ordered + ([f + "/" for f in folders_of(files)] if folders else [])
        picked = await self.app.push_screen_wait(FileFinder(title, candidates))
        return (picked.rstrip("/") if picked else None), files

    @work(exclusive=True, group="files")
    async def action_move_file(self) -> None:
        root = self.dash.root
        source, files = await self._pick("Move or rename which file or folder?", folders=True)
        if not source:
            return
        plan = await ask_move(self, root, source, files)
        if plan is not None:
            self._done(await asyncio.to_thread(flows.apply_plan, root, apply_move, plan, "moved"))

    @work(exclusive=True, group="files")
    async def action_new_note(self) -> None:
        # the form checks names with the write path's rules: both load when first opened
        from app.ui.dialogs.file_dialogs import NewNoteForm

        root = self.dash.root
        types = doc_types(root)
        if not types:
            self.notify("this vault's config has no doc types to create from", severity="warning")
            return
        note = await self.app.push_screen_wait(NewNoteForm(root, types))
        if note is not None:
            done = f"created {note.path}"
            self._done(await asyncio.to_thread(flows.apply_plan, root, apply_create, note, done))

    @work(exclusive=True, group="files")
    async def action_delete_file(self) -> None:
        root = self.dash.root
        path, _ = await self._pick("Delete which file?", folders=False)
        if not path:
            return
        plan = await ask_delete(self, root, path)
        if plan is not None:
            done = f"deleted {path}"
            self._done(await asyncio.to_thread(flows.apply_plan, root, apply_remove, plan, done))
