"""Names used in file names are plain, and paths built from them stay inside their folder."""

from __future__ import annotations

import pytest

from pytest_diffperf._util.names import inside, name_problem
from pytest_diffperf.consistency import artifacts, groundtruth
from pytest_diffperf.errors import DiffperfError


@pytest.mark.parametrize("name", ["flux_image_t2i", "wan2.1-t2v", "qwen_image_edit_2gpu", "a+b", "_x"])
def test_sglang_style_names_are_plain(name):
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [("", "is empty"), ("a b", "whitespace"), ("a\tb", "whitespace"), ("a/b", "path separator"),
     ("a\\b", "path separator"), ("..", "'..'"), ("x..y", "'..'"), (".hidden", "not a plain name"),
     ("-flag", "not a plain name"), ("a;b", "not a plain name"), (3, "expected a string")],
)  # fmt: skip
def test_unsafe_names_are_refused(name, problem):
    assert problem in (name_problem(name) or "")


def test_inside_refuses_a_path_that_leaves_its_folder(tmp_path):
    assert inside(tmp_path, "a.png") == tmp_path / "a.png"
    (tmp_path / "link").symlink_to(tmp_path.parent)
    for name in ("../x.png", "link/x.png", "/etc/x.png"):
        with pytest.raises(DiffperfError, match="would leave"):
            inside(tmp_path, name)


def test_ground_truth_and_missing_gt_writes_stay_inside(tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    with pytest.raises(DiffperfError, match="outside the ground-truth folder"):
        groundtruth.write(gt, {gt / ".." / "escape_1gpu.png": b"x"})
    with pytest.raises(DiffperfError, match="would leave"):
        artifacts.ready_folder(tmp_path / "art", {"../../escape_1gpu.png": b"x"})
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["gt"]  # nothing written anywhere
