"""Edit one member of a JSON document in its text, leaving every other byte as it was.

Baseline files are reviewed as diffs: regenerating one scenario must not reformat the others
(SGLang's files have their own quirks, such as a stray blank line). ``set_member`` replaces the
value of ``doc[k1][k2]...`` (or appends the member to its object) and renders the new value in
the file's own indentation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DiffperfError

_scanstring: Callable[[str, int], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009 (untyped in typeshed)

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
DEFAULT_INDENT = "    "


@dataclass(frozen=True)
class Member:
    key: str
    key_start: int
    value_start: int
    value_end: int


def set_member(text: str, path: Sequence[str], value: Any) -> str:
    """``text`` with the member at ``path`` set to ``value``; missing objects on the way are created."""
    if not path:
        raise ValueError("empty path")
    start = _skip(text, 0)
    if text[start : start + 1] != "{":
        raise DiffperfError("expected a JSON object at the top level")
    style = _Style.of(text)
    for depth, key in enumerate(path):
        members = _members(text, start)
        found = next((m for m in members if m.key == key), None)
        rest = path[depth + 1 :]
        if found is None:
            return _insert(text, start, members, key, _nest(rest, value), style)
        if not rest:
            rendered = style.render(value, _line_indent(text, found.key_start))
            return text[: found.value_start] + rendered + text[found.value_end :]
        if text[found.value_start] != "{":
            raise DiffperfError("expected an object", key=".".join(path[: depth + 1]))
        start = found.value_start
    raise AssertionError("unreachable")


def remove_member(text: str, path: Sequence[str]) -> str:
    """``text`` without the member at ``path`` (with its line when it has one); unchanged when it is absent."""
    if not path:
        raise ValueError("empty path")
    start = _skip(text, 0)
    if text[start : start + 1] != "{":
        raise DiffperfError("expected a JSON object at the top level")
    for depth, key in enumerate(path):
        members = _members(text, start)
        index = next((i for i, m in enumerate(members) if m.key == key), None)
        if index is None:
            return text
        found = members[index]
        if depth < len(path) - 1:
            if text[found.value_start] != "{":
                raise DiffperfError("expected an object", key=".".join(path[: depth + 1]))
            start = found.value_start
            continue
        if index > 0:  # from the end of the member before (its comma goes) to the end of this one
            return text[: members[index - 1].value_end] + text[found.value_end :]
        if len(members) > 1:  # the first of several: up to the next member's key
            return text[: found.key_start] + text[members[1].key_start :]
        close = _skip(text, found.value_end)  # the only member: an empty object
        return text[:start] + "{}" + text[close + 1 :]
    raise AssertionError("unreachable")


def _nest(keys: Sequence[str], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


@dataclass(frozen=True)
class _Style:
    unit: str | None  # indentation of one level; None for a one-line document
    colon: str
    ascii_only: bool

    @classmethod
    def of(cls, text: str) -> _Style:
        unit = re.search(r"\{[ \t]*\r?\n([ \t]+)\S", text)
        colon = re.search(r'"[ \t]*(:[ \t]*)', text)
        no_newline = "\n" not in text.strip()
        return cls(
            None if no_newline else (unit.group(1) if unit else DEFAULT_INDENT),
            colon.group(1) if colon else ": ",
            text.isascii(),
        )

    def render(self, value: Any, indent: str) -> str:
        if self.unit is None:
            return json.dumps(value, ensure_ascii=self.ascii_only, separators=(", ", self.colon))
        text = json.dumps(value, indent=self.unit, ensure_ascii=self.ascii_only, separators=(",", self.colon))
        return text.replace("\n", "\n" + indent)


def _insert(text: str, start: int, members: list[Member], key: str, value: Any, style: _Style) -> str:
    """Append ``key: value`` as the last member of the object at ``start``."""
    key_text = json.dumps(key, ensure_ascii=style.ascii_only)
    if members:
        last = members[-1]
        before = members[-2].value_end if len(members) > 1 else start + 1
        lead = text[before : last.key_start].replace(",", "", 1)
        indent = _line_indent(text, last.key_start)
        lead = "\n" + indent if "\n" in lead else lead  # one line break, even after a blank line
        colon = text[_key_end(text, last) : last.value_start]
        member = "," + lead + key_text + colon + style.render(value, indent)
        return text[: last.value_end] + member + text[last.value_end :]
    end = _skip(text, start + 1)
    outer = _line_indent(text, start)
    if style.unit is None:
        body = "{" + key_text + style.colon + style.render(value, "") + "}"
    else:
        inner = outer + style.unit
        body = "{\n" + inner + key_text + style.colon + style.render(value, inner) + "\n" + outer + "}"
    return text[:start] + body + text[end + 1 :]


def _members(text: str, start: int) -> list[Member]:
    """The members of the object whose ``{`` is at ``start``."""
    members: list[Member] = []
    i = _skip(text, start + 1)
    if text[i : i + 1] == "}":
        return members
    while True:
        if text[i : i + 1] != '"':
            raise DiffperfError(f"invalid JSON near character {i}")
        key, after_key = _scanstring(text, i + 1)
        colon = _skip(text, after_key)
        if text[colon : colon + 1] != ":":
            raise DiffperfError(f"invalid JSON near character {colon}")
        value_start = _skip(text, colon + 1)
        try:
            _, value_end = _DECODER.raw_decode(text, value_start)
        except json.JSONDecodeError as exc:
            raise DiffperfError(f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
        members.append(Member(key, i, value_start, value_end))
        i = _skip(text, value_end)
        if text[i : i + 1] == "}":
            return members
        if text[i : i + 1] != ",":
            raise DiffperfError(f"invalid JSON near character {i}")
        i = _skip(text, i + 1)


def _key_end(text: str, member: Member) -> int:
    return _scanstring(text, member.key_start + 1)[1]


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _line_indent(text: str, at: int) -> str:
    """The whitespace that starts the line holding position ``at`` (up to its first non-blank)."""
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start:at]
    return line[: len(line) - len(line.lstrip(" \t"))]
