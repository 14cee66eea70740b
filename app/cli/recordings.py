"""`vaultwatch transcribe`: a practice recording's transcript and speech figures."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from app.cli.common import Refused, _split, _vault
from app.services.cell_wrap import cells


def _transcribe(args: argparse.Namespace) -> int:
    from app.services.recordings import measure_file, write_into
    from server.services.transcribe import TranscribeError

    raw_vault, (raw_file,) = _split(args.args, 1, "vaultwatch transcribe [VAULT] FILE")
    given = Path(raw_vault).expanduser().absolute()
    root = _vault(raw_vault) if raw_vault != "." or (given / ".git").exists() else None
    if args.into and root is None:
        raise Refused("--into needs a vault: run it in the vault's folder or name the vault")
    audio = Path(raw_file).expanduser()
    if not audio.is_absolute() and not audio.exists() and root is not None:
        audio = root / raw_file
    if not audio.is_file():
        raise Refused(f"{raw_file}: no such file; nothing was changed")
    try:
        m = measure_file(root, audio, model=args.model, language=args.language)
    except TranscribeError as exc:
        raise Refused(exc.message) from None
    sha = write_into(root, args.into, audio, m) if args.into and root is not None else None
    if args.json:
        print(json.dumps({**m, "commit": sha, "into": args.into}, ensure_ascii=False))
        return 0
    for line in _recording_lines(m):
        print(line)
    if sha:
        print(
            f"\nwritten into {args.into} (commit {sha[:8]}; `vaultwatch revert {sha[:8]}` takes it back)"
        )
    return 0


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}"


def _recording_lines(m: dict[str, Any]) -> list[str]:
    noun = "characters" if "char" in m["unit"] else "words"
    rate = f"{m['wpm']:g} {m['unit']}" if m["wpm"] is not None else "-"
    longest = f", longest {m['longest_pause_s']:g} s" if m["pauses"] else ""
    first = m["first_sentence_s"]
    rows = [
        ("speaking rate", f"{rate} ({m['words']:,} {noun} in {_clock(m['spoken_s'])})"),
        (
            f"long pauses ≥ {m['long_pause_s']:g} s",
            f"{m['long_pauses']}"
            + (f" ({m['long_pauses_per_min']:g}/min)" if m["long_pauses"] else "")
            + longest,
        ),
        ("first sentence", f"{first:g} s" if first is not None else "no full stop heard"),
        ("fillers", ", ".join(f"{k} ×{v}" for k, v in m["fillers"].items()) or "none heard"),
        (
            "pauses",
            " · ".join(f"{_clock(p['start'])} {p['seconds']:g} s" for p in m["pauses"]) or "none",
        ),
    ]
    width = max(cells(k) for k, _ in rows)
    head = f"{Path(m['file']).name} · {_clock(m['duration_s'])} · {m['language']} · {m['model']}"
    out = [head, *[f"{k}{' ' * (width - cells(k))}  {v}" for k, v in rows], "", "transcript"]
    out += [f"  [{_clock(s['start'])}] {s['text']}" for s in m["segments"] if s["text"]]
    return out
