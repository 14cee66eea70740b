"""The read tools: the working context, listings, a note read, full-text search. Each body
calls one service and returns (data, the notes it is about); ToolKit does the rest."""

from typing import Annotated, Any

from pydantic import Field

from server.notes.reading import about_note, content_budget, read_slice
from server.notes.superseded import is_superseded
from server.protocol.results import (
    ContextResult,
    ListDocsResult,
    ListTagsResult,
    ReadDocResult,
    SearchResult,
)
from server.protocol.toolkit import FOLDER, IncludeSuperseded, Reply, ToolKit
from server.services.conditions import Filters
from server.services.context import build_context
from server.services.listing import list_docs as run_list_docs
from server.services.listing import list_tags as run_list_tags
from server.services.supersede import notice as superseded_notice
from server.services.text_search import search_text as run_search


def register_read_tools(kit: ToolKit) -> None:
    vault = kit.vault

    @kit.read_tool(title="Get the working context", output=ContextResult)
    def get_context(include_superseded: IncludeSuperseded = False) -> Reply:
        """Start here in every conversation. Returns the owner's rules for you, the latest notes
        that matter (as the vault config lays out), open items and top tags. Long notes are cut
        oldest-first; each cut says how to read the rest."""
        return build_context(vault, include_superseded=include_superseded)

    @kit.read_tool(title="List notes", output=ListDocsResult)
    def list_docs(
        type: Annotated[str | None, Field(description="doc type from the vault config")] = None,
        folder: Annotated[str | None, Field(description=FOLDER)] = None,
        tags_all: Annotated[list[str] | None, Field(description="has every tag")] = None,
        tags_any: Annotated[list[str] | None, Field(description="has at least one tag")] = None,
        tags_none: Annotated[list[str] | None, Field(description="has none of these tags")] = None,
        tag_prefix: Annotated[str | None, Field(description="has a tag starting with this")] = None,
        where: Annotated[
            dict[str, Any] | None,
            Field(
                description='frontmatter conditions, ANDed: {"status": "open"} (equals), '
                '{"score": {"ge": 3}}, {"due": {"lt": "+7d"}}, {"stage": {"in": ["a", "b"]}}, '
                '{"next_action": {"exists": true}}, {"company": {"contains": "x"}}. '
                "Operators: eq ne in exists lt le gt ge contains. Dates may be relative."
            ),
        ] = None,
        date_from: Annotated[
            str | None,
            Field(
                description="on/after: YYYY-MM-DD, today, yesterday, or relative -30d -2w -3m -1y; "
                "of each note's date (see date_field)"
            ),
        ] = None,
        date_to: Annotated[str | None, Field(description="on/before, same forms")] = None,
        date_field: Annotated[
            str | None,
            Field(description="field for date_from/to: default the type's date; or 'modified'"),
        ] = None,
        sort: Annotated[
            str,
            Field(
                description="'-' first for descending: -date, -modified, path, title, type, "
                "folder, or a frontmatter field the notes have"
            ),
        ] = "-date",
        fields: Annotated[
            list[str] | None,
            Field(description="frontmatter fields to return (default all; [] for none)"),
        ] = None,
        group_by: Annotated[
            str | None,
            Field(description="return counts instead of notes: a field, 'tag', 'type', 'month'"),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        include_superseded: IncludeSuperseded = False,
    ) -> Reply:
        """List notes by type, folder, tags, frontmatter fields and date range, with each note's
        fields and hash; or, with group_by, count them. E.g. 'which applications wait on me?':
        type='application', where={"status": "waiting"}. 'Which weaknesses recurred this
        month?': type='improvement', date_from='-30d', group_by='tag'."""
        filters = Filters(
            type=type,
            folder=folder,
            tags_all=tags_all,
            tags_any=tags_any,
            tags_none=tags_none,
            tag_prefix=tag_prefix,
            where=where,
            date_from=date_from,
            date_to=date_to,
            date_field=date_field,
            include_superseded=include_superseded,
        )
        res = run_list_docs(
            vault, filters, sort=sort, fields=fields, group_by=group_by, limit=limit, cursor=cursor
        )
        return res, []

    @kit.read_tool(title="List tags with trends", output=ListTagsResult)
    def list_tags(
        days: Annotated[
            int, Field(ge=1, le=3650, description="window for in_window and trend")
        ] = 30,
        prefix: Annotated[str | None, Field(description="only tags starting with this")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
    ) -> Reply:
        """Every tag with its count, count in the last `days`, last use, trend (rising, steady,
        quiet: compared with the `days` before) and whether the vocabulary has it; plus
        vocabulary tags never used. Use it to pick existing tags before writing."""
        return run_list_tags(vault, days=days, prefix=prefix, limit=limit, cursor=cursor), []

    @kit.read_tool(title="Read a note", output=ReadDocResult)
    def read_doc(
        path: Annotated[str, Field(description="note path relative to the vault root")],
        section: Annotated[
            str | None, Field(description="one section by heading: 'Log' or 'Week 42/Log'")
        ] = None,
        tail: Annotated[
            int | None,
            Field(ge=1, le=500, description="only the last N entries (sub-sections or list items)"),
        ] = None,
        offset: Annotated[
            int | None,
            Field(ge=0, description="start at this char offset (of the section if given)"),
        ] = None,
    ) -> Reply:
        """Read a note: whole, one section, its newest entries (tail), or from an offset. Always
        returns the hash of the whole file. When anything is left out, the result has the
        note's outline and `next` says exactly how to get the rest."""
        entry, res = vault.read(path)
        limit = vault.config.limits.result_chars
        about = about_note(entry.doc, entry.type, len(res.text), limit)
        if is_superseded(entry.doc.frontmatter):  # said first: read the note that replaced it
            about = {"superseded": superseded_notice(entry, vault.entries()), **about}
        room = content_budget(about, limit)
        sl = read_slice(res.doc, res.text, section=section, tail=tail, offset=offset, budget=room)
        return {**about, **sl}, [entry.doc.path]

    @kit.read_tool(title="Search note text", output=SearchResult)
    def search_text(
        query: Annotated[
            str,
            Field(
                description='words to find, all must match (AND); "exact phrase"; -word drops '
                "notes with that word anywhere (title, body or frontmatter); inline filters "
                "tag:x type:x path:folder/. Case and full/half width ignored; Chinese words of "
                "any length work, with or without spaces: 停用插件 also finds notes saying 停用 "
                "and 插件 apart (those saying it in one piece first; quote it for one piece "
                "only), e.g. 'CRDT 离线同步' or '架构'."
            ),
        ],
        type: Annotated[str | None, Field(description="only notes of this doc type")] = None,
        folder: Annotated[str | None, Field(description=FOLDER)] = None,
        tags: Annotated[list[str] | None, Field(description="only notes with every tag")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        include_superseded: IncludeSuperseded = False,
    ) -> Reply:
        """Find notes by the words in their text and title, best first (a note whose title or
        file name is the query first, then relevance, a title holding every word counting
        strongly, newer notes slightly ahead). Each hit has 1-3
        snippets with the matches marked «like this», plus path and hash, so you can often
        answer without read_doc."""
        res = run_search(
            vault,
            query,
            type=type,
            folder=folder,
            tags=tags,
            limit=limit,
            cursor=cursor,
            include_superseded=include_superseded,
        )
        return res, [h["path"] for h in res["hits"]]
