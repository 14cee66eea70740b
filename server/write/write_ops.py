"""The arguments of each write operation, declared once.

One pydantic model per operation: its fields (names, types, limits, the descriptions the model
reads) are the MCP tool's parameters, what `batch` validates each of its operations against, and
what the fuzz tests draw. The planning of each operation lives in `writes`; nothing here knows
MCP or the vault.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from server.core.budget import fit_text
from server.core.tool_names import ToolName
from server.notes.reading import HEADING_MAX

HASH_OPTIONAL = "hash from your last read; if given and the note changed, the write is refused"
NOTE_PATH = "note path"
# characters: a heading is a line of the note and the commit's subject; the outline cuts a
# path to as much, so that what read_doc shows can be passed back
MAX_HEADING = HEADING_MAX


def field_keys(keys: Iterable[str] | None) -> None:
    """A frontmatter key the model names must be one a person could have written: `{"": 1}` was
    written as `? ''`, and `---` as a key that ends the frontmatter when read back."""
    for key in keys or ():
        if not key.strip():
            raise ValueError("a frontmatter key is empty: name the field, such as 'status'")
        if any(ch in key for ch in "\n\r\t") or key.strip() != key:
            raise ValueError(
                f"frontmatter key {fit_text(key, 60)!r} has spaces at its ends or a line break"
            )
        if key in ("---", "...") or key.startswith(("#", "-", "?", "&", "*", "!", "|", ">", "%")):
            raise ValueError(
                f"frontmatter key {fit_text(key, 60)!r} starts with a character YAML reads as syntax: "
                "start it with a letter or a digit"
            )


class WriteArgs(BaseModel):
    """What every operation's arguments share: unknown names are an error (a batch operation
    with a misspelt argument must not silently drop it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: ClassVar[ToolName]


class CreateDoc(WriteArgs):
    tool = ToolName.CREATE_DOC

    type: Annotated[
        str | None, Field(description="doc type: path comes from its folder and filename pattern")
    ] = None
    path: Annotated[str | None, Field(description="explicit path instead of type's pattern")] = None
    fields: Annotated[
        dict[str, Any] | None,
        Field(description='frontmatter, e.g. {"date": "2026-10-02", "kind": "mock"}'),
    ] = None
    body: Annotated[
        str, Field(description="markdown after the frontmatter, e.g. '# Title\\n...'")
    ] = ""
    tags: Annotated[list[str] | None, Field(description="tag names (see list_tags)")] = None
    distinct_from: Annotated[
        list[str] | None,
        Field(
            max_length=20,
            description="paths of existing notes a refused create named as nearly the same, "
            "that you checked and that say something else: the create then goes ahead",
        ),
    ] = None

    @field_validator("fields")
    @classmethod
    def _keys(cls, fields: dict[str, Any] | None) -> dict[str, Any] | None:
        field_keys(fields)
        return fields


class AppendSection(WriteArgs):
    tool = ToolName.APPEND_SECTION

    path: Annotated[str, Field(description=NOTE_PATH)]
    heading: Annotated[
        str,
        Field(
            description="section heading: 'Log', '## Log', 'Week 42/Log' or a path as "
            "read_doc's outline shows it; a heading as written wins over reading / as a path "
            "('TCP/UDP'); created at the end if missing"
        ),
    ]
    content: Annotated[str, Field(description="markdown to add at the end of the section")]
    hash: Annotated[str | None, Field(description=HASH_OPTIONAL)] = None

    @field_validator("heading")
    @classmethod
    def _one_heading(cls, heading: str) -> str:
        """One heading line: a newline in it wrote a second, top-level heading into the note;
        100,000 characters became the commit's subject; '#' and '####### x' are no heading."""
        if "\n" in heading or "\r" in heading:
            raise ValueError("a heading is one line (the section's text goes in content)")
        if len(heading) > MAX_HEADING:
            raise ValueError(
                f"a heading has at most {MAX_HEADING} characters, not {len(heading):,}"
            )
        spec = heading.strip()
        if re.match(r"#{7}", spec):
            raise ValueError("a heading has at most six #, such as '## Log'")
        if not spec.lstrip("#").strip():
            raise ValueError("the heading has no text: give one such as 'Log' or '## Log'")
        return heading


class EditText(WriteArgs):
    tool = ToolName.EDIT_TEXT

    path: Annotated[str, Field(description=NOTE_PATH)]
    old: Annotated[str, Field(description="exact text now in the note (copy it from read_doc)")]
    new: Annotated[str, Field(description="text to put in its place")]
    count: Annotated[
        int, Field(ge=1, le=1000, description="how many matches to expect and replace")
    ] = 1
    hash: Annotated[str | None, Field(description=HASH_OPTIONAL)] = None


class UpdateFrontmatter(WriteArgs):
    tool = ToolName.UPDATE_FRONTMATTER

    path: Annotated[str, Field(description=NOTE_PATH)]
    set: Annotated[
        dict[str, Any] | None,
        Field(description='keys to set, e.g. {"status": "closed", "closed": "2026-10-02"}'),
    ] = None
    unset: Annotated[list[str] | None, Field(description="keys to remove")] = None
    add_tags: Annotated[list[str] | None, Field(description="tags to add")] = None
    remove_tags: Annotated[list[str] | None, Field(description="tags to remove")] = None
    hash: Annotated[str | None, Field(description=HASH_OPTIONAL)] = None

    @field_validator("set", "unset")
    @classmethod
    def _keys(cls, keys: dict[str, Any] | list[str] | None) -> dict[str, Any] | list[str] | None:
        field_keys(keys)
        return keys


class ReplaceDoc(WriteArgs):
    tool = ToolName.REPLACE_DOC

    path: Annotated[str, Field(description=NOTE_PATH)]
    content: Annotated[str, Field(description="the complete new text, frontmatter included")]
    hash: Annotated[str, Field(description="hash from your last read_doc of this note (required)")]


class SupersedeDoc(WriteArgs):
    tool = ToolName.SUPERSEDE_DOC

    path: Annotated[str, Field(description="the note that is replaced (it is kept, not deleted)")]
    by: Annotated[str, Field(description="path of the existing note that replaces it")]
    reason: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_HEADING,
            description="one line for the owner: why the new note replaces this one",
        ),
    ]
    hash: Annotated[str | None, Field(description=HASH_OPTIONAL)] = None

    @field_validator("reason")
    @classmethod
    def _one_line(cls, reason: str) -> str:
        """The reason is the commit's subject: one line, with words in it."""
        if "\n" in reason or "\r" in reason or not reason.strip():
            raise ValueError(
                "the reason is one line of text, e.g. 'the 2026 retry rules replace it'"
            )
        return reason


# `answers`, which every write tool and `batch` take beside their operation's arguments (not
# inside it: a batch answers as one commit). The ids come from get_context's open feedback;
# the commit carries one `Vaultwatch-Answers` trailer per id.
ANSWERS_MAX = 20
AnswerIds = Annotated[
    list[Annotated[str, Field(max_length=40)]] | None,
    Field(
        max_length=ANSWERS_MAX,
        description="ids of the owner's open feedback (get_context) this write settles, e.g. "
        "['fb-1a2b3c']: the commit names them and the owner sees them answered",
    ),
]


class AnswerArgs(BaseModel):
    """The `answers` parameter as a model, for the write tools' parameter lists."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    answers: AnswerIds = None


WriteOp = CreateDoc | AppendSection | EditText | UpdateFrontmatter | ReplaceDoc | SupersedeDoc

# Every operation a write tool or a batch can run, by tool name, in the order the tools are listed.
WRITE_OPS: dict[str, type[WriteOp]] = {
    m.tool: m
    for m in (CreateDoc, AppendSection, EditText, UpdateFrontmatter, ReplaceDoc, SupersedeDoc)
}


def signature_line(model: type[WriteArgs]) -> str:
    """`append_section(path, heading, content, hash?)`: an operation as batch's description
    shows it, optional arguments marked with `?`."""
    args = [n + ("" if f.is_required() else "?") for n, f in model.model_fields.items()]
    return f"{model.tool}({', '.join(args)})"
