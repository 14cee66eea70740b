"""What a practice recording measures, from its transcript's timed words and the spans where
someone speaks: words (or, for Chinese, characters) per minute, pauses, the time to the first
full stop, fillers. Plain functions over plain data, no model: the numbers a model should not
have to guess when it scores a session, computed the same way for the shell, the MCP tool and
the weekly trend."""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A pause shorter than this is breath between words, not worth listing.
MIN_PAUSE_S = 0.5
DEFAULT_LONG_PAUSE_S = 2.0
SENTENCE_END = re.compile(r"[.?!。？！]")
# A Han character, or a run of Latin letters/digits (an English word, a number, "CRDT").
_HAN = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
# a word: letters and digits, with an apostrophe or a decimal point inside (it's, 3.5)
_WORD = r"[A-Za-z0-9]+(?:(?:['’][A-Za-z]+)|(?:[.,][0-9]+))*"
_UNIT = re.compile(rf"{_HAN}|{_WORD}")
_LATIN_WORD = re.compile(_WORD)
_HAN_RX = re.compile(_HAN)

# Said while thinking, not meaning: counted so the owner sees the habit. English ones are
# whole words; Chinese ones are matched inside the text (there are no spaces to split on).
DEFAULT_FILLERS: dict[str, tuple[str, ...]] = {
    "en": ("um", "uh", "uhm", "erm", "er", "hmm", "you know", "i mean"),
    "zh": ("嗯", "呃", "那个", "就是", "然后"),
}


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str


def is_chinese(language: str) -> bool:
    return language.lower().startswith("zh")


def count_units(text: str, language: str) -> int:
    """Words, or for Chinese characters (each Han character one unit, each Latin word one
    more): what the speaking rate counts."""
    if is_chinese(language):
        return len(_UNIT.findall(text))
    return len(_LATIN_WORD.findall(text))


def pauses(
    speech: Sequence[tuple[float, float]], minimum: float = MIN_PAUSE_S
) -> list[dict[str, float]]:
    """The silences between spans of speech (not before the first or after the last: that is
    the recording starting and stopping), each at least `minimum` seconds."""
    spans = sorted(speech)
    out = []
    for (_, end), (start, _) in itertools.pairwise(spans):
        gap = start - end
        if gap >= minimum:
            out.append({"start": round(end, 2), "end": round(start, 2), "seconds": round(gap, 2)})
    return out


def first_sentence_s(
    words: Iterable[Word], speech: Sequence[tuple[float, float]] = ()
) -> float | None:
    """When the first sentence ends: the end of the first word that closes with `.`, `?`, `!`
    or `。？！` (a decimal point inside a number does not end a sentence). Whisper stretches a
    word that comes before a silence into it (by 0.6 s on the test recording), so the end is
    taken back to where the speech it belongs to stops."""
    for w in words:
        text = w.text.strip()
        for m in SENTENCE_END.finditer(text):
            after = text[m.end() : m.end() + 1]
            if m.group() == "." and after.isdigit():
                continue
            return round(_speech_end(w, speech), 2)
    return None


def _speech_end(w: Word, speech: Sequence[tuple[float, float]]) -> float:
    for start, end in speech:
        if start <= w.end and w.start <= end:  # the span the word is spoken in
            return min(w.end, end) if w.end > end else w.end
    return w.end


def fillers(text: str, language: str, words: dict[str, tuple[str, ...]] | None = None) -> dict:
    table = words or DEFAULT_FILLERS
    found: dict[str, int] = {}
    if is_chinese(language):
        for f in table.get("zh", ()):
            n = text.count(f)
            if n:
                found[f] = n
        # Chinese speakers mix in English fillers too
        text = " ".join(_LATIN_WORD.findall(text))
    lowered = " ".join(w.lower() for w in _LATIN_WORD.findall(text))
    for f in table.get("en", ()):
        n = len(re.findall(rf"(?<![a-z']){re.escape(f)}(?![a-z'])", lowered))
        if n:
            found[f] = n
    return found


def measure(
    *,
    duration_s: float,
    language: str,
    words: Sequence[Word],
    segments: Sequence[Segment],
    speech: Sequence[tuple[float, float]],
    long_pause_s: float = DEFAULT_LONG_PAUSE_S,
    filler_words: dict[str, tuple[str, ...]] | None = None,
) -> dict:
    """Every metric of one recording. `speech` is where the voice-activity detector heard
    speech (pauses come from it, not from the words' timestamps, which drift by a few tenths
    of a second around silences). The rate is over the spoken span, first speech to last, so
    that silence before the speaker starts or after they stop does not lower it."""
    transcript = " ".join(s.text.strip() for s in segments if s.text.strip())
    units = count_units(transcript, language)
    spans = sorted(speech) or [(w.start, w.end) for w in words]
    spoken = (spans[-1][1] - spans[0][0]) if spans else 0.0
    per_minute = round(units / (spoken / 60), 1) if spoken > 0 else None
    gaps = pauses(spans)
    long = [p for p in gaps if p["seconds"] >= long_pause_s]
    minutes = spoken / 60 if spoken > 0 else None
    chinese = is_chinese(language)
    return {
        "duration_s": round(duration_s, 2),
        "language": language,
        "unit": "characters/min" if chinese else "words/min",
        "words": units,
        "wpm": per_minute,
        "spoken_s": round(spoken, 2),
        "pauses": gaps,
        "long_pause_s": long_pause_s,
        "long_pauses": len(long),
        "long_pauses_per_min": round(len(long) / minutes, 2) if minutes else None,
        "longest_pause_s": max((p["seconds"] for p in gaps), default=0.0),
        "first_sentence_s": first_sentence_s(words, spans),
        "fillers": fillers(transcript, language, filler_words),
        "transcript": transcript,
        "segments": [
            {"start": round(s.start, 2), "end": round(s.end, 2), "text": s.text.strip()}
            for s in segments
        ],
    }


def median_or_none(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None
