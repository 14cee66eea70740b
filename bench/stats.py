"""Small helpers for printing benchmark figures."""

from __future__ import annotations


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"
