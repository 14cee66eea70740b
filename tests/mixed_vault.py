"""The mixed-language test vault: every Apache APISIX page in ONE language only (half English,
half Chinese, tests/apisix_docs/mixed_pages.yaml) plus notes of our own (tests/mixed_notes:
stubs and long multi-topic notes in both languages). A question in the other language than its
note's has its answer only across languages: what recall across languages is measured on
(tests/apisix_docs/questions_mixed.yaml).

    uv run python -m tests.mixed_vault /tmp/vw-recall/mixed   # build once, then
    uv run vaultwatch-server eval --vault /tmp/vw-recall/mixed \\
        --queries tests/apisix_docs/questions_mixed.yaml

Building into a folder that already holds it changes nothing, so the vectors recall keeps in
the vault's .git stay current and eval runs again without embedding."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
APISIX = HERE / "apisix_docs"
OWN = HERE / "mixed_notes"


def page_languages() -> dict[str, str]:
    data = yaml.safe_load((APISIX / "mixed_pages.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict) and set(data.values()) == {"en", "zh"}, data
    return {str(k): str(v) for k, v in data.items()}


def sources() -> dict[str, Path]:
    """Vault path -> the file it is copied from."""
    out = {p: APISIX / lang / p for p, lang in page_languages().items()}
    out.update({str(f.relative_to(OWN)): f for f in sorted(OWN.rglob("*.md"))})
    return out


def build(root: Path) -> Path:
    from server.core.gitrepo import ensure_repo

    for rel, src in sources().items():
        dst = root / rel
        data = src.read_bytes()
        if dst.exists() and dst.read_bytes() == data:
            continue  # untouched: its stored vectors stay current
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    for lic in ("LICENSE", "NOTICE"):
        if not (root / lic).exists():
            shutil.copy(APISIX / lic, root / lic)
    ensure_repo(root)
    return root


if __name__ == "__main__":
    print(build(Path(sys.argv[1]).absolute()))
