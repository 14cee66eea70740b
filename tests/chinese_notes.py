"""Chinese vaults as the audits used them: 30 notes whose names share their start and their end
(cut in the middle at 80 columns they all read alike), written by two clients, each with words
of its own. A helper module, not a test module: test modules import from here, never from each
other."""

from __future__ import annotations

import hashlib

NUMBERS = "一二三四五六七八九十"
CLIENTS = ("claude-code", "claude-desktop")


def chinese_paths(folder: str) -> list[str]:
    """30 notes in `folder` named `分布式系统设计笔记之第三篇.md`, `…第三甲篇.md`, `…第三乙篇.md`, ..."""
    out = []
    for i in range(30):
        n = NUMBERS[i % 10] + ("" if i < 10 else "甲" if i < 20 else "乙")
        out.append(f"{folder}/分布式系统设计笔记之第{n}篇.md")
    return out


def words(seed: str, n: int = 12) -> str:
    """Words of this note's own (the server refuses a note that says nearly what another does)."""
    digest = hashlib.sha256(seed.encode()).hexdigest() * 2
    return " ".join(digest[i * 5 : i * 5 + 5] for i in range(n))
