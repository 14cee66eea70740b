"""The write tools: one per `write_ops` model (its name and parameters are the model's, a call
is that one operation, committed), and batch (several as one commit)."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from server.core.tool_names import ToolName
from server.protocol.results import BatchOut
from server.protocol.toolkit import ToolKit, describe, params_of, write_annotations
from server.write.write_ops import (
    WRITE_OPS,
    AnswerIds,
    AppendSection,
    CreateDoc,
    EditText,
    ReplaceDoc,
    SupersedeDoc,
    UpdateFrontmatter,
    signature_line,
)

# batch's operations: each write tool with its arguments, from the same models (`?`: optional).
BATCH_OPS = (
    'operations in order: [{"tool": "append_section", "args": {...}}, '
    '{"tool": "update_frontmatter", "args": {...}}]; tools: '
    + ", ".join(signature_line(m) for m in WRITE_OPS.values())
)


def register_write_tools(kit: ToolKit) -> None:
    vault = kit.vault

    kit.write_tool(
        CreateDoc,
        title="Create a note",
        idempotent=True,
        description="""Create a note as one commit. Folders are made as needed; the result says
        where it landed. If the folder already has a note with the same title, nothing is
        written and that note's path and hash come back with created=false: update it instead.
        Search first: a note the vault already holds (the same meaning in any language, the
        same title in another folder) is refused with the closest notes' paths; add to one of
        them, or, if the new note replaces one, create it with distinct_from and supersede_doc
        the old one; if you read them and yours says something else, call again with
        distinct_from naming them. The result lists up to 3 close notes (similar).""",
    )
    kit.write_tool(
        AppendSection,
        title="Append to a section",
        idempotent=False,
        description="""Add text at the end of one section (before the next heading of the same
        or higher level), as one commit. Nothing else in the note changes.""",
    )
    kit.write_tool(
        EditText,
        title="Replace exact text",
        idempotent=False,
        description="""Replace exact text, as one commit. Refused (with the number of matches,
        or the closest line when there are none) unless `old` occurs exactly `count` times.""",
    )
    kit.write_tool(
        UpdateFrontmatter,
        title="Change frontmatter fields",
        idempotent=True,
        description="""Set, remove or retag frontmatter keys, as one commit. Every other line of
        the frontmatter (order, quoting, comments) stays exactly as it was.""",
    )
    kit.write_tool(
        ReplaceDoc,
        title="Replace a whole note",
        idempotent=True,
        description="""Replace a note's whole text, as one commit. Needs the hash of your last
        read: if the note changed since, nothing is written and you must read it again (never
        retry blindly). Must keep every image/attachment embed. Prefer the smaller write
        tools.""",
    )
    kit.write_tool(
        SupersedeDoc,
        title="Mark a note replaced by another",
        idempotent=True,
        description="""When a newer note replaces an older one (a conclusion overturned, two
        notes merged), mark the old one superseded instead of deleting or emptying it: its
        frontmatter gets status: superseded, superseded_by: "[[by]]" and today's date, nothing
        else changes, as one commit with reason as its message. From then on list_docs,
        search_text, recall and get_context leave it out unless include_superseded is true, and
        read_doc of it says first which note replaced it. `by` must be an existing note (write
        it first); a replacement that leads back to this note is refused.""",
    )

    def batch(
        ctx: Context,
        ops: Annotated[list[dict[str, Any]], Field(description=BATCH_OPS)],
        message: Annotated[
            str | None, Field(description="commit subject for the whole batch")
        ] = None,
        answers: AnswerIds = None,
    ) -> CallToolResult:
        """Up to 200 writes checked together and applied all-or-nothing as one commit. Every
        problem is reported at once; if any operation fails, nothing is written. A create is
        refused as in create_doc when the vault already holds that note; notes close to the
        created ones are listed in similar."""
        limit = vault.config.limits.batch_ops
        if not ops:
            raise ToolError("ops is empty: give at least one operation")
        if len(ops) > limit:
            raise ToolError(f"{len(ops)} operations; a batch takes at most {limit}. Split it.")
        parsed = []
        for i, op in enumerate(ops):
            name = op.get("tool") if isinstance(op, dict) else None
            args = op.get("args", {}) if isinstance(op, dict) else None
            if not isinstance(name, str) or not isinstance(args, dict):
                raise ToolError(
                    f'operation {i + 1} must look like {{"tool": "append_section", "args": {{...}}}}'
                )
            parsed.append((name, args))
        return kit.write(ctx, ToolName.BATCH, parsed, message, answers)

    kit.add(
        ToolName.BATCH,
        batch,
        params_of(batch),
        title="Several writes as one commit",
        description=describe(batch.__doc__),
        annotations=write_annotations(False),
        output=BatchOut,
    )
