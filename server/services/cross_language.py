"""Near-duplicates across languages: a note and its counterpart written in the other script
(a Chinese note and the English one that says the same), from recall's whole-note vectors.

The multilingual model places a note and its translation close, but not as close as two notes in
one language: on Apache APISIX's docs (tests/apisix_docs, the same 71 pages in English and in
Chinese) a page and its translation score 0.56-0.90 (median 0.77), under health's 0.85 for
notes in one language, so health listed none of them. Two rules keep unrelated pairs out:
the threshold is lowered by CROSS_LANGUAGE_GAP only, and each note must be the other's closest
note in the other script (mutual best). Measured with both languages in one vault: 61 of the 71
translations listed and no other pair (a gap of 0.12: 52; 0.20: 65, with 3 unrelated pairs in the
mixed vault and 2 in example_vault); in the mixed vault (every page in one language only,
nothing translated) one pair, plugins/key-auth and getting-started/key-authentication (0.76, two
pages on the same feature); in example_vault none. Plain numpy; no MCP, nothing embedded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from server.notes.textfold import mostly_cjk

if TYPE_CHECKING:
    import numpy as np

# how much lower than health.duplicate_score a pair across scripts may score and still be listed
CROSS_LANGUAGE_GAP = 0.15
BLOCK = 1024  # rows compared at a time: 1,024 x 5,000 notes is 20 MB
HEAD_BYTES = 4096  # a note's script is judged by its opening: enough text, a bounded read


def written_in_cjk(file: Path) -> bool:
    """Whether the note at `file` is written in a CJK script (its opening HEAD_BYTES)."""
    try:
        with file.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return False
    return mostly_cjk(head.decode("utf-8", errors="ignore"))


def cross_language_pairs(
    mat: np.ndarray, cjk: Sequence[bool], threshold: float, cap: int = 500
) -> list[tuple[float, int, int]]:
    """Pairs of rows (cosine, i, j), i < j, one written in a CJK script and one not, each the
    other's closest row in the other script, whose cosine is at least `threshold` -
    CROSS_LANGUAGE_GAP; the best `cap`, best first. `mat`: whole-note vectors (any norm),
    `cjk`: whether each row's note is written in a CJK script (textfold.mostly_cjk)."""
    import numpy as np

    flags = np.asarray(cjk, dtype=bool)
    a_idx, b_idx = np.nonzero(flags)[0], np.nonzero(~flags)[0]
    if not len(a_idx) or not len(b_idx):
        return []
    norms = np.linalg.norm(mat, axis=1)
    unit = (mat / np.where(norms == 0, 1, norms)[:, None]).astype(np.float32)
    a, b = unit[a_idx], unit[b_idx]
    # each CJK row's best non-CJK row, and each non-CJK row's best CJK row, a block at a time
    a_best = np.zeros(len(a), np.int64)
    a_score = np.zeros(len(a), np.float32)
    b_best = np.zeros(len(b), np.int64)
    b_score = np.full(len(b), -np.inf, np.float32)
    for s in range(0, len(a), BLOCK):
        sims = a[s : s + BLOCK] @ b.T
        a_best[s : s + BLOCK] = sims.argmax(1)
        a_score[s : s + BLOCK] = sims.max(1)
        col = sims.argmax(0)
        better = sims[col, np.arange(len(b))] > b_score
        b_best[better] = col[better] + s
        b_score[better] = sims[col, np.arange(len(b))][better]
    floor = threshold - CROSS_LANGUAGE_GAP
    out = []
    for ai in range(len(a)):
        bi = int(a_best[ai])
        if b_best[bi] == ai and a_score[ai] >= floor:
            i, j = int(a_idx[ai]), int(b_idx[bi])
            out.append((float(a_score[ai]), min(i, j), max(i, j)))
    out.sort(key=lambda x: -x[0])
    return out[:cap]
