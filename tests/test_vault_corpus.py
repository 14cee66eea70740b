"""Links on vaults nobody here wrote (issue 28): every link an independent reading of
Obsidian's rules resolves (tests/link_oracle.py, no code shared with server/notes/links.py)
still resolves, to the same file, after a round of owner moves made with the app's move
service; health names no link the oracle resolves as broken and no linked note as an orphan.

CI runs the committed vaults: a slice of doocs/advanced-java (Chinese, relative markdown
links), the APISIX docs (English and Chinese) and a vault written here with every link form
Obsidian writes. `python -m bench --only vaults` runs the same on the fetched corpus
(bench/vaults.py: Obsidian's help vault, the Obsidian Hub with 6,500 notes, ...)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from . import link_oracle as oracle

HERE = Path(__file__).parent

# Every link form Obsidian writes, and names with dots, emoji, CJK and spaces.
SYNTHETIC: dict[str, str | bytes] = {
    ".obsidian/app.json": '{"newLinkFormat": "shortest", "useMarkdownLinks": false}\n',
    "Home.md": (
        "# Home\n\n"
        "- [[v1.2 notes]] [[v1.2 notes#Changes]] [[v1.2 notes#^abc123|the block]]\n"
        "- ![[Drawing.excalidraw]] and [[🗂️ 02.04 Projects]]\n"
        "- [[读书/三体|三体]] [[三体#第一部 地球往事]] [[dv notes#dv版本0 5 3]]\n"
        "- [[Plan]](as text) [p](Plan.md) [p](Projects/Plan.md) [d](<Projects/Deep Work.md>)\n"
        "- [d](Projects/Deep%20Work.md#Rules) [c](%E7%AB%A0%E8%8A%82%20%E4%B8%80.md)\n"
        "- ![img](attachments/a%20b.png) ![[a b.png|200]] [[attachments/report.pdf]]\n\n"
        "| note | link |\n| --- | --- |\n| plan | [[Plan\\|p]] |\n\n"
        "`[[not a link]]` and\n```\n[[nor this]]\n```\n"
        '<span style="color: #ff0000">red</span>\n'
    ),
    "Projects/Plan.md": (
        "# Plan\n\n[up](../Home.md) [dw](./Deep%20Work.md) [[../读书/三体]] [[Deep Work]]\n"
    ),
    "Projects/Deep Work.md": "# Deep Work\n\n## Rules\n\n[[Plan]] [h](Home.md)\n",
    "v1.2 notes.md": "# v1.2\n\n## Changes\n\nfaster start ^abc123\n\n[[Home]]\n",
    "🗂️ 02.04 Projects.md": "# Projects\n\n[[Plan]] [[Projects/Deep Work]]\n",
    "Drawings/Drawing.excalidraw.md": "---\nexcalidraw-plugin: parsed\n---\n[[Home]]\n",
    "读书/三体.md": "# 三体\n\n## 第一部 地球往事\n\n[主页](../Home.md) [[章节 一]]\n",
    "读书/笔记/章节 一.md": "[[三体#第一部 地球往事]] [s](../三体.md) [s](三体.md)\n",
    "dv notes.md": "# dv\n\n## dv版本0.5.3\n\n[[Home]]\n",
    "attachments/a b.png": b"\x89PNG fake",
    "attachments/report.pdf": b"%PDF fake",
}


def _copy(name: str, dest: Path) -> Path:
    if name == "synthetic":
        for rel, content in SYNTHETIC.items():
            p = dest / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
    else:
        src = {
            "advanced_java": HERE / "advanced_java" / "high-concurrency",
            "apisix_en": HERE / "apisix_docs" / "en",
            "apisix_zh": HERE / "apisix_docs" / "zh",
        }[name]
        shutil.copytree(src, dest)
    return dest


@pytest.mark.parametrize("name", ["synthetic", "advanced_java", "apisix_en", "apisix_zh"])
def test_every_link_resolves_before_and_after_a_round_of_owner_moves(
    name: str, tmp_path: Path
) -> None:
    root = _copy(name, tmp_path / name)
    oracle.make_repo(root)
    before = oracle.scan(root)
    assert before.count > 20  # the vault has links to check
    broken = before.broken()
    if name == "synthetic":
        assert broken == []  # every form resolves
    if name == "advanced_java":
        # only the image embeds of the images/ folder left out of the slice
        assert broken and all("./images/" in w.text for _, w in broken)

    found = oracle.health_findings(root, before)
    assert found["false_broken"] == []
    assert found["false_orphans"] == []
    assert found["missed_broken"] == []

    moved = oracle.owner_moves(root, before)
    assert len(moved) >= 4
    after = oracle.scan(root)
    assert oracle.broken_by_moves(before, after, moved) == []
    assert len(after.broken()) == len(broken)  # no link broken, none mended by a guess
    assert oracle.git(root, "status", "--porcelain") == ""
