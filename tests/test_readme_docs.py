"""The README and docs/ hold together. Every relative link in the README, SECURITY.md and docs/
leads somewhere: the file exists and, when the link names a heading (`reference.md#health`), the
heading does too, spelt as GitHub spells its anchors (the README points into docs/ for
everything it leaves out, so a renamed heading or a moved file would otherwise strand the reader
silently). And the test command the README gives is the one CI runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", REPO / "SECURITY.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


def prose(text: str) -> str:
    """The text with code blocks and code spans blanked: a link written in code is an example."""
    text = FENCE.sub("", text)
    return CODE_SPAN.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text lower-cased, every character that is not
    a letter, digit, `_`, `-` or space dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a markdown file has; a repeated heading gets `-1`, `-2`, … as on GitHub."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for m in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(doc: Path, root: Path = REPO) -> tuple[int, list[str]]:
    """(relative links checked, the ones that lead nowhere with the reason), paths shown from
    `root`."""
    checked, broken = 0, []
    for m in LINK.finditer(prose(doc.read_text(encoding="utf-8"))):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, obsidian:
            continue
        checked += 1
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        where = f"{doc.relative_to(root)}: ({target})"
        if not dest.exists():
            shown = dest.relative_to(root) if dest.is_relative_to(root) else dest
            broken.append(f"{where}: no file {shown}")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{where}: no heading with the anchor #{anchor} in {dest.name}")
    return checked, broken


def test_every_relative_link_in_the_docs_leads_to_a_file_and_heading() -> None:
    total, broken = 0, []
    for doc in DOCS:
        checked, bad = broken_links(doc)
        total += checked
        broken += bad
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
    # The README and docs/ link each other and into headings: a checker that found no links
    # would be checking nothing.
    assert total >= 20, f"only {total} relative links found: is the link pattern still right?"


def test_the_checker_reports_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    """The check above can fail: a link to a file or a heading that is not there is reported, a
    link in code is not a link, and headings with code and punctuation get GitHub's anchors."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ref.md").write_text(
        "# Ref\n\n## What the AI reads (`$`)\n\n## Review, revert, undo\n\n## Review, revert, undo\n"
    )
    readme = tmp_path / "README.md"
    readme.write_text(
        "[ok](docs/ref.md#what-the-ai-reads-) [ok2](docs/ref.md#review-revert-undo-1)\n"
        "[gone](docs/missing.md) [no heading](docs/ref.md#health) [self](#nowhere)\n"
        "`[in code](docs/missing.md)` [web](https://example.com/x.md)\n"
        "```\n[fenced](docs/missing.md)\n```\n"
    )
    checked, broken = broken_links(readme, tmp_path)
    assert checked == 5
    assert len(broken) == 3, broken
    assert "no file docs/missing.md" in broken[0]
    assert "#health" in broken[1] and "#nowhere" in broken[2]


def test_ci_runs_the_readmes_test_command() -> None:
    """`.ci/run` runs "the README's test command": the README must still give it, as a command
    line of its own in a shell block, so what a newcomer runs is what CI runs."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    runs = [ln.strip() for ln in ci if ln.strip().startswith('"${UV[@]}" run pytest')]
    assert runs, ".ci/run no longer runs pytest through uv: update this test with it"
    command = runs[-1].replace('"${UV[@]}"', "uv")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    lines = {ln.split("#", 1)[0].strip() for b in blocks for ln in b.splitlines()}
    assert command in lines, f"the README gives no `{command}` line, which .ci/run runs"
