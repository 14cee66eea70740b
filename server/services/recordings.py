"""The `transcribe_recording` read: a recording inside the vault, measured and transcribed,
paged by transcript offset like read_doc, within the result budget."""

from __future__ import annotations

from typing import Any

from server.core.budget import json_len
from server.core.state_files import state_dir
from server.notes.paths import PathRefused
from server.services.transcribe import (
    AUDIO_EXTENSIONS,
    TranscribeError,
    cached_or_none,
    metrics,
    transcribe_cached,
)
from server.vault import Vault, VaultError

# The longest pause list one answer carries (a long talk has hundreds of short pauses); the
# long ones are never cut, the count says what was left out.
PAUSES_LISTED = 40


class RecordingRefused(VaultError):
    code = "recording_refused"


def recording_result(vault: Vault, raw: str, offset: int = 0) -> dict[str, Any]:
    try:  # the one path rule, as for a note: no escape, no dot-folder, nothing private
        vp = vault.policy.resolve(raw, note=False)
    except PathRefused as exc:
        raise VaultError(exc.code, exc.message) from exc
    if not vp.rel.lower().endswith(AUDIO_EXTENSIONS):
        raise RecordingRefused(
            f"{vp.rel!r} is not a recording: transcribe_recording reads audio files "
            f"({', '.join(AUDIO_EXTENSIONS)}) inside the vault. For notes use read_doc."
        )
    if not vp.disk.is_file():
        raise RecordingRefused(
            f"{vp.rel!r} does not exist in the vault; list_docs does not list recordings, so "
            "ask the owner for the path, or look for the audio embed (![[…]]) in the session "
            "note with read_doc."
        )
    cfg = vault.config.recordings
    cache = state_dir(vault.root) / "transcripts"
    try:
        found, _, _ = cached_or_none(vp.disk, cache, None, None, cfg)
        t = found or transcribe_cached(
            vp.disk,
            cfg,
            cache_dir=cache,
            max_minutes=cfg.tool_max_minutes,
            what="transcribe_recording",
        )
    except TranscribeError as exc:
        if exc.code == "voice_too_long":
            raise RecordingRefused(
                "voice_too_long",
                f"{exc.message} Ask the owner to run `vaultwatch transcribe {vp.rel}` in a "
                "shell (it takes longer recordings and keeps the transcript); after that this "
                "tool returns it at once.",
            ) from None
        raise RecordingRefused(exc.code, exc.message) from None
    m = metrics(t, cfg)
    return page({"path": vp.rel, "model": t.model, **m}, offset, vault.config.limits.result_chars)


def page(m: dict[str, Any], offset: int, limit: int) -> dict[str, Any]:
    """The metrics whole, the transcript from `offset` as far as the budget allows (cut at a
    segment's end, so a page never splits a sentence), and the segments of that page."""
    segments: list[dict[str, Any]] = m.pop("segments")
    transcript: str = m.pop("transcript")
    pauses: list[dict[str, float]] = m["pauses"]
    if len(pauses) > PAUSES_LISTED:
        long = [p for p in pauses if p["seconds"] >= m["long_pause_s"]]
        rest = [p for p in pauses if p["seconds"] < m["long_pause_s"]]
        m["pauses"] = sorted(long + rest[: max(PAUSES_LISTED - len(long), 0)], key=_start)
        m["pauses_total"] = len(pauses)
    starts, at = [], 0
    for s in segments:  # each segment's place in the transcript (joined by one space)
        starts.append(at)
        at += len(s["text"]) + 1
    offset = max(0, min(offset, len(transcript)))
    first = next((i for i, st in enumerate(starts) if st >= offset), len(segments))
    room = limit - json_len(m) - 400  # the page's own fields and the footer
    taken: list[dict[str, Any]] = []
    used = 0
    for s in segments[first:]:
        cost = 2 * json_len(s)  # in `segments`, and its text again in `transcript`
        if taken and used + cost > room:
            break
        taken.append(s)
        used += cost
    start = starts[first] if first < len(starts) else len(transcript)
    end = start + len(" ".join(s["text"] for s in taken))
    complete = first + len(taken) >= len(segments)
    out = {
        **m,
        "transcript": transcript[start:end],
        "segments": taken,
        "range": [start, end],
        "chars": len(transcript),
        "complete": complete,
    }
    if not complete:
        out["next"] = (
            f"transcribe_recording(path={m['path']!r}, offset={end + 1}) for the rest of the "
            "transcript (the metrics above are for the whole recording)"
        )
    return out


def _start(p: dict[str, float]) -> float:
    return p["start"]
