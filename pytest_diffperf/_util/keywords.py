"""pytest's ``-k`` expressions for the tools outside pytest: ``flux and not kontext``, ``(sd or wan) and t2i``.

The grammar is pytest's (``or``, ``and``, ``not``, parentheses); a word matches a name that contains it,
case-insensitively, as pytest matches a test's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

from ..errors import DiffperfError

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([\w:+\-.\[\]\\/]+))")
Matcher = Callable[[str], bool]


def keyword_matcher(expression: str, source: str = "-k") -> Matcher:
    """A predicate on names for ``expression``; DiffperfError (naming ``source``) when it does not parse."""
    tokens: list[str] = []
    rest = expression
    while rest.strip():
        found = _TOKEN.match(rest)
        if found is None:
            raise DiffperfError(f"cannot parse {expression!r} near {rest.strip()!r}", source=source)
        tokens.append(found.group(0).strip())
        rest = rest[found.end() :]
    if not tokens:
        return lambda _name: True
    parser = _Parser(tokens, expression, source)
    matcher = parser.expr()
    if parser.pos != len(tokens):
        parser.fail(f"unexpected {tokens[parser.pos]!r}")
    return matcher


class _Parser:
    def __init__(self, tokens: list[str], expression: str, source: str):
        self.tokens, self.expression, self.source, self.pos = tokens, expression, source, 0

    def fail(self, problem: str) -> NoReturn:
        raise DiffperfError(f"cannot parse {self.expression!r}: {problem}", source=self.source)

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expr(self) -> Matcher:
        terms = [self.and_expr()]
        while self.peek() == "or":
            self.pos += 1
            terms.append(self.and_expr())
        return lambda name: any(t(name) for t in terms)

    def and_expr(self) -> Matcher:
        terms = [self.not_expr()]
        while self.peek() == "and":
            self.pos += 1
            terms.append(self.not_expr())
        return lambda name: all(t(name) for t in terms)

    def not_expr(self) -> Matcher:
        word = self.peek()
        if word is None:
            self.fail("expected a word, 'not' or '(' at the end")
        self.pos += 1
        if word == "not":
            inner = self.not_expr()
            return lambda name: not inner(name)
        if word == "(":
            inner = self.expr()
            if self.peek() != ")":
                self.fail("a '(' is not closed")
            self.pos += 1
            return inner
        if word in (")", "and", "or"):
            self.fail(f"unexpected {word!r}")
        lowered = word.lower()
        return lambda name: lowered in name.lower()
