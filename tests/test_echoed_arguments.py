"""Arguments echoed in errors are cut (audit: read_doc with a 100,000-char section answered an
error of exactly 40,000 chars, the result budget, nearly all of it the section sent back)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.anyio

HUGE = "Installation and setup " * 4_500  # 103,500 chars, no heading of any note


@pytest.mark.parametrize(
    ("tool", "args", "said"),
    [
        ("read_doc", {"path": "Home.md", "section": HUGE}, "no heading"),
        ("read_doc", {"path": HUGE + ".md"}, "over 255 bytes"),
        ("list_docs", {"type": HUGE}, "unknown type"),
        ("list_docs", {"date_from": HUGE}, "is not a date"),
        ("list_docs", {"sort": HUGE}, "to sort by"),
        ("list_docs", {"where": {"status": {HUGE: 1}}}, "unknown operator"),
        ("search_text", {"query": "home", "type": HUGE}, "unknown type"),
        (
            "append_section",
            {"path": "Home.md", "heading": "Start", "content": "x", "hash": HUGE},
            "conflict",
        ),
        ("edit_text", {"path": HUGE + ".md", "old": "a", "new": "b"}, "over 255 bytes"),
    ],
)
async def test_an_argument_echoed_in_an_error_is_cut(
    connect: Any, make_vault: Any, tool: str, args: dict[str, Any], said: str
) -> None:
    root = make_vault({"Home.md": "# Home\n\n## Start\nWelcome.\n"})
    async with connect(root) as s:
        msg = await s.error(tool, **args)
    # what the error says about the call stays, the argument cut to its first 200 chars
    assert said in msg and len(msg) < 1_500, (len(msg), msg[:300])
    assert "Installation and setup" in msg and HUGE[:400] not in msg, msg
