"""jsonedit.set_member and remove_member: the edited member changes, every other byte stays."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.regen.jsonedit import remove_member, set_member

DOC: dict[str, dict[str, Any]] = {"metadata": {"a": 1}, "scenarios": {"x": {"v": [1, 2]}, "y": {"v": 2}}}


def test_replace_keeps_the_rest_byte_for_byte():
    text = json.dumps(DOC, indent=4) + "\n"
    new = set_member(text, ["scenarios", "x"], {"v": 3, "w": {"k": 1.5}})
    assert json.loads(new) == {**DOC, "scenarios": {"x": {"v": 3, "w": {"k": 1.5}}, "y": {"v": 2}}}
    expected = {**DOC, "scenarios": {**DOC["scenarios"], "x": {"v": 3, "w": {"k": 1.5}}}}
    assert new == json.dumps(expected, indent=4) + "\n"


def test_append_and_create_parents_in_the_files_indentation():
    text = '{\n  "scenarios": {\n    "x": 1\n  }\n}\n'
    new = set_member(text, ["scenarios", "y"], {"k": [1]})
    assert new == '{\n  "scenarios": {\n    "x": 1,\n    "y": {\n      "k": [\n        1\n      ]\n    }\n  }\n}\n'
    new = set_member(new, ["metadata", "last_updated"], "2026-01-02")
    assert new.endswith('  },\n  "metadata": {\n    "last_updated": "2026-01-02"\n  }\n}\n')
    assert set_member('{"scenarios": {}}', ["scenarios", "a"], 1) == '{"scenarios": {"a": 1}}'
    assert set_member("{\n}\n", ["m"], {"x": 1}) == '{\n    "m": {\n        "x": 1\n    }\n}\n'


def test_quirks_outside_the_member_survive():
    text = '{\n    "scenarios": {\n        "a": {"compact": true},\n\n        "b": 1\n    }, "tail":   [1,2]\n}'
    new = set_member(text, ["scenarios", "b"], 2)
    assert new == text.replace('"b": 1', '"b": 2')
    new = set_member(text, ["scenarios", "c"], 3)
    assert new == text.replace('"b": 1', '"b": 1,\n        "c": 3')


def test_escaped_keys_and_non_ascii():
    text = '{\n    "scenarios": {\n        "a\\"b": 1\n    }\n}'
    assert json.loads(set_member(text, ["scenarios", 'a"b'], 2)) == {"scenarios": {'a"b': 2}}
    assert "\\u00e9" in set_member(text, ["scenarios", "n"], "é")  # an ASCII file stays ASCII
    assert "é" in set_member(text.replace("a", "à"), ["scenarios", "n"], "é")


@pytest.mark.parametrize(("text", "path"), [("[1]", ["a"]), ('{"a": 1}', ["a", "b"]), ('{"a": 1,}', ["b"])])
def test_malformed_input_is_a_diffperf_error(text, path):
    with pytest.raises(DiffperfError):
        set_member(text, path, 1)


keys = st.text(min_size=1, max_size=6)
leaves = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
)
values = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=8
)
docs = st.dictionaries(keys, st.dictionaries(keys, values, max_size=4), max_size=4)


# 100 examples, not CI's 400: a draw is a nested document (~10 ms to generate, the check itself is cheap)
@settings(deadline=None, max_examples=100)
@given(docs, keys, keys, values, st.sampled_from([None, 1, 2, 4, "\t"]))
def test_result_is_the_updated_document(doc, outer, inner, value, indent):
    text = json.dumps(doc, indent=indent)
    new = set_member(text, [outer, inner], value)
    expected = json.loads(text)
    if not isinstance(expected.get(outer), dict):
        expected[outer] = {}
    expected[outer][inner] = value
    assert json.loads(new) == expected
    others = {k: v for k, v in doc.items() if k != outer}
    for key, member in others.items():  # untouched members keep their exact text
        assert json.dumps({key: member}, indent=indent)[1:-1].strip() in new


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ('{\n    "a": 1,\n    "b": {"x": 2},\n    "c": 3\n}', ("b",), '{\n    "a": 1,\n    "c": 3\n}'),
        ('{\n    "a": 1,\n\n    "b": 2\n}', ("a",), '{\n    "b": 2\n}'),  # the first: up to the next key
        ('{"a": 1, "b": 2}', ("b",), '{"a": 1}'),
        ('{"s": {"only": {"x": 1}}, "m": 1}', ("s", "only"), '{"s": {}, "m": 1}'),
        ('{"s": {"x": 1}}', ("s", "absent"), '{"s": {"x": 1}}'),
        ('{"s": {"x": 1}}', ("absent", "x"), '{"s": {"x": 1}}'),
    ],
)
def test_remove_member_keeps_every_other_byte(text, path, expected):
    assert remove_member(text, path) == expected
    assert json.loads(expected) is not None
