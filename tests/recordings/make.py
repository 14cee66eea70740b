"""Make the practice-recording fixtures: sentences spoken by espeak-ng (Debian's espeak-ng),
each trimmed of its own silence by sox, then joined with silences of known length, so the test
knows the text, where each pause is and when the first sentence ends. The outputs are committed
(a fresh CI machine needs neither program); run this again only to change them:

    python tests/recordings/make.py
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
RATE = 16_000
# (sentence, silence after it in seconds)
SCRIPT = [
    ("Hello, my name is Alex and I will walk you through my design.", 1.0),
    ("First we draw the architecture and agree on the requirements.", 2.5),
    ("Then we talk about caching, the database and how the two stay consistent.", 3.5),
    ("Finally we discuss the trade offs and what I would measure first.", 0.0),
]


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        parts, at, pauses, first_end = [], 0.0, [], None
        for i, (text, silence) in enumerate(SCRIPT):
            raw, clip = t / f"raw{i}.wav", t / f"clip{i}.wav"
            sh("espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), text)
            # resample, then cut the synthesiser's own silence at both ends
            sh(
                "sox",
                str(raw),
                "-r",
                str(RATE),
                "-c",
                "1",
                "-b",
                "16",
                str(clip),
                "silence",
                "1",
                "0.02",
                "1%",
                "reverse",
                "silence",
                "1",
                "0.02",
                "1%",
                "reverse",
            )
            length = float(sh("soxi", "-D", str(clip)))
            parts.append(clip)
            at += length
            if first_end is None:
                first_end = at
            if silence:
                gap = t / f"gap{i}.wav"
                sh(
                    "sox",
                    "-n",
                    "-r",
                    str(RATE),
                    "-c",
                    "1",
                    "-b",
                    "16",
                    str(gap),
                    "trim",
                    "0",
                    str(silence),
                )
                parts.append(gap)
                pauses.append({"start": round(at, 3), "seconds": silence})
                at += silence
        joined = t / "practice.wav"
        sh("sox", *map(str, parts), str(joined))
        sh("sox", str(joined), "-C", "3", str(HERE / "practice.ogg"))
    words = sum(len(text.replace(",", "").split()) for text, _ in SCRIPT)
    facts = {
        "text": " ".join(s for s, _ in SCRIPT),
        "words": words,
        "duration_s": round(at, 3),
        "first_sentence_s": round(first_end or 0.0, 3),
        "pauses": pauses,
    }
    (HERE / "practice.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main()
