"""The scenario set: the same scenarios and files for every spelling of a path and every working directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_diffperf.cases import CaseFile
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.perf.baselines import load_baselines
from pytest_diffperf.perf.scenarios import CLI_FLAGS, ScenarioSet, load_scenario_set, read_case_lists
from pytest_diffperf.platforms import fragment_platform
from tests.support.cli import diffperf
from tests.support.suite import tiny_case

OWN = {  # each platform's scenarios in the fixture layout
    "h100": ["img_t2i", "vid_t2v", "e2e_only", "io_bound"],
    "rocm": ["img_t2i", "vid_t2v", "e2e_only", "io_bound"],
    "b200": ["img_t2i"],
    "npu": ["img_t2i_npu"],
    "musa": ["img_t2i_musa"],
}


@pytest.mark.parametrize(
    ("path", "platform"),
    [
        ("ascend/perf_baselines_npu.json", "npu"),
        ("./ascend/perf_baselines_npu.json", "npu"),
        ("/x/test/server/musa/perf_baselines_musa.json", "musa"),
        ("perf_baselines/h100.json", None),
        ("xascend/perf_baselines_npu.json", None),
        ("perf_baselines_npu.json", None),
    ],
)
def test_fragment_platform_by_the_last_two_names(path, platform):
    assert fragment_platform(Path(path)) == platform


@pytest.mark.parametrize("hardware", list(OWN))
def test_relative_absolute_and_a_file_select_the_same(layout, monkeypatch, hardware):
    stem = "h100" if hardware in ("rocm", "npu", "musa") else hardware
    absolute = load_scenario_set(layout / "perf_baselines", hardware)
    monkeypatch.chdir(layout)
    relative = load_scenario_set("perf_baselines", hardware)
    monkeypatch.chdir(layout / "perf_baselines")
    as_file = load_scenario_set(f"{stem}.json", hardware)
    monkeypatch.chdir(layout.parent)
    parent = load_scenario_set(os.path.join(layout.name, "perf_baselines", f"{stem}.json"), hardware)
    monkeypatch.chdir(layout / "ascend")
    up = load_scenario_set(os.path.join("..", "perf_baselines", f"{stem}.json"), hardware)
    assert absolute.ids == relative.ids == as_file.ids == parent.ids == up.ids == OWN[hardware]
    assert [layout / f for f in relative.files] == absolute.files  # read in the layout folder


def test_a_case_without_a_baseline_lives_in_its_platform_s_own_file(layout):
    cases = CaseFile.model_validate({"cases": [tiny_case("new_one")]})
    npu = ScenarioSet(load_baselines(layout / "perf_baselines", "npu"), cases, "npu")
    assert npu.ids == ["img_t2i_npu", "new_one"]
    assert npu.home("new_one") == npu.home("img_t2i_npu") == layout / "ascend" / "perf_baselines_npu.json"
    assert npu.files == [layout / "ascend" / "perf_baselines_npu.json"]
    h100 = ScenarioSet(load_baselines(layout / "perf_baselines", "h100"), cases, "h100")
    assert h100.home("new_one") == layout / "perf_baselines" / "h100.json" and len(h100.files) == 1


def test_without_a_fragment_file_a_new_npu_case_lives_in_the_platform_file(tmp_path, h100_doc):
    (tmp_path / "perf_baselines").mkdir()
    (tmp_path / "perf_baselines" / "h100.json").write_text(json.dumps(h100_doc))
    cases = CaseFile.model_validate({"cases": [tiny_case("new_one")]})
    npu = ScenarioSet(load_baselines(tmp_path / "perf_baselines", "npu"), cases, "npu")
    assert npu.ids == ["new_one"] and npu.files == [tmp_path / "perf_baselines" / "h100.json"]


def test_suites_without_case_lists_name_the_command_s_flags():
    with pytest.raises(DiffperfError) as exc:
        read_case_lists(None, "h100", "1-gpu", CLI_FLAGS)
    assert str(exc.value) == "--suites: needs SGLang's case lists: pass --cases too"


def test_plan_and_merge_refuse_suites_and_cases_where_they_do_not_apply(layout, tmp_path):
    plan = diffperf("plan", str(layout / "perf_baselines"), "--hardware=h100", "--suites=1-gpu")
    assert (plan.returncode, plan.stderr.strip()) == (
        2,
        "diffperf plan: error: --suites: needs SGLang's case lists: pass --cases too",
    )
    merge = diffperf("merge", str(tmp_path / "r.json"), "--cases=gpu_cases.py")
    assert (merge.returncode, merge.stderr.strip()) == (
        2,
        "diffperf merge: error: --cases: only applies with --expect-all",
    )
