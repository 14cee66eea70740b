"""recall: notes by meaning (server/services/recall.py; the index is server/index/)."""

from typing import Annotated

from pydantic import Field

from server.protocol.results import RecallResult
from server.protocol.toolkit import FOLDER, IncludeSuperseded, Reply, ToolKit
from server.services.recall import recall as run_recall


def register_recall_tool(kit: ToolKit) -> None:
    vault = kit.vault

    @kit.read_tool(title="Recall notes by meaning", output=RecallResult)
    def recall(
        query: Annotated[
            str | None,
            Field(
                description="what the note is about, in any language (an English question "
                "finds a Chinese note); -word drops notes with that word anywhere (case and "
                "width ignored, as in search_text); tag:x type:x path:folder/ filter"
            ),
        ] = None,
        path: Annotated[
            str | None, Field(description="find notes related to this note instead")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=30)] = 8,
        type: Annotated[str | None, Field(description="only notes of this doc type")] = None,
        folder: Annotated[str | None, Field(description=FOLDER)] = None,
        include_superseded: IncludeSuperseded = False,
    ) -> Reply:
        """Find notes by meaning, not wording: paraphrases, other languages, related ideas.
        Each hit has its score, the section that matched, and match: lexical (the note has
        every word of the query; listed first) or semantic (by meaning alone). Use search_text
        for exact words, names and codes (recall does not replace it). While the vault is still
        being indexed, ready is false and the hint says how far it is and about how long is
        left: use search_text meanwhile and call recall again after that."""
        res = run_recall(
            vault,
            query,
            path=path,
            limit=limit,
            type=type,
            folder=folder,
            include_superseded=include_superseded,
        )
        return res, [h["path"] for h in res["hits"]]
