"""Which conftest files are SGLang's: those of its test/server folder, found from every form of the paths given."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diffperf.suite.conftests import sglang_conftests
from tests.support import sglang_tree


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sglang_tree.build(tmp_path_factory.mktemp("wheel"))


@pytest.mark.parametrize(
    "given", ["perf_baselines", "perf_baselines/h100.json", ".", "gpu_cases.py", "ascend/perf_baselines_npu.json"]
)
def test_found_from_a_baseline_path_or_the_case_lists(server, given):
    assert sglang_conftests([server / given]) == [server / "conftest.py", server / "ascend" / "conftest.py"]


def test_found_beside_a_single_baseline_file_of_older_releases(tmp_path):
    for name in ("testcase_configs.py", "test_server_utils.py", "perf_baselines.json", "conftest.py"):
        (tmp_path / name).write_text("")
    assert sglang_conftests([tmp_path / "perf_baselines.json"]) == [tmp_path / "conftest.py"]


def test_a_user_s_folder_is_not_sglang_s(tmp_path):
    (tmp_path / "perf_baselines").mkdir()
    (tmp_path / "perf_baselines" / "h100.json").write_text("{}")
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "testcase_configs.py").write_text("")  # one of the harness's files is not the harness
    assert sglang_conftests([tmp_path / "perf_baselines", tmp_path / "perf_baselines" / "h100.json"]) == []
