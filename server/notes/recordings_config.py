"""The `recordings:` block of the vault config: how practice recordings are transcribed and
measured (server/services/transcribe.py). Its problems are its own (like `health:`): a typo here
leaves the defaults in force and is reported by the transcribe command, and never fails the
rest of the config.

```yaml
recordings:
  model: small            # a Whisper model: a name faster-whisper can download, or a folder
  language: auto          # en | zh | auto
  long_pause_s: 2         # a pause at least this long is a long pause
  section: Recording      # the heading `vaultwatch transcribe --into` writes under
  max_minutes: 120        # longer recordings are refused (a clear message, nothing written)
  tool_max_minutes: 15    # what transcribe_recording does inside one call; longer: the shell
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

LANGUAGES = ("auto", "en", "zh")


@dataclass(frozen=True)
class RecordingsConfig:
    model: str | None = None
    language: str = "auto"
    long_pause_s: float = 2.0
    section: str = "Recording"
    max_minutes: float = 120.0
    tool_max_minutes: float = 15.0


class _Reports(Protocol):
    def fail(self, message: str, *path: str | int) -> None: ...

    def mapping(self, value: Any, *path: str | int) -> dict[str, Any]: ...


_KEYS = ("model", "language", "long_pause_s", "section", "max_minutes", "tool_max_minutes")


def parse_recordings(value: Any, p: _Reports) -> RecordingsConfig | None:
    spec = p.mapping(value, "recordings")
    if not spec:
        return None
    for key in spec:
        if key not in _KEYS:
            p.fail(
                f"unknown key {key!r} in recordings; known keys: {', '.join(_KEYS)}",
                "recordings",
                key,
            )
    base = RecordingsConfig()
    out: dict[str, Any] = {}
    for key in ("model", "section"):
        if key in spec:
            v = spec[key]
            if isinstance(v, str) and v.strip():
                out[key] = v.strip()
            else:
                p.fail(f"recordings.{key} must be a name, e.g. {key}: small", "recordings", key)
    if "language" in spec:
        lang = str(spec["language"]).strip().lower()
        if lang in LANGUAGES:
            out["language"] = lang
        else:
            p.fail(
                f"recordings.language must be one of {', '.join(LANGUAGES)}",
                "recordings",
                "language",
            )
    for key in ("long_pause_s", "max_minutes", "tool_max_minutes"):
        if key in spec:
            v = spec[key]
            if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
                out[key] = float(v)
            else:
                p.fail(f"recordings.{key} must be a number above 0 (now {v!r})", "recordings", key)
    return RecordingsConfig(**{**base.__dict__, **out})
