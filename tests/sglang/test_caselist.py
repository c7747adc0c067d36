"""SGLang's case lists as a case source: where they are found, what loads, per platform and suite, and every error."""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from pytest_diffperf.cases import load_case_file, load_cases, unmatched
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.platforms import PLATFORMS
from pytest_diffperf.sglang import caselist, convert, standins, task_types
from pytest_diffperf.sglang.source import locate
from tests.support.sglang import H100_BASELINES, SRC

pytestmark = pytest.mark.usefixtures("vendored")
GPU_CASES = SRC / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py"


@pytest.fixture(scope="module")
def lists_by_platform() -> dict[str, caselist.CaseLists]:
    return {hw: caselist.load(locate(SRC), hw) for hw in PLATFORMS}


def test_h100_suites_hold_sglang_s_85_cases_and_82_of_the_84_scenarios(h100_file):
    assert len(h100_file.cases) + len(h100_file.not_expressible) == 85
    scenarios = list(json.loads(H100_BASELINES.read_text())["scenarios"])
    ids = [c.id for c in h100_file.cases] + [c.id for c in h100_file.not_expressible]
    assert unmatched(ids, scenarios) == (
        ["ideogram4_fp8_t2i", "flux2_modelopt_fp8_t2i"],
        ["minimax_h3_fl2va_first_frame_4gpu_h100", "vdn_h3_t2va_4gpu_h100", "fasth3_t2va_vsa_4gpu_h100"],
    )
    assert {c.id: c.reason for c in h100_file.not_expressible} == {
        "pi05_action_http": "not expressible yet: an action policy output (/v1/actions/generations)",
        "flux3_action_http": "not expressible yet: an action policy output (/v1/actions/generations)",
        "qwen_image_edit_2509_ti2i": "not expressible yet: an image edit whose input images are sent to the "
        "server as URLs (multipart url[])",
        "qwen_image_layered_i2i": "not expressible yet: an image edit whose input images are sent to the "
        "server as URLs (multipart url[])",
        "lingbot_world_realtime_plastic_beach": "not expressible yet: a realtime video over the websocket API "
        "(/v1/realtime_video)",
        "hunyuan3d_shape_gen": "not expressible yet: a mesh (/v1/meshes)",
        "flux_2_ti2i_multi_image_cache_dit": "not expressible yet: an edit of 2 input images",
    }


def test_cases_are_read_after_post_init(h100_file):
    cases = {c.id: c for c in h100_file.cases}
    pinned = [c for c in cases.values() if "quality" in c.sglang_request_extra]
    assert len(pinned) == 61 + 3 - 3  # 61 of the 75 with a scenario; the 4-GPU cases run no consistency check
    assert all("--warmup-sampling-params" in c.frameworks["sglang"].serve_args for c in pinned)
    # default sampling parameters by task type (no sampling_params in gpu_cases.py)
    assert cases["qwen_image_t2i"].prompt == "Doraemon is eating dorayaki"
    assert cases["qwen_image_t2i"].width == 1024
    assert cases["wan2_2_ti2v_5b"].task == "text-image-to-video"
    assert cases["wan2_2_ti2v_5b"].sglang_request_extra["reference_url"].startswith("https://")
    # the 2-GPU list's num_gpus from _with_default_num_gpus
    assert cases["wan2_1_t2v_1.3b_cfg_parallel"].num_gpus == 2
    assert cases["minimax_h3_fl2va_first_frame_4gpu_h100"].num_gpus == 4


def test_platform_decides_which_lists_come_out(lists_by_platform):
    counts = {hw: {s: len(c) for s, c in lists.suites.items()} for hw, lists in lists_by_platform.items()}
    assert counts["h100"]["1-gpu"] == 52
    assert counts["h100"]["2-gpu"] == 30
    assert counts["h100"]["4-gpu-h100"] == 3
    assert counts["rocm"]["1-gpu"] < counts["h100"]["1-gpu"]  # is_hip() drops ModelOpt, hunyuan3d, turbowan, ...
    assert counts["rocm"]["1-gpu-b200"] == 0
    assert counts["xpu_b60"]["1-gpu"] == 50  # no LLaDA on XPU
    assert counts["npu"] == {"1-npu": 7, "2-npu": 6}
    assert counts["musa"] == {"1-gpu-musa": 2, "1-gpu-musa-nightly": 8, "2-gpu-musa": 1}
    xpu = {c.id: c for c in lists_by_platform["xpu_b60"].suites["1-gpu"]}
    assert not xpu["zimage_image_t2i"].run_consistency_check  # gpu_cases.py's is_xpu() branch
    defaults = {hw: [e.case.id for e in lists.select()] for hw, lists in lists_by_platform.items()}
    assert len(defaults["b200"]) == 5
    assert len(defaults["5090"]) == 6
    assert len(defaults["xpu_b60"]) == 4
    assert len(defaults["npu"]) == 13
    assert len(defaults["musa"]) == 3


def test_request_kind_is_the_generation_function_sglang_picks(harness, lists_by_platform):
    for hw, lists in lists_by_platform.items():
        for cases in lists.suites.values():
            for tc in cases:
                fn = harness.utils.get_generate_fn(
                    tc.server_args.model_path, tc.server_args.modality, tc.sampling_params
                )
                assert convert.request_kind(tc.server_args.modality, tc.sampling_params) == fn.__name__, (hw, tc.id)


def test_every_model_of_every_list_has_a_task_type(lists_by_platform):
    table = task_types.load_table()
    for lists in lists_by_platform.values():
        for cases in lists.suites.values():
            for tc in cases:
                table.task_type(tc.server_args.model_path)  # raises when missing


def test_npu_and_musa_local_model_paths_convert(tmp_path):
    npu = load_case_file(SRC, hardware="npu")
    musa = load_case_file(SRC, hardware="musa")
    assert {c.model for c in npu.cases} >= {"/root/.cache/modelscope/hub/models/Qwen/Qwen-Image"}
    assert "Qwen/Qwen-Image" in {c.model for c in musa.cases}  # the HF cache lookup gives the model id
    assert load_cases(SRC, hardware="musa", suites=["1-gpu-musa-nightly"]).keys() >= {"zimage_image_t2i_musa"}


def test_sglang_modules_are_gone_after_loading_and_nothing_is_replaced():
    import torch

    before = {n for n in sys.modules if n.startswith("sglang")}
    caselist.load(locate(SRC), "h100")
    assert {n for n in sys.modules if n.startswith("sglang")} == before == set()
    assert sys.modules["torch"] is torch


def test_sglang_s_test_files_load_as_plain_source_inside_pytest():
    """pytest's assertion rewriting (an import hook of this process) would parse and rewrite SGLang's test_*.py on
    every load; they load as the ``diffperf`` commands load them, and the hook stays in place afterwards."""
    hooks = list(sys.meta_path)
    assert any(type(hook).__name__ == "AssertionRewritingHook" for hook in hooks)
    ran = caselist.load_with_standins(locate(SRC), "h100")
    test_utils = ran["sglang.multimodal_gen.test.test_utils"]  # imported by testcase_configs.py
    assert isinstance(test_utils.__loader__, importlib.machinery.SourceFileLoader)  # not pytest's hook
    assert sys.meta_path[: len(hooks)] == hooks  # nothing left in front (six appends its importer)


def test_each_sglang_file_is_compiled_once_per_content(tmp_path, monkeypatch):
    """A tree's lists run once for each platform, from source each time: each file is compiled once while its
    content stays the same, and again when it changes."""
    tree = tmp_path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    compiled: list[str] = []

    def counted(source: bytes, path: str, *args: object, **kwargs: object) -> object:
        compiled.append(Path(path).name)
        return compile(source, path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(standins, "compile", counted, raising=False)
    caselist.load(locate(tree), "h100")
    caselist.load(locate(tree), "b200")
    assert Counter(compiled) == {  # b200's testcase_configs.py runs from a copy beside placeholders (another path)
        "testcase_configs.py": 2,
        "gpu_cases.py": 1,
        "test_utils.py": 1,
        "perf_logger.py": 1,
        "task_type.py": 1,
    }
    with open(tree / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py", "a") as out:
        out.write("\n# changed\n")
    caselist.load(locate(tree), "h100")
    assert compiled.count("gpu_cases.py") == 2 and compiled.count("test_utils.py") == 1


def test_a_tree_s_lists_run_once_per_platform_until_one_of_its_files_changes(tmp_path, monkeypatch):
    tree = tmp_path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    ran: list[str] = []
    real = standins.load_source_module

    def counted(name: str, path: Path) -> ModuleType:
        ran.append(path.name)
        return real(name, path)

    monkeypatch.setattr(standins, "load_source_module", counted)
    first = caselist.load(locate(tree), "h100")
    assert ran == ["testcase_configs.py", "gpu_cases.py"]
    again = caselist.load(locate(tree), "h100")
    assert len(ran) == 2 and again.suites == first.suites  # the same cases, not run again
    caselist.load(locate(tree), "b200")
    monkeypatch.setenv("SGLANG_DIFFUSION_PERF_BASELINE_PLATFORM", "b200")
    caselist.load(locate(tree), "h100")
    monkeypatch.delenv("SGLANG_DIFFUSION_PERF_BASELINE_PLATFORM")
    table = task_types.load_table()
    caselist.load(locate(tree), "h100", table=task_types.TaskTypeTable({**table.models, "a/b": "T2I"}, {}, ()))
    assert len(ran) == 8  # another platform, baseline platform or task-type table: run for each
    with open(tree / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py", "a") as out:
        out.write("\nraise SystemExit(3)\n")
    with pytest.raises(DiffperfError, match=r"sys\.exit\(3\)"):
        caselist.load(locate(tree), "h100")


def test_the_source_is_found_from_a_file_a_checkout_a_wheel_and_the_installed_package(tmp_path, monkeypatch):
    assert locate(GPU_CASES).root == SRC.resolve()
    assert locate(SRC).root == SRC.resolve()  # an unpacked wheel: sglang/ at the top
    checkout = tmp_path / "checkout"
    shutil.copytree(SRC / "sglang", checkout / "python" / "sglang")
    assert locate(checkout).root == (checkout / "python").resolve()
    assert len(load_cases(checkout)) == 78
    monkeypatch.syspath_prepend(str(checkout / "python"))
    found = locate("sglang")
    assert found.installed
    assert found.root == checkout / "python"
    lists = caselist.load(found, "h100")  # its registry and runtime are missing: loaded with stand-ins
    assert lists.mode == "stand-ins"
    assert "does not import" in lists.notes[0]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("nope/gpu_cases.py", "file not found"),
        ("conftest.py", "expected SGLang's gpu_cases.py"),
        ("tests", "no SGLang gpu_cases.py or testcase_configs.py in this folder (looked for python/sglang/"),
    ],
)
def test_bad_sources_are_one_clear_error(given, message):
    with pytest.raises(DiffperfError, match=message.replace("(", r"\(").replace("[", r"\[")) as info:
        load_case_file(given)
    assert str(info.value).startswith(given)


def test_the_test_server_folder_copied_out_says_what_is_missing_and_where_to_get_it(tmp_path):
    copied = tmp_path / "server"
    shutil.copytree(GPU_CASES.parent, copied)
    for given in (copied / "gpu_cases.py", copied):
        with pytest.raises(DiffperfError) as info:
            load_cases(given)
        message = str(info.value)
        assert message.startswith(f"{copied / 'gpu_cases.py'}: {copied} is not inside an sglang checkout or wheel")
        assert "sglang/multimodal_gen/test/test_utils.py" in message
        assert "sglang/multimodal_gen/runtime/utils/perf_logger.py" in message
        assert "pip download --no-deps sglang==VERSION" in message


def test_a_tree_missing_a_file_outside_test_server_names_it(tmp_path):
    tree = tmp_path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    (tree / "sglang" / "multimodal_gen" / "test" / "test_utils.py").unlink()
    with pytest.raises(
        DiffperfError,
        match=r"lacks files of its release: SGLang's case files import "
        r"sglang/multimodal_gen/test/test_utils\.py, which",
    ):
        load_cases(tree)


def test_the_installed_package_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "sglang" not in p])
    with pytest.raises(DiffperfError, match=r"the sglang package is not installed: pass a path to gpu_cases\.py"):
        load_cases(Path("sglang"))


def test_an_unknown_model_names_the_model_and_how_to_add_it(tmp_path, monkeypatch):
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"models": {"Qwen/Qwen-Image": "T2I"}}))
    base = task_types.TaskTypeTable({}, {}, ())
    with pytest.raises(DiffperfError) as info:
        base.task_type("Qwen/Qwen-Image")
    message = str(info.value)
    assert "no task type is known for model" in message
    assert task_types.TABLE_ENV in message
    assert '{"models": {"' in message
    assert "T2I, I2I, TI2I" in message
    monkeypatch.setenv(task_types.TABLE_ENV, str(table))
    assert task_types.load_table().task_type("/local/models/Qwen/Qwen-Image") == "T2I"


def test_a_malformed_task_type_file_names_file_and_key(tmp_path, monkeypatch):
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"models": {"a/b": "T2X"}}))
    monkeypatch.setenv(task_types.TABLE_ENV, str(table))
    with pytest.raises(DiffperfError, match=r"table.json: models.a/b: expected 'T2I'"):
        task_types.load_table()


def test_unknown_and_conflicting_suites_are_clear_errors():
    lists = caselist.load(locate(SRC), "h100")
    with pytest.raises(DiffperfError, match="unknown suite '3-gpu'; on h100 SGLang has: 1-gpu, 1-gpu-5090"):
        lists.select(["3-gpu"])
    with pytest.raises(
        DiffperfError,
        match="case 'flux_2_klein_base_image_t2i' is defined differently in suites '1-gpu' and '1-gpu-5090'",
    ):
        lists.select(["1-gpu", "1-gpu-5090"])
    both = lists.select(["1-gpu", "1-gpu-xpu"])  # the same objects in both: listed once, with both suites
    assert next(e for e in both if e.case.id == "zimage_image_t2i").suites == ("1-gpu", "1-gpu-xpu")


def test_platform_stand_in_answers_what_sglang_asks():
    b200 = standins.PlatformStandIn.for_hardware("b200")
    assert b200.is_cuda()
    assert b200.is_blackwell()
    assert not b200.is_sm120()
    assert not b200.is_hip()
    assert standins.PlatformStandIn.for_hardware("rocm").is_hip()
    assert not standins.PlatformStandIn.for_hardware("npu").is_mps()  # any other is_* answers False
