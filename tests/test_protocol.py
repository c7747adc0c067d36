"""The load marker is read even when another thread's log output follows it on the same line."""

from __future__ import annotations

import pytest

from pytest_diffperf.protocol import LOAD_MARKER, parse_load_marker


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"{LOAD_MARKER}1810135566129", 1810135566129),
        (f'{LOAD_MARKER}1810135566129INFO:     127.0.0.1:43072 - "GET /health HTTP/1.1" 503', 1810135566129),
        (f"[12:00] {LOAD_MARKER} 42 more", 42),
        (f"{LOAD_MARKER}x42", None),
        ("INFO: started", None),
    ],
)
def test_parse_load_marker(line, expected):
    assert parse_load_marker(line) == expected
