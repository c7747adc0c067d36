"""Option values read from text, each kind parsed in one place: counts, seconds, fractions, one of some words.

A parser takes the text and returns the value, or raises :class:`BadValue`, whose message says what
was expected and quotes the text. The pytest options (``suite.options``) put the option's name in
front of it; the commands' argparse types (:func:`argtype`) report it as argparse does.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

MAX_WAIT_S = 7 * 24 * 3600.0  # a timeout: longer than a week is a typo (and overflows the timers it reaches)

T = TypeVar("T")
W = TypeVar("W", bound=str)


class BadValue(ValueError):
    """A value that does not parse: the message says what was expected and what was given."""


def count(text: str) -> int:
    """An integer >= 1."""
    return _integer(text, 1)


def count_or_zero(text: str) -> int:
    """An integer >= 0."""
    return _integer(text, 0)


def _integer(text: str, least: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = least - 1
    if value < least:
        raise BadValue(f"expected an integer >= {least}, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A positive number of seconds, at most a week."""
    return _seconds(text, zero_ok=False)


def seconds_or_zero(text: str) -> float:
    """A number of seconds from 0 (do not wait) to a week."""
    return _seconds(text, zero_ok=True)


def _seconds(text: str, *, zero_ok: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 if zero_ok else value > 0) or value > MAX_WAIT_S:
        least = "0 or more" if zero_ok else "a positive number of"
        raise BadValue(f"expected {least} seconds, at most {MAX_WAIT_S:.0f} (a week), got {text!r}")
    return value


def fraction(text: str) -> float:
    """``10%`` or ``0.1``: a finite fraction > 0."""
    value = _fraction(text)
    if not (math.isfinite(value) and value > 0):
        raise BadValue(f"expected a fraction > 0 such as 0.1 or 10%, got {text!r}")
    return value


def fraction_below_one(text: str) -> float:
    """``5%`` or ``0.05``: a fraction in [0, 1)."""
    value = _fraction(text)
    if not 0 <= value < 1:
        raise BadValue(f"expected a fraction in [0, 1) such as 0.05 or 5%, got {text!r}")
    return value


def _fraction(text: str) -> float:
    """The number ``text`` reads as (``%``: divided by 100), NaN when it reads as none."""
    stripped = text.strip()
    try:
        return float(stripped[:-1]) / 100 if stripped.endswith("%") else float(stripped)
    except ValueError:
        return math.nan


def choice(words: tuple[W, ...]) -> Callable[[str], W]:
    """A parser of one of ``words`` (case and spaces ignored)."""

    def parse(text: str) -> W:
        value = text.strip().lower()
        for word in words:
            if value == word:
                return word
        raise BadValue(f"expected one of {', '.join(words)}, got {text!r}")

    return parse


def argtype(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as an argparse ``type=``: its message becomes argparse's."""

    def argument(text: str) -> T:
        try:
            return parse(text)
        except BadValue as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return argument
