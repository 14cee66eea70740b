"""The owner's `vaultwatch transcribe`: a recording transcribed and measured on this machine,
and with `--into NOTE` its numbers and transcript written into the session note as one owner
commit (`Vaultwatch-Action: transcribe`). The audio stays where it is, embedded as an
attachment. The latest recording's figures also go into the note's frontmatter
(`recording_*`), where the weekly trend in `vaultwatch stats` reads them."""

from __future__ import annotations

import os
import posixpath
from datetime import datetime
from pathlib import Path
from typing import Any

from app.services.actions import ActionError
from app.services.revert import _store, owner_commit
from server.core.git_log import commit_message
from server.core.gitrepo import write_lock
from server.core.state_files import state_dir
from server.notes.config import ConfigError, load_config
from server.notes.note import parse_doc
from server.notes.paths import PathRefused, normalize_rel
from server.notes.recordings_config import RecordingsConfig
from server.services.transcribe import is_audio, metrics, transcribe_cached
from server.write.edits import append_section
from server.write.file_write import FileWrite
from server.write.frontmatter_edits import update_frontmatter
from server.write.store_errors import StoreError

ACTION = "transcribe"
# The frontmatter keys the trend reads: flat, so Obsidian shows them as properties.
FIELDS = {
    "recording_date": "date",
    "recording_wpm": "wpm",
    "recording_unit": "unit",
    "recording_long_pauses_per_min": "long_pauses_per_min",
    "recording_first_sentence_s": "first_sentence_s",
}


def recordings_config(root: Path | None) -> RecordingsConfig:
    """The vault's `recordings:` block; the defaults without a vault, or while its config does
    not load (which `vaultwatch health` and the dashboard report)."""
    if root is None:
        return RecordingsConfig()
    try:
        return load_config(root).recordings
    except ConfigError:
        return RecordingsConfig()


def measure_file(
    root: Path | None,
    audio: Path,
    *,
    model: str | None = None,
    language: str | None = None,
) -> dict[str, Any]:
    """Transcribe and measure `audio` (cached in the vault's state folder when there is a
    vault). Raises TranscribeError with the owner's reason."""
    cfg = recordings_config(root)
    cache = state_dir(root) / "transcripts" if root is not None else None
    t = transcribe_cached(audio, cfg, cache_dir=cache, model=model, language=language)
    recorded = datetime.fromtimestamp(audio.stat().st_mtime).date().isoformat()
    return {"file": str(audio), "model": t.model, "date": recorded, **metrics(t, cfg)}


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}"


def section_text(audio_rel: str, m: dict[str, Any]) -> str:
    """What `--into` appends under the recording section: the embed, the numbers, and the
    transcript folded in a callout (Obsidian shows it collapsed)."""
    unit = m["unit"]
    rate = f"{m['wpm']:g} {unit}" if m["wpm"] is not None else "no speech measured"
    fillers = ", ".join(f"{k} ×{v}" for k, v in m["fillers"].items()) or "none heard"
    first = m["first_sentence_s"]
    longest = next((p for p in m["pauses"] if p["seconds"] == m["longest_pause_s"]), None)
    at = f" at {_clock(longest['start'])}" if longest and m["long_pauses"] else ""
    lines = [
        f"### {posixpath.basename(audio_rel)} · {m['date']}",
        f"![[{audio_rel}]]",
        "",
        f"- speaking rate: {rate} ({m['words']:,} {'characters' if 'char' in unit else 'words'}"
        f" in {_clock(m['spoken_s'])})",
        f"- long pauses (≥ {m['long_pause_s']:g} s): {m['long_pauses']}"
        + (
            f" ({m['long_pauses_per_min']:g}/min), longest {m['longest_pause_s']:g} s{at}"
            if m["long_pauses"]
            else ""
        ),
        f"- first sentence ends at: {f'{first:g} s' if first is not None else 'no full stop'}",
        f"- fillers: {fillers}",
        f"- measured by vaultwatch transcribe ({m['model']}, {m['language']})",
        "",
        "> [!quote]- Transcript",
        *[f"> {s['text']}" for s in m["segments"] if s["text"]],
    ]
    return "\n".join(lines)


def write_into(root: Path, note: str, audio: Path, m: dict[str, Any]) -> str:
    """Append the recording's section to `note` and set its `recording_*` fields: one owner
    commit. Refused, nothing written, when the note or the audio is not in the vault."""
    try:
        rel = normalize_rel(note)
    except PathRefused as exc:
        raise ActionError(f"{exc.message}; nothing was written") from None
    target = root / rel
    real = Path(os.path.realpath(target))
    if (
        not rel.endswith(".md")
        or not target.is_file()
        or real != Path(os.path.realpath(root)) / rel
    ):
        raise ActionError(
            f"{rel} is not a note in this vault (or is reached through a symlink); nothing "
            "was written"
        )
    try:
        audio_rel = audio.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ActionError(
            f"{audio} is outside the vault; move it into the vault (it stays there as the "
            "note's attachment), then run this again. Nothing was written."
        ) from None
    if not is_audio(audio_rel):
        raise ActionError(f"{audio_rel} is not a recording; nothing was written")
    cfg = recordings_config(root)
    store = _store(root)
    with write_lock(root):
        try:
            store.check_repo()
        except StoreError as exc:
            raise ActionError(exc.for_owner) from None
        old = target.read_bytes()
        text = old.decode("utf-8")
        fields = {key: m[name] for key, name in FIELDS.items() if m.get(name) is not None}
        text = update_frontmatter(text, set_=fields)
        doc = parse_doc(rel, text.encode("utf-8"))
        text = append_section(text, doc, cfg.section, section_text(audio_rel, m))
        message = commit_message(
            f"transcribe: {rel} § {cfg.section}",
            {"Vaultwatch-Action": ACTION},
            f"Measured {audio_rel}: {m['wpm']} {m['unit']}, {m['long_pauses']} long pauses.",
        )
        return owner_commit(
            root, store, [FileWrite(rel, rel, old, text.encode("utf-8"))], message, ACTION
        )
