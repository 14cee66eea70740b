"""update_frontmatter by line surgery, so every key it was not asked to change stays
byte-identical (order, quoting, comments, date formats), checked against YAML's reading after;
and the one layout of a new note's frontmatter (`render_new_note`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from server.notes.frontmatter import FrontmatterLoader, frontmatter_tags, split_frontmatter
from server.write.edit_base import EditError, _on_lf_lines

# ------------------------------------------------------------------------------------------------
# update_frontmatter: line surgery, so untouched keys stay byte-identical


class _Dumper(yaml.SafeDumper):
    """Writes dates unquoted (2026-10-02), as people write them in Obsidian."""


_Dumper.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in rs if tag != "tag:yaml.org,2002:timestamp"]
    for ch, rs in yaml.SafeDumper.yaml_implicit_resolvers.items()
}
KEY_LINE = re.compile(r"^([^\s#][^:\n]*?)\s*:(?:\s|$)")


def render_value(key: str, value: Any, flow: bool = True) -> str:
    """One top-level `key: value` entry as YAML; lists in flow style ([a, b]) unless asked."""

    def dump(v: Any, flow_style: bool) -> str:
        return yaml.dump(
            v,
            Dumper=_Dumper,
            allow_unicode=True,
            sort_keys=False,
            default_flow_style=flow_style,
            width=10_000,
        )

    if isinstance(value, list) and flow:
        key_text = dump({key: 0}, False).rsplit(":", 1)[0]
        return f"{key_text}: {dump(value, True).strip()}"
    return dump({key: value}, False).rstrip("\n")


def render_new_note(fields: dict[str, Any], tags: list[str], body: str) -> str:
    """A new note's text: its fields (then `tags`) as frontmatter, then `body`, ending in a
    newline. The one layout of a created note, whether the AI (create_doc) or the owner (the
    dashboard's new-note form) makes it."""
    lines = [render_value(k, v) for k, v in fields.items() if k != "tags"]
    if tags:
        lines.append(render_value("tags", tags))
    head = "---\n" + "\n".join(lines) + "\n---\n" if lines else ""
    return head + (body if body.endswith("\n") or not body else body + "\n")


# Where the owner's comments are. YAML drops comments when it parses, so they are found from the
# scanner's tokens: a `#` (at a line's start or after a blank) that no token covers begins a
# comment. A block scalar's token (`|`, `>`) covers its header line too, where a comment may
# follow the indicator; its content lines are text, even those that start with `#`.
_BLOCK_HEADER = re.compile(r"[|>][-+0-9]*")
_ALL = 1 << 30  # "to the end of the line"
_HASH = re.compile(r"(?:^|(?<=[ \t]))#")


def _comment_columns(fm: str) -> dict[int, int]:
    """{frontmatter line index: column where its comment begins} for every line with one."""
    lines = fm.split("\n")
    covered: dict[int, list[tuple[int, int]]] = {}
    for tok in yaml.scan(fm, Loader=yaml.SafeLoader):
        s, e = tok.start_mark, tok.end_mark
        if (s.line, s.column) == (e.line, e.column):
            continue
        if isinstance(tok, yaml.ScalarToken) and tok.style in ("|", ">"):
            header = _BLOCK_HEADER.match(lines[s.line], s.column)
            covered.setdefault(s.line, []).append((s.column, header.end() if header else _ALL))
            for ln in range(s.line + 1, e.line + (1 if e.column else 0)):
                covered.setdefault(ln, []).append((0, _ALL))
            continue
        for ln in range(s.line, e.line + 1):
            start = s.column if ln == s.line else 0
            end = e.column if ln == e.line else _ALL
            covered.setdefault(ln, []).append((start, end))
    out: dict[int, int] = {}
    for ln, line in enumerate(lines):
        spans = covered.get(ln, [])
        for m in _HASH.finditer(line):
            if not any(a <= m.start() < b for a, b in spans):
                out[ln] = m.start()
                break
    return out


def _full_line_comment(line: str, col: int | None) -> bool:
    return col is not None and col == len(line) - len(line.lstrip())


def _blocks(fm_lines: list[str], comments: dict[int, int]) -> list[tuple[str | None, int, int]]:
    """(key, first line, end line) of each top-level entry; None for comments and blanks that
    belong to no entry. A comment or blank line between a value's lines is the entry's; those
    after its last line are nobody's, so an edit of the entry keeps them where they are."""
    blocks: list[tuple[str | None, int, int]] = []
    for i, line in enumerate(fm_lines):
        m = KEY_LINE.match(line)
        if m and not line.startswith((" ", "\t", "-")):
            blocks.append((m.group(1).strip().strip("'\""), i, i + 1))
        elif (
            blocks
            and blocks[-1][0] is not None
            and (
                line.startswith((" ", "\t", "-"))
                or not line.strip()
                or _full_line_comment(line, comments.get(i))
            )
        ):
            key, start, _ = blocks[-1]
            blocks[-1] = (key, start, i + 1)
        else:
            blocks.append((None, i, i + 1))
    fixed: list[tuple[str | None, int, int]] = []
    for key, start, end in blocks:
        tail = end
        while (
            key is not None
            and tail - 1 > start
            and (
                not fm_lines[tail - 1].strip()
                or _full_line_comment(fm_lines[tail - 1], comments.get(tail - 1))
            )
        ):
            tail -= 1
        fixed.append((key, start, tail))
        fixed.extend((None, i, i + 1) for i in range(tail, end))
    return fixed


_EDIT_LINES_HINT = (
    "change those frontmatter lines with edit_text, copying them exactly from read_doc, or ask "
    "the owner"
)


def _note_line(i: int) -> int:
    """A frontmatter line's number in the note: the opening `---` is line 1."""
    return i + 2


def _refuse_duplicates(blocks: list[tuple[str | None, int, int]], touched: set[str]) -> None:
    """A key written twice: YAML reads the last, so editing either one could report a change
    the note does not show. The owner decides which one stays."""
    where: dict[str, list[int]] = {}
    for key, start, _ in blocks:
        if key is not None:
            where.setdefault(key, []).append(_note_line(start))
    for key in sorted(touched):
        lines = where.get(key, [])
        if len(lines) > 1:
            listed = ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"
            raise EditError(
                "duplicate_key",
                f"key {key!r} appears {len(lines)} times in this note's frontmatter (lines "
                f"{listed}); YAML reads only the last, so this change could not be made as "
                "asked",
                hint=f"remove the extra {key!r} lines with edit_text first (read_doc shows them), "
                "then call update_frontmatter again",
            )


def _key_comment(line: str, col: int | None) -> str:
    """A key line's own comment with the blanks before it, as the owner spaced it."""
    if col is None:
        return ""
    return line[len(line[:col].rstrip()) :]


def _replace_value(
    key: str, value: Any, chunk: list[str], first: int, comments: dict[int, int]
) -> list[str]:
    """The entry `chunk` (its key line first) rewritten with `value`; the key line's comment
    kept. A comment inside the old value cannot be kept with a new value: refused."""
    inner = [first + j for j in range(1, len(chunk)) if first + j in comments]
    if inner:
        raise EditError(
            "comment_in_value",
            f"the value of {key!r} holds the owner's comment on line "
            f"{', '.join(str(_note_line(i)) for i in inner)}; replacing the value would drop it",
            hint=_EDIT_LINES_HINT,
        )
    # a block list stays one, unless it is now empty: `key: []`
    block_style = len(chunk) > 1 and chunk[1].lstrip().startswith("-") and value != []
    rendered = render_value(key, value, flow=not block_style)
    if block_style and isinstance(value, list):
        indent = chunk[1][: len(chunk[1]) - len(chunk[1].lstrip())]
        rendered = (
            render_value(key, [], flow=True).rsplit(":", 1)[0]
            + ":\n"
            + "\n".join(f"{indent}- {render_value('x', v)[3:]}" for v in value)
        )
    out = rendered.split("\n")
    tail = _key_comment(chunk[0], comments.get(first))
    if tail:
        if len(out) > 1 and not out[0].endswith(":"):
            raise EditError(
                "comment_in_value",
                f"the new value of {key!r} spans several lines and the owner's comment on line "
                f"{_note_line(first)} could not be kept beside it",
                hint=_EDIT_LINES_HINT,
            )
        out[0] += tail
    return out


_ITEM = re.compile(r"^([ \t]*)-(?:[ \t]+|$)")


def _list_items(
    chunk: list[str], first: int, comments: dict[int, int]
) -> list[tuple[int, Any]] | None:
    """(index in chunk, value) of each item when the entry is a block list of one-line
    scalars with only blank and comment lines between them; None for anything else."""
    key_line = chunk[0]
    end = comments.get(first, len(key_line))
    if key_line[:end].split(":", 1)[1].strip():
        return None  # the value is on the key line
    items: list[tuple[int, Any]] = []
    for j, line in enumerate(chunk[1:], 1):
        col = comments.get(first + j)
        if not line.strip() or _full_line_comment(line, col):
            continue
        m = _ITEM.match(line)
        if m is None:
            return None
        try:
            value = yaml.load(line[m.end() : col].strip() or "null", Loader=FrontmatterLoader)
        except (yaml.YAMLError, ValueError, RecursionError):
            return None
        if isinstance(value, dict | list):
            return None
        items.append((j, value))
    return items


def _edit_tag_lines(
    chunk: list[str],
    items: list[tuple[int, Any]],
    removed: Callable[[str], bool],
    added: list[str],
) -> list[str]:
    """A block list of tags edited item by item: removed items' lines go, added ones follow
    the last item; every other line (comments, blanks, quoting) stays as it was."""
    drop = {j for j, v in items if any(removed(t) for t in frontmatter_tags({"tags": [v]}))}
    out = [line for j, line in enumerate(chunk) if j not in drop]
    last = items[-1][0] if items else 0
    prefix = "  - "
    if items:
        m = _ITEM.match(chunk[last])
        prefix = (m.group(1) if m else "  ") + "- "
    at = last + 1 - sum(1 for j in drop if j <= last)
    new = [prefix + render_value("x", t)[3:] for t in added]
    return out[:at] + new + out[at:]


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (True is not 1, '1' is not 1). Each pair of
    objects is compared once, without recursion: a value built from YAML aliases (a "billion
    laughs" note) shares its parts, and walking them as a tree would never end."""
    seen: set[tuple[int, int]] = set()
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def _load_mapping(fm: str) -> dict[Any, Any]:
    loaded = yaml.load(fm, Loader=FrontmatterLoader)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise EditError("broken_yaml", "this note's frontmatter is not a mapping of keys")
    return loaded


def _check_result(
    before: dict[Any, Any],
    new_fm: str,
    set_: dict[str, Any],
    unset: list[str],
    tags: list[str] | None,
) -> None:
    """Read the edited frontmatter back as YAML: every key asked for has the value asked for,
    every key unset is gone, every other key is as it was. Anything else (a case the line
    surgery above got wrong) is refused: a write that reports success must have done it."""
    try:
        after = _load_mapping(new_fm)
    except (yaml.YAMLError, ValueError, RecursionError, EditError):
        wrong = "the frontmatter would no longer be valid YAML"
    else:
        wrong = ""
        for key, value in set_.items():
            if key == "tags" and tags is not None:
                ok = key in after and _same(frontmatter_tags(after), tags)
            else:
                ok = key in after and _same(after[key], value)
            if not ok:
                wrong = f"{key!r} would read {after.get(key)!r}, not {value!r}"
                break
        for key in unset:
            if not wrong and key in after:
                wrong = f"{key!r} would still be there"
        for key in {*before, *after} - {*set_, *unset}:
            if not wrong and (key not in after or not _same(before.get(key), after[key])):
                wrong = f"{key!r}, which was not asked to change, would change"
    if wrong:
        raise EditError(
            "edit_unchecked",
            f"this change could not be made safely to this note's frontmatter: after the edit "
            f"{wrong}",
            hint=_EDIT_LINES_HINT,
        )


def update_frontmatter(
    text: str,
    set_: dict[str, Any] | None = None,
    unset: list[str] | None = None,
    add_tags: list[str] | None = None,
    remove_tags: list[str] | None = None,
) -> str:
    # on LF lines: the frontmatter's fences of a CR-only note are found, not a second one added
    return _on_lf_lines(
        text, lambda view, nl: _update_frontmatter(view, nl, set_, unset, add_tags, remove_tags)
    )


def _update_frontmatter(
    text: str,
    nl: str,
    set_: dict[str, Any] | None,
    unset: list[str] | None,
    add_tags: list[str] | None,
    remove_tags: list[str] | None,
) -> str:
    set_ = dict(set_ or {})
    unset = list(unset or [])
    fm_text, fm_start, body_start = split_frontmatter(text)
    fm_plain = "" if fm_text is None else fm_text.replace("\r\n", "\n")
    try:
        current = _load_mapping(fm_plain)
        comments = _comment_columns(fm_plain)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise EditError(
            "broken_yaml",
            f"this note's frontmatter is not valid YAML ({getattr(exc, 'problem', exc)}); it "
            "was not changed. Read the note and fix the YAML with replace_doc.",
        ) from exc
    both = set(set_) & set(unset)
    if both:
        raise EditError("conflicting_keys", f"{sorted(both)} are in both set and unset")
    tags: list[str] | None = None
    added: list[str] = []
    folded = {t.casefold().lstrip("#") for t in (remove_tags or [])}

    def removed(tag: str) -> bool:
        return tag.casefold().lstrip("#") in folded

    if add_tags or remove_tags:
        tags = [t for t in frontmatter_tags(current) if not removed(t)]
        for t in add_tags or []:
            t = t.strip().lstrip("#")
            if t and t.casefold() not in {x.casefold() for x in tags}:
                tags.append(t)
                added.append(t)
        set_["tags"] = tags
        if "tags" not in current and "tag" in current:
            unset.append("tag")
    if fm_text is None:
        # one item a line: a value over several lines is joined with the note's line ending too
        lines = [ln for k, v in set_.items() for ln in render_value(k, v).split("\n")]
        new_fm = "\n".join(lines)
        _check_result(current, new_fm, set_, unset, tags)
        return "---" + nl + nl.join(lines) + nl + "---" + nl + text
    fm_lines = fm_plain.split("\n")
    if fm_lines and fm_lines[-1] == "":
        fm_lines.pop()
    blocks = _blocks(fm_lines, comments)
    touched = {*set_, *unset} | ({"tags", "tag"} if tags is not None else set())
    _refuse_duplicates(blocks, touched)
    out: list[str] = []
    done: set[str] = set()
    for key, start, end in blocks:
        chunk = fm_lines[start:end]
        if key is not None and key in unset:
            # the key's lines go; the owner's comment lines between them stay
            out.extend(
                ln
                for j, ln in enumerate(chunk[1:], start + 1)
                if _full_line_comment(ln, comments.get(j))
            )
            continue
        if key is not None and key in set_ and key not in done:
            items = (
                _list_items(chunk, start, comments) if key == "tags" and tags is not None else None
            )
            edited = _edit_tag_lines(chunk, items, removed, added) if items is not None else []
            if len(edited) > 1:
                out.extend(edited)
            else:  # not a plain block list, or none of it left: `tags: []` says so plainly
                out.extend(_replace_value(key, set_[key], chunk, start, comments))
            done.add(key)
            continue
        out.extend(chunk)
    for key, value in set_.items():
        if key not in done:
            out.extend(render_value(key, value).split("\n"))
    _check_result(current, "\n".join(out), set_, unset, tags)
    new_fm = nl.join(out)
    head = text[:fm_start]
    closing = text[fm_start + len(fm_text) : body_start]
    return head + new_fm + (nl if new_fm else "") + closing + text[body_start:]
