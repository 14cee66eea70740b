"""Deterministic synthetic vaults: N notes, English and Chinese, realistic frontmatter and tags.

The same (n, seed) always gives the same bytes, so figures from two runs compare.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

EN = [
    "system",
    "design",
    "cache",
    "invalidation",
    "idempotency",
    "key",
    "retry",
    "payment",
    "ledger",
    "queue",
    "partition",
    "replica",
    "consensus",
    "raft",
    "leader",
    "follower",
    "snapshot",
    "compaction",
    "index",
    "btree",
    "lsm",
    "bloom",
    "filter",
    "latency",
    "throughput",
    "backpressure",
    "circuit",
    "breaker",
    "timeout",
    "deadline",
    "trace",
    "span",
    "metric",
    "alert",
    "graph",
    "tree",
    "heap",
    "array",
    "window",
    "pointer",
    "sliding",
    "binary",
    "search",
    "dynamic",
    "programming",
    "memo",
    "interview",
    "mock",
    "feedback",
    "story",
    "leadership",
    "conflict",
    "ownership",
    "impact",
    "scope",
    "deadline",
    "offer",
    "recruiter",
    "referral",
    "onsite",
    "screen",
    "take",
    "home",
    "whiteboard",
    "trade",
    "off",
    "requirement",
    "estimate",
    "crdt",
    "offline",
    "sync",
    "merge",
    "tombstone",
    "vector",
    "clock",
    "lamport",
    "causal",
    "order",
    "gossip",
    "membership",
    "shard",
    "rebalance",
    "hotspot",
    "tenant",
    "quota",
    "rate",
    "limiter",
    "token",
    "bucket",
    "leaky",
    "bucket",
    "sliding",
    "log",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "that",
    "is",
    "for",
    "on",
    "with",
    "as",
    "it",
    "was",
    "by",
    "this",
    "be",
    "are",
    "from",
    "at",
    "or",
    "an",
    "we",
    "they",
]
ZH = [
    "架构",
    "系统",
    "设计",
    "缓存",
    "失效",
    "幂等",
    "重试",
    "支付",
    "账本",
    "队列",
    "分区",
    "副本",
    "共识",
    "领导",
    "快照",
    "压缩",
    "索引",
    "延迟",
    "吞吐",
    "背压",
    "熔断",
    "超时",
    "指标",
    "告警",
    "面试",
    "模拟",
    "反馈",
    "故事",
    "冲突",
    "影响",
    "范围",
    "截止",
    "内推",
    "白板",
    "需求",
    "估算",
    "离线",
    "同步",
    "合并",
    "墓碑",
    "因果",
    "顺序",
    "成员",
    "分片",
    "热点",
    "租户",
    "配额",
    "限流",
    "令牌",
    "周报",
    "复盘",
    "数据库",
    "消息",
    "推送",
    "并发",
    "一致性",
    "可用性",
    "分布式",
    "微服务",
    "网关",
    "存储",
    "日志",
    "监控",
    "容量",
    "规划",
]
TAGS = [
    "algorithms",
    "system-design",
    "behavioral",
    "communication",
    "crdt",
    "offline-sync",
    "idempotency",
    "caching",
    "databases",
    "networking",
    "leadership",
    "negotiation",
    "同步",
    "架构",
    "面试",
    "area/frontend",
    "area/backend",
    "area/infra",
    "graphs",
    "dp",
]
TYPES = {
    "application": "applications",
    "session": "sessions",
    "improvement": "improvements",
    "story": "stories",
    "referral": "referrals",
    "study": "study",
    "week": "weeks",
}
CONFIG = """\
rules: CLAUDE.md
tags: {vocabulary: tags.yaml, unknown: reject}
private: ["private/**"]
types:
  application: {folder: applications, required: [company, status], dates: [applied]}
  session: {folder: sessions, required: [date, kind], dates: [date], values: {kind: [mock, leetcode, system-design]}}
  improvement: {folder: improvements, required: [status, opened], dates: [opened]}
  story: {folder: stories}
  referral: {folder: referrals, dates: [asked]}
  study: {folder: study, dates: [date]}
  week: {folder: weeks, dates: [start]}
context:
  - rules
  - {title: This week, type: week, latest: 1}
  - {title: Open items, type: improvement, where: {status: open}, fields: [opened]}
  - {title: Recent sessions, type: session, latest: 3}
  - {title: Top tags, tags: {days: 30, limit: 15}}
"""


def _long_tail(n: int, seed: int) -> list[str]:
    """Pseudo-words for the long tail of a real vocabulary (names, jargon, typos). All have
    the same length, so none is a prefix of another, as with most real words."""
    rng = random.Random(seed)
    syl = [
        "ka",
        "ri",
        "to",
        "mu",
        "da",
        "lo",
        "vi",
        "ne",
        "qu",
        "zo",
        "ix",
        "fe",
        "gu",
        "he",
        "sa",
        "po",
        "ma",
        "ti",
        "ru",
        "be",
    ]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(syl) for _ in range(3)))
    # Sorted before the shuffle: a set's order follows the process's string hashing, which
    # would give every process another vault.
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


TAIL = _long_tail(4000, 11)
# Zipf-like weights: real text has a few very common words and a long tail of rare ones.
TAIL_WEIGHTS = [1 / (i + 1) for i in range(len(TAIL))]


def _sentence(rng: random.Random, chinese: bool) -> str:
    if chinese:
        return "".join(rng.choice(ZH) for _ in range(rng.randint(6, 14))) + "。"
    n = rng.randint(8, 18)
    tail = rng.choices(TAIL, TAIL_WEIGHTS, k=n)
    words = [rng.choice(EN) if rng.random() < 0.6 else tail[i] for i in range(n)]
    return " ".join(words).capitalize() + "."


def _body(rng: random.Random, chinese: bool, chars: int) -> str:
    parts: list[str] = []
    size = 0
    section = 0
    while size < chars:
        if size == 0 or rng.random() < 0.08:
            section += 1
            h = f"\n## {'记录' if chinese else 'Log'} {section}\n" if section > 1 else "\n## Log\n"
            parts.append(h)
            size += len(h)
        line = "- " + " ".join(_sentence(rng, chinese) for _ in range(rng.randint(1, 3))) + "\n"
        if rng.random() < 0.05:
            line = line.rstrip("\n") + f" #{rng.choice(TAGS)}\n"
        parts.append(line)
        size += len(line)
    return "".join(parts)


def generate(root: Path, n: int, seed: int = 7, *, big_every: int = 500) -> Path:
    """Write a vault of `n` notes under `root` (replaced if present): ~4 KB of body per note
    (10,000 notes: ~40 MB), one in `big_every` notes ~100 K chars, and one 1 MB note at
    `study/huge-log.md`."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    rng = random.Random(seed)
    (root / "vault.config.yaml").write_text(CONFIG, encoding="utf-8")
    (root / "tags.yaml").write_text("".join(f"- {t}\n" for t in TAGS), encoding="utf-8")
    (root / "CLAUDE.md").write_text("# Rules\n\nBe careful with the owner's notes.\n")
    names = list(TYPES)
    for i in range(n):
        t = names[i % len(names)]
        chinese = rng.random() < 0.35
        day = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
        tags = rng.sample(TAGS, rng.randint(1, 4))
        fm = [f"tags: [{', '.join(tags)}]"]
        if t == "application":
            fm += [
                f"company: Company {i}",
                f"status: {rng.choice(['applied', 'waiting', 'rejected'])}",
                f"applied: {day}",
            ]
        elif t == "session":
            fm += [
                f"date: {day}",
                f"kind: {rng.choice(['mock', 'leetcode', 'system-design'])}",
                f"score: {rng.randint(1, 5)}",
            ]
        elif t == "improvement":
            fm += [
                f"status: {rng.choice(['open', 'closed'])}",
                f"opened: {day}",
                "exit_criteria: three clean runs",
            ]
        elif t == "week":
            fm += [f"start: {day}"]
        else:
            fm += [f"date: {day}"]
        chars = 100_000 if big_every and i % big_every == big_every - 1 else rng.randint(700, 3_200)
        title = _sentence(rng, chinese)[:40].rstrip("。.")
        text = "---\n" + "\n".join(fm) + f"\n---\n# {title}\n" + _body(rng, chinese, chars)
        folder = root / TYPES[t] / f"{i // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.md").write_text(text, encoding="utf-8")
    huge = "---\ndate: 2026-11-01\n---\n# Huge log\n" + _body(rng, False, 1_000_000)
    (root / "study" / "huge-log.md").write_text(huge, encoding="utf-8")
    return root
