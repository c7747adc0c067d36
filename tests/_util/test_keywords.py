"""pytest's -k grammar for the diffperf tools: words match as case-insensitive substrings."""

from __future__ import annotations

import pytest

from pytest_diffperf._util.keywords import keyword_matcher
from pytest_diffperf.errors import DiffperfError

NAMES = ["flux_tiny_t2i", "flux_tiny_t2i_8steps", "sd_tiny_t2i", "wan_tiny_t2v", "flux_kontext_tiny_edit"]


@pytest.mark.parametrize(
    ("expression", "matched"),
    [
        ("", NAMES),
        ("FLUX", ["flux_tiny_t2i", "flux_tiny_t2i_8steps", "flux_kontext_tiny_edit"]),
        ("flux and not kontext and not 8steps", ["flux_tiny_t2i"]),
        ("(sd or wan) and tiny", ["sd_tiny_t2i", "wan_tiny_t2v"]),
        ("not not t2v", ["wan_tiny_t2v"]),
        ("sd or wan and t2v", ["sd_tiny_t2i", "wan_tiny_t2v"]),  # and binds tighter than or
    ],
)
def test_expressions_select_as_pytest_does(expression, matched):
    match = keyword_matcher(expression)
    assert [n for n in NAMES if match(n)] == matched


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("flux and", "expected a word, 'not' or '(' at the end"),
        ("(flux", "a '(' is not closed"),
        ("flux)", "unexpected ')'"),
        ("or flux", "unexpected 'or'"),
        ("flux; rm", "near '; rm'"),
    ],
)
def test_a_bad_expression_is_one_line_naming_the_option(expression, problem):
    with pytest.raises(DiffperfError) as err:
        keyword_matcher(expression)
    assert str(err.value).startswith(f"-k: cannot parse {expression!r}") and problem in str(err.value)
