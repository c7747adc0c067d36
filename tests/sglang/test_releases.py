"""SGLang's releases 0.5.12, 0.5.17 and 0.5.23 (vendored) load, are identified, and what cannot be read is one error.

Each release keeps its lists, its ``ModelTaskType`` and its suites in its own place: the loader
adapts to each. ``DIFFPERF_SGLANG_WHEELS`` (a folder of unpacked wheels, one ``X.Y.Z/`` folder per
release) runs the same checks on every release there (docs/sglang.md lists the ones tried).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_diffperf.cases import load_case_file
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.sglang import caselist, harness, release, standins
from pytest_diffperf.sglang.source import SERVER_DIR, locate
from tests.support.paths import SGLANG_DATA
from tests.support.sglang import harness_table

RELEASES = {v: SGLANG_DATA / f"v{v}" / "src" for v in ("0.5.12", "0.5.17", "0.5.23")}
# h100: (cases, not expressible, default suites); npu: cases
EXPECTED = {
    "0.5.12": (58, 4, ["1-gpu", "2-gpu"], 5),  # npu: 1-npu, 2-npu and 8-npu (ascend/test_server_8_npu.py)
    "0.5.17": (64, 6, ["1-gpu", "2-gpu", "4-gpu-h100"], 12),
    "0.5.23": (78, 7, ["1-gpu", "2-gpu", "4-gpu-h100"], 13),
}
WHEELS = Path(os.environ["DIFFPERF_SGLANG_WHEELS"]) if os.environ.get("DIFFPERF_SGLANG_WHEELS") else None


@pytest.fixture(params=sorted(RELEASES), scope="module")
def version(request) -> str:
    if not (RELEASES[request.param] / SERVER_DIR / "testcase_configs.py").is_file():
        pytest.skip(f"SGLang {request.param}'s vendored files are absent")
    return request.param


def test_each_release_loads_its_own_lists_on_h100_and_npu(version):
    cases, not_expressible, suites, npu = EXPECTED[version]
    h100 = load_case_file(RELEASES[version])
    source = (h100.model_extra or {})["sglang_source"]
    assert (len(h100.cases), len(h100.not_expressible), source["suites"]) == (cases, not_expressible, suites)
    assert source["release"] == version  # from the harness's own features: these copies carry no metadata
    assert len(load_case_file(RELEASES[version], "npu").cases) == npu


def test_each_release_s_own_loader_reads_a_baseline_entry_with_the_plugin_s_request_cpu(version, tmp_path):
    """Issue 39: the wait a baseline holds is stored in its entry (``request_cpu``); SGLang's BaselineConfig.load
    reads such a file as it reads its own."""
    doc = json.loads((SGLANG_DATA / "v0.5.12" / "perf_baselines.json").read_text())
    name = next(iter(doc["scenarios"]))
    doc["scenarios"][name]["request_cpu"] = {"cpu_ms": 180.0, "wait_ms": 300.0}
    path = tmp_path / "perf_baselines.json"
    path.write_text(json.dumps(doc))
    modules = harness.load(locate(RELEASES[version]), "h100", table=harness_table()).modules
    config = modules[f"{caselist.SERVER}.testcase_configs"].BaselineConfig.load(path)
    assert config.scenarios[name].expected_e2e_ms == doc["scenarios"][name]["expected_e2e_ms"]


def test_model_task_type_comes_from_where_the_release_keeps_it(version):
    """0.5.23 has configs/task_type.py; 0.5.12 and 0.5.17 keep the enum in configs/pipeline_configs/base.py."""
    lists = caselist.load(locate(RELEASES[version]))
    task_type = next(iter(lists.suites["1-gpu"])).server_args.modality
    assert task_type in ("image", "video")
    own_file = (RELEASES[version] / "sglang" / standins.TASK_TYPE_FILE).is_file()
    assert own_file == (version == "0.5.23")
    with standins.installed(standins.standin_modules(RELEASES[version], "h100")):
        enum = standins._ModelTaskType(RELEASES[version] / "sglang")()
    assert {"T2I", "T2V", "TI2V", "I2M"} <= set(enum.__members__)
    assert enum.T2I.is_image_gen() and not enum.T2V.is_image_gen()  # the release's own methods


def test_0_5_12_suites_come_from_its_runner_and_test_files():
    """0.5.12 has no PARAMETRIZED_CASE_GROUPS in gpu_cases.py: run_suite.py and the test files name the lists."""
    lists = caselist.load(locate(RELEASES["0.5.12"]))
    assert {"1-gpu", "2-gpu", "1-gpu-b200"} <= set(lists.suites)
    npu = caselist.load(locate(RELEASES["0.5.12"]), "npu")
    assert sorted(npu.suites) == ["1-npu", "2-npu", "8-npu"]  # ascend/test_server_<N>_npu.py


def test_a_checkout_and_the_installed_package_of_an_older_release_load(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    shutil.copytree(RELEASES["0.5.12"] / "sglang", checkout / "python" / "sglang")
    assert len(load_case_file(checkout).cases) == 58
    (checkout / "python" / "sglang" / "version.py").write_text('__version__ = "0.5.12.post1"\n')
    monkeypatch.syspath_prepend(str(checkout / "python"))
    found = locate("sglang")
    assert found.installed
    assert str(release.identify(found.root)) == "0.5.12.post1 (sglang/version.py)"


def test_wheel_metadata_names_the_release(tmp_path):
    tree = tmp_path / "wheel"
    shutil.copytree(RELEASES["0.5.17"] / "sglang", tree / "sglang")
    (tree / "sglang-0.5.17.dist-info").mkdir()
    (tree / "sglang-0.5.17.dist-info" / "METADATA").write_text("Metadata-Version: 2.4\nName: sglang\nVersion: 0.5.17\n")
    found = release.identify(tree)
    assert (str(found.version), found.how) == ("0.5.17", "wheel metadata sglang-0.5.17.dist-info")


def _copy(tmp_path: Path, version: str = "0.5.23") -> Path:
    tree = tmp_path / "src"
    shutil.copytree(RELEASES[version] / "sglang", tree / "sglang")
    return tree


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _with_future_field(tree: Path) -> Path:
    """``tree``'s testcase_configs.py with a field no release has (``future_knob``, default 0)."""
    configs = tree / SERVER_DIR / "testcase_configs.py"
    field = "    run_lora_effect_check: bool = False\n"
    _edit(configs, field, field + "    future_knob: int = 0\n")
    return configs


def test_a_field_at_its_default_is_no_error(tmp_path):
    tree = _copy(tmp_path)
    _with_future_field(tree)
    assert len(load_case_file(tree).cases) == 78


def test_an_unknown_module_is_one_error_naming_release_file_and_module(tmp_path):
    tree = _copy(tmp_path, "0.5.17")
    gpu_cases = tree / SERVER_DIR / "gpu_cases.py"
    _edit(
        gpu_cases,
        "from dataclasses import replace\n",
        "from dataclasses import replace\nimport sglang.multimodal_gen.future_module\n",
    )
    with pytest.raises(DiffperfError) as info:
        load_case_file(tree)
    message = str(info.value)
    assert message.startswith(f"{gpu_cases}:2: SGLang 0.5.17 (its harness has FOUR_GPU_H100_CASES")
    assert "imports sglang.multimodal_gen.future_module, which the tree does not hold" in message
    assert "pip download --no-deps sglang==0.5.17" in message
    assert "Traceback" not in message


def test_a_platform_the_release_has_no_lists_for_says_so(tmp_path):
    tree = _copy(tmp_path, "0.5.12")
    shutil.rmtree(tree / SERVER_DIR / "ascend")
    with pytest.raises(
        DiffperfError, match=r"has no testcase_configs_npu\.py: its release has no case lists for this platform"
    ):
        load_case_file(tree, "npu")


@pytest.mark.skipif(WHEELS is None, reason="DIFFPERF_SGLANG_WHEELS (a folder of unpacked sglang wheels) is not set")
def test_every_release_in_the_wheel_folder_loads_and_is_identified():
    assert WHEELS is not None
    tried = sorted(
        (p for p in WHEELS.iterdir() if (p / SERVER_DIR / "testcase_configs.py").is_file()),
        key=lambda p: release.parse(p.name),
    )
    assert tried
    for tree in tried:
        for hardware in ("h100", "rocm"):
            loaded = load_case_file(tree, hardware)
            assert loaded.cases, tree
            assert (loaded.model_extra or {})["sglang_source"]["release"] == tree.name
    # the semantics rows of fields only the oldest releases have (teacache_extra, warmup_requests)
    by_release = {tree.name: {c.id: c for c in load_case_file(tree).cases} for tree in tried}
    if "0.5.8" in by_release:
        teacache = by_release["0.5.8"]["wan2_1_t2v_1.3b_teacache_enabled"]
        assert (teacache.sglang_request_extra or {})["enable_teacache"] is True
        assert 1 in {c.perf_warmup_requests for c in by_release["0.5.8"].values()}  # server_args.warmup
    if "0.5.6" in by_release:
        assert 1 in {c.perf_warmup_requests for c in by_release["0.5.6"].values()}  # server_args.warmup_text
    if "0.5.10" in by_release:
        assert {c.perf_warmup_requests for c in by_release["0.5.10"].values()} == {0}


def test_0_5_19_and_0_5_20_are_told_apart_by_what_their_harness_has(tmp_path):
    """0.5.19 added perf_repeat_requests (judging the last request), 0.5.20 the per-request loop (request_index)."""
    tree = _copy(tmp_path, "0.5.17")
    configs = tree / SERVER_DIR / "testcase_configs.py"
    _edit(
        configs,
        "    run_perf_check: bool = True\n",
        "    run_perf_check: bool = True\n    perf_repeat_requests: int = 1\n",
    )
    assert str(release.identify(tree).version) == "0.5.19"
    common = tree / SERVER_DIR / "test_server_common.py"
    common.write_text(common.read_text() + "\n# request_index\n")
    assert str(release.identify(tree).version) == "0.5.20"
