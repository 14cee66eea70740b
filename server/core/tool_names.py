"""The name of every MCP tool, said once: the server registers its tools by these, the write
path dispatches batch operations by them, and the journal records them."""

from enum import StrEnum


class ToolName(StrEnum):
    GET_CONTEXT = "get_context"
    LIST_DOCS = "list_docs"
    LIST_TAGS = "list_tags"
    READ_DOC = "read_doc"
    SEARCH_TEXT = "search_text"
    RECALL = "recall"
    TRANSCRIBE_RECORDING = "transcribe_recording"
    CREATE_DOC = "create_doc"
    APPEND_SECTION = "append_section"
    EDIT_TEXT = "edit_text"
    UPDATE_FRONTMATTER = "update_frontmatter"
    REPLACE_DOC = "replace_doc"
    SUPERSEDE_DOC = "supersede_doc"
    BATCH = "batch"
