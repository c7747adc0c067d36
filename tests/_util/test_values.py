"""Option values parsed from text: each kind's bounds and its one-line message, and the argparse form."""

from __future__ import annotations

import argparse

import pytest

from pytest_diffperf._util.values import (
    BadValue,
    argtype,
    choice,
    count,
    count_or_zero,
    fraction,
    fraction_below_one,
    seconds,
    seconds_or_zero,
)


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (count, " 3 ", 3),
        (count_or_zero, "0", 0),
        (seconds, "1.5", 1.5),
        (seconds, "604800", 604800.0),
        (seconds_or_zero, "0", 0.0),
        (fraction, "10%", 0.1),
        (fraction, " 0.25 ", 0.25),
        (fraction, "150%", 1.5),
        (fraction_below_one, "5%", 0.05),
        (fraction_below_one, "0", 0.0),
        (fraction_below_one, " 12.5% ", 0.125),
        (choice(("replace", "improve", "tighten")), " Tighten ", "tighten"),
    ],
)
def test_values_parse(parse, text, value):
    assert parse(text) == pytest.approx(value) if isinstance(value, float) else parse(text) == value


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (count, "0", "expected an integer >= 1, got '0'"),
        (count, "two", "expected an integer >= 1, got 'two'"),
        (count, "2.5", "expected an integer >= 1, got '2.5'"),
        (count_or_zero, "-3", "expected an integer >= 0, got '-3'"),
        (seconds, "soon", "expected a number of seconds, got 'soon'"),
        (seconds, "0", "expected a positive number of seconds, at most 604800 (a week), got '0'"),
        (seconds, "nan", "expected a positive number of seconds, at most 604800 (a week), got 'nan'"),
        (seconds, "604801", "expected a positive number of seconds, at most 604800 (a week), got '604801'"),
        (seconds_or_zero, "-5", "expected 0 or more seconds, at most 604800 (a week), got '-5'"),
        (fraction, "0", "expected a fraction > 0 such as 0.1 or 10%, got '0'"),
        (fraction, "inf", "expected a fraction > 0 such as 0.1 or 10%, got 'inf'"),
        (fraction, "busy", "expected a fraction > 0 such as 0.1 or 10%, got 'busy'"),
        *[
            (fraction_below_one, text, f"expected a fraction in [0, 1) such as 0.05 or 5%, got {text!r}")
            for text in ("five", "-1%", "1", "100%", "nan", "")
        ],
        (
            choice(("replace", "improve", "tighten")),
            "fastest",
            "expected one of replace, improve, tighten, got 'fastest'",
        ),
    ],
)
def test_bad_values_say_what_was_expected(parse, text, message):
    with pytest.raises(BadValue) as exc:
        parse(text)
    assert str(exc.value) == message


def test_argtype_reports_through_argparse(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--n", type=argtype(count))
    assert parser.parse_args(["--n", "2"]).n == 2
    with pytest.raises(SystemExit):
        parser.parse_args(["--n", "0"])
    assert capsys.readouterr().err.endswith("p: error: argument --n: expected an integer >= 1, got '0'\n")
