"""Frame selection: SGLang's key frames (first, mid = total // 2, last), all, every:K, indices."""

from __future__ import annotations

import pytest

from pytest_diffperf.consistency.frames import parse_frames_spec, select_frames
from pytest_diffperf.errors import DiffperfError


@pytest.mark.parametrize(
    "n, spec, expected",
    [
        (81, "first,mid,last", [0, 40, 80]),
        (10, "first,mid,last", [0, 5, 9]),
        (2, "first,mid,last", [0, 1, 1]),  # SGLang keeps three frames for very short videos
        (1, "first,mid,last", [0, 0, 0]),
        (5, "all", [0, 1, 2, 3, 4]),
        (10, "every:3", [0, 3, 6, 9]),
        (10, "every:4", [0, 4, 8]),
        (10, "every:1", list(range(10))),
        (10, "last,0,5", [9, 0, 5]),
        (10, " First , MID ", [0, 5]),
    ],
)
def test_select_frames(n, spec, expected):
    assert select_frames(n, spec) == expected


def test_labels_name_the_gt_files():
    assert parse_frames_spec("first,mid,last").select(9) == [(0, "0"), (4, "mid"), (8, "last")]
    assert parse_frames_spec("every:4").select(9) == [(0, "0"), (4, "4"), (8, "8")]
    assert parse_frames_spec("mid,7").select(9) == [(4, "mid"), (7, "7")]


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("", "bad frame ''"),
        ("first,,last", "bad frame ''"),
        ("middle", "bad frame 'middle'"),
        ("every:0", "bad step '0'"),
        ("every:x", "bad step 'x'"),
        ("every:", "bad step ''"),
        ("-1", "bad frame '-1'"),
        ("all,first", "bad frame 'all'"),
        ("first,0", "listed twice"),
    ],
)
def test_bad_specs_give_one_clear_error(spec, fragment):
    with pytest.raises(DiffperfError) as err:
        parse_frames_spec(spec)
    assert fragment in str(err.value)
    assert str(err.value).startswith("--diffperf-frames: ")


def test_index_past_the_end():
    with pytest.raises(DiffperfError, match="frame 7 asked for, but the video has only 5 frames"):
        select_frames(5, "first,7")
