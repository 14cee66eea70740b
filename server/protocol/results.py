"""Result shapes of the tools (their output schemas) — the model's view of the vault."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class DocSummary(BaseModel):
    path: str
    title: str
    type: str | None = None
    date: str | None = None
    modified: str
    tags: list[str] = Field(default_factory=list)
    hash: str
    fields: dict[str, Any] = Field(default_factory=dict)
    problems: list[str] | None = None


class Group(BaseModel):
    key: str
    count: int


class ListDocsResult(BaseModel):
    total: int = Field(description="notes matching, before paging")
    docs: list[DocSummary] | None = None
    groups: list[Group] | None = None
    next_cursor: str | None = Field(None, description="pass as cursor= for the next page")


class TagRow(BaseModel):
    tag: str
    count: int = Field(description="notes with the tag, all time")
    in_window: int = Field(description="notes with the tag dated in the last `days` days")
    last_used: str
    trend: str = Field(description="rising | steady | quiet")
    in_vocabulary: bool


class ListTagsResult(BaseModel):
    days: int
    total: int
    tags: list[TagRow]
    unused_vocabulary: list[str] = Field(default_factory=list)
    next_cursor: str | None = None


class OutlineRow(BaseModel):
    heading: str
    level: int
    chars: int


class ReadDocResult(BaseModel):
    superseded: str | None = Field(
        None, description="this note was replaced: by which note, and to read that one instead"
    )
    path: str
    title: str
    type: str | None = None
    hash: str = Field(description="pass to replace_doc; changes whenever the file changes")
    chars: int = Field(description="length of the whole note")
    section: str | None = None
    range: list[int] = Field(description="[start, end) char offsets of content in the note")
    content: str
    complete: bool = Field(
        description="true when nothing is left to read: content reaches the end of the note "
        "(or of the section asked for), from its start or as the last page of an offset read"
    )
    outline: list[OutlineRow] | None = None
    next: str | None = Field(None, description="how to get what was left out")
    tags: list[str] = Field(default_factory=list)
    problems: list[str] | None = None


class Pause(BaseModel):
    start: float
    end: float
    seconds: float


class RecordingResult(BaseModel):
    path: str
    model: str
    duration_s: float
    language: str
    unit: str = Field(description="words/min, or characters/min for Chinese")
    words: int = Field(description="words (Chinese: characters) in the whole transcript")
    wpm: float | None = Field(description="speaking rate in `unit`, first speech to last")
    spoken_s: float
    pauses: list[Pause] = Field(description="silences of 0.5 s or more between speech")
    pauses_total: int | None = Field(None, description="when pauses lists only some")
    long_pause_s: float
    long_pauses: int
    long_pauses_per_min: float | None = None
    longest_pause_s: float
    first_sentence_s: float | None = Field(description="when the first sentence ends")
    fillers: dict[str, int]
    transcript: str = Field(description="this page of the transcript")
    segments: list[dict[str, Any]]
    range: list[int] = Field(description="[start, end) char offsets of this page")
    chars: int = Field(description="length of the whole transcript")
    complete: bool
    next: str | None = Field(None, description="how to get the rest of the transcript")


class ContextResult(BaseModel):
    blocks: list[dict[str, Any]]
    trimmed: list[str] = Field(default_factory=list, description="notes whose text was shortened")
    warnings: list[str] | None = None


class SearchHit(BaseModel):
    path: str
    folder: str
    title: str
    type: str | None = None
    modified: str
    hash: str
    tags: list[str] = Field(default_factory=list)
    snippets: list[str] = Field(description="lines around the matches, terms marked «like this»")


class SearchResult(BaseModel):
    total: int = Field(description="notes matching, before paging")
    hits: list[SearchHit]
    next_cursor: str | None = Field(None, description="pass as cursor= for the next page")
    hint: str | None = None


class RecallHit(BaseModel):
    path: str
    title: str
    type: str | None = None
    modified: str
    hash: str
    score: float = Field(description="0-1, higher means closer in meaning")
    match: Literal["lexical", "semantic"] = Field(
        "semantic",
        description="lexical: the note has every word of the query (listed first); semantic: "
        "found by meaning alone",
    )
    section: str | None = Field(None, description="the best-matching section's heading path")
    snippet: str = Field(description="the start of that section (or of the note)")


class RecallResult(BaseModel):
    ready: bool = Field(description="false while the vault is still being indexed")
    model: str | None = None
    indexed: int | None = None
    total: int | None = None
    hits: list[RecallHit]
    hint: str | None = None


class Similar(BaseModel):
    path: str
    title: str
    score: float


class WriteOut(BaseModel):
    path: str = Field(description="where the note is (create_doc: where it landed)")
    hash: str | None = Field(None, description="the note's new hash")
    commit: str | None = Field(None, description="the git commit of this write")
    created: bool | None = None
    noop: bool | None = None
    note: str | None = None
    warnings: list[str] | None = Field(None, description="problems that were already there")
    diff: str | None = Field(None, description="what changed (cut when long)")
    answered: list[str] | None = Field(None, description="feedback ids this commit answers")
    similar: list[Similar] | None = Field(
        None, description="existing notes that mean nearly the same: update one of them instead"
    )
    after_commit: list[str] | None = Field(
        None, description="upkeep that failed after the commit landed (the write stands)"
    )


class BatchItem(BaseModel):
    path: str
    hash: str | None = None
    created: bool | None = None


class BatchOut(BaseModel):
    commit: str | None = None
    results: list[BatchItem]
    answered: list[str] | None = None
    note: str | None = None
    noop: bool | None = None
    warnings: dict[str, list[str]] | None = None
    diff: str | None = None
    similar: list[Similar] | None = None
    after_commit: list[str] | None = None
