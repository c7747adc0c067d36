"""The day SGLang ships its next release: simulated next releases, each a copy of the vendored 0.5.23 relabelled
0.5.24 and changed the way past releases changed (a new model, field, modality, suite, fixture flag, request
field). Each loads, converts what it can, and says exactly what it could not; nothing stops the other cases.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_diffperf import cli
from pytest_diffperf.cases import load_case_file
from pytest_diffperf.sglang import caselist, task_types
from pytest_diffperf.sglang.semantics import newer_than_known
from pytest_diffperf.sglang.source import SERVER_DIR, locate
from pytest_diffperf.suite.session import sglang_release
from tests.support.sglang import SRC

pytestmark = pytest.mark.usefixtures("vendored")

H100_CASES = 78  # 0.5.23's converted H100 cases
POST_INIT = "        if self.perf_repeat_requests < 1:\n"  # the start of DiffusionTestCase.__post_init__ (0.5.23)
DEFAULTED = "        if (\n            self.perf_warmup_requests\n"  # ... once its sampling parameters are set


def next_release(tmp_path: Path, *, cases: str = "", configs: tuple[tuple[str, str], ...] = ()) -> Path:
    """0.5.23 as 0.5.24: ``cases`` appended to gpu_cases.py, each (old, new) of ``configs`` made in testcase_configs.py."""
    tree = tmp_path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    (tree / "sglang" / "version.py").write_text('__version__ = "0.5.24"\n')
    if cases:
        gpu_cases = tree / SERVER_DIR / "gpu_cases.py"
        gpu_cases.write_text(gpu_cases.read_text() + "\n" + cases)
    for old, new in configs:
        edit(tree / SERVER_DIR / "testcase_configs.py", old, new)
    return tree


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def new_case(case_id: str, model: str, params: str, to: str = "ONE_GPU_CASES") -> str:
    return f"{to}.append(DiffusionTestCase({case_id!r}, DiffusionServerArgs(model_path={model!r}), {params}))\n"


def not_expressible(data) -> dict[str, str]:
    return {e.id: e.reason for e in data.not_expressible}


def test_a_new_video_model_is_inferred_from_its_fields_and_noted(tmp_path):
    params = "DiffusionSamplingParams(prompt='a fox', output_size='832x480', num_frames=17, fps=16)"
    tree = next_release(tmp_path, cases=new_case("newvid_t2v", "acme/NewVideo-1B", params))
    data = load_case_file(tree)
    case = next(c for c in data.cases if c.id == "newvid_t2v")
    assert (case.task, case.num_frames) == ("text-to-video", 17)  # generate_video sends no fps
    assert len(data.cases) == H100_CASES + 1
    notes = (data.model_extra or {})["sglang_source"]["notes"]
    assert [n for n in notes if "acme" in n] == [
        "model 'acme/NewVideo-1B' is in no task-type table: video, inferred from case 'newvid_t2v' "
        "(sampling_params.fps = 16)"
    ]


def test_a_new_model_its_fields_do_not_decide_is_listed_and_the_suggested_file_settles_it(
    tmp_path, monkeypatch, capsys
):
    tree = next_release(tmp_path, cases=new_case("newimg", "acme/NewModel-2B", "T2I_sampling_params"))
    data = load_case_file(tree)
    assert len(data.cases) == H100_CASES  # every other case is there
    reason = not_expressible(data)["newimg"]
    assert reason.startswith(
        "no task type is known for model 'acme/NewModel-2B' and its cases do not decide it (newimg: nothing in it "
        "says image or video"
    )
    # the workaround as the message shows it: the JSON written to a file, the variable pointed at it
    shown = re.search(r"Write a JSON file (\{.*?\}\}) \(one of", reason)
    assert shown is not None
    table = tmp_path / "types.json"
    table.write_text(shown.group(1))
    assert task_types.TABLE_ENV in reason and "--task-types FILE" in reason
    assert cli.main(["import-cases", str(tree), "--task-types", str(table)]) == 0
    written = json.loads(capsys.readouterr().out)
    assert "newimg" in {c["id"] for c in written["cases"]}
    monkeypatch.setenv(task_types.TABLE_ENV, str(table))
    settled = load_case_file(tree)
    assert next(c for c in settled.cases if c.id == "newimg").task == "text-to-video"  # T2V, as the example says
    assert "newimg" not in not_expressible(settled)


def test_a_case_whose_sampling_parameters_depend_on_the_exact_task_type_is_listed(tmp_path):
    """Its modality is known from another case, but SGLang picks its sampling parameters by T2I or TI2I."""
    cases = new_case("newimg_png", "acme/NewImage", "DiffusionSamplingParams(prompt='a', output_format='png')")
    cases += (
        "ONE_GPU_CASES.append(DiffusionTestCase('newimg_default', DiffusionServerArgs(model_path='acme/NewImage')))\n"
    )
    data = load_case_file(next_release(tmp_path, cases=cases))
    assert next(c for c in data.cases if c.id == "newimg_png").task == "text-to-image"
    assert "SGLang's defaults for the model's exact task type" in not_expressible(data)["newimg_default"]


def test_a_new_model_only_in_the_b200_list_leaves_h100_alone(tmp_path):
    params = "DiffusionSamplingParams(prompt='a', output_size='1024x1024', output_format='jpeg')"
    tree = next_release(tmp_path, cases=new_case("newb200", "acme/B200Only", params, to="ONE_GPU_B200_CASES"))
    h100 = load_case_file(tree)
    assert len(h100.cases) == H100_CASES
    assert "acme" not in str((h100.model_extra or {})["sglang_source"])  # not a word about a case it does not run
    b200 = load_case_file(tree, "b200")
    assert "newb200" in {c.id for c in b200.cases}
    assert "acme/B200Only" in (b200.model_extra or {})["sglang_source"]["notes"][-1]


def test_a_new_field_and_a_new_modality_stop_only_their_own_case(tmp_path):
    field = "    run_lora_effect_check: bool = False\n"
    tree = next_release(
        tmp_path,
        configs=(
            (field, field + "    future_knob: int = 0\n"),
            (
                POST_INIT,
                "        if self.id == 'qwen_image_t2i':\n            object.__setattr__(self, 'future_knob', 3)\n"
                "        if self.id == 'zimage_image_t2i':\n            self.server_args.modality = 'hologram'\n"
                + POST_INIT,
            ),
        ),
    )
    data = load_case_file(tree)
    reasons = not_expressible(data)
    assert reasons["qwen_image_t2i"].startswith(
        "SGLang 0.5.24 (sglang/version.py) sets DiffusionTestCase.future_knob = 3, a field pytest-diffperf does not "
        "know (it may change what the case sends or judges): upgrade pytest-diffperf"
    )
    assert "(server_args.modality = 'hologram', known: image, video, 3d, action)" in reasons["zimage_image_t2i"]
    assert len(data.cases) == H100_CASES - 2


@pytest.mark.server
def test_a_new_fixture_flag_and_a_new_request_field_are_named_and_verify_sglang_lists_them(tmp_path, capsys):
    tree = next_release(
        tmp_path,
        configs=(
            ("    env_vars: dict[str, str] = field(default_factory=dict)\n",
             "    env_vars: dict[str, str] = field(default_factory=dict)\n    enable_turbo: bool = False\n"),
            ('    output_size: str = ""\n', '    output_size: str = ""\n    motion_score: int | None = None\n'),
            (DEFAULTED,
             "        if self.id == 'qwen_image_t2i':\n            self.server_args.enable_turbo = True\n"
             "        if self.id == 'zimage_image_t2i':\n"
             "            object.__setattr__(self, 'sampling_params', replace(self.sampling_params, motion_score=3))\n"
             + DEFAULTED),
        ),
    )  # fmt: skip
    common = tree / SERVER_DIR / "test_server_common.py"
    edit(common, '    extra_args += " --strict-ports"\n', '    extra_args += " --strict-ports"\n'
         '    if getattr(server_args, "enable_turbo", False):\n        extra_args += " --enable-turbo"\n')  # fmt: skip
    reasons = not_expressible(load_case_file(tree))
    assert (
        "sets DiffusionServerArgs.enable_turbo = True, a field pytest-diffperf does not know"
        in reasons["qwen_image_t2i"]
    )
    assert "sets DiffusionSamplingParams.motion_score = 3" in reasons["zimage_image_t2i"]
    cli.main(["verify-sglang", str(tree), "--suite", "1-gpu", "--openai-as-installed"])
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    for case_id in ("qwen_image_t2i", "zimage_image_t2i"):
        assert " not expressible " in rows[case_id] and "a field pytest-diffperf does not know" in rows[case_id]


def test_suites_are_read_from_the_release_and_an_unmapped_one_is_one_warning(tmp_path, capsys):
    cases = (
        "PARAMETRIZED_CASE_GROUPS['8-gpu-h100'] = [('test_server_8_gpu.py', TWO_GPU_CASES[:2])]\n"
        "PARAMETRIZED_CASE_GROUPS['1-gpu-h300'] = [('test_server_h300.py', ONE_GPU_CASES[:3])]\n"
    )
    tree = next_release(tmp_path, cases=cases)
    lists = caselist.load(locate(tree))
    assert lists.default_suites == ["1-gpu", "2-gpu", "8-gpu-h100", "4-gpu-h100"]
    assert lists.unmapped == ["1-gpu-h300"]
    assert cli.main(["import-cases", str(tree)]) == 0
    err = capsys.readouterr().err
    assert (
        "  warning: suite '1-gpu-h300' (3 case(s)) is not one pytest-diffperf maps to a platform: not run unless "
        "named (--diffperf-suites 1-gpu-h300)\n" in err
    )
    assert "(1-gpu, 2-gpu, 8-gpu-h100, 4-gpu-h100; h100;" in err
    cli.main(["verify-sglang", str(tree), "--suite", "4-gpu-h100", "--openai-as-installed"])
    assert "diffperf verify-sglang: warning: suite '1-gpu-h300' (3 case(s)) is not one" in capsys.readouterr().out
    assert cli.main(["import-cases", str(tree), "--suite", "1-gpu-h300"]) == 0  # the warning's advice, as shown
    out, err = capsys.readouterr()
    assert len(json.loads(out)["cases"]) == 3
    assert "warning" not in err


def test_a_platform_the_release_has_no_lists_for_is_an_error_naming_the_release(capsys):
    older = SRC.parent.parent / "v0.5.17" / "src"
    if not older.is_dir():
        pytest.skip("0.5.17's vendored files are absent")
    assert cli.main(["import-cases", str(older), "--hardware", "xpu_b60"]) == 2  # was: a FileNotFoundError
    err = capsys.readouterr().err
    assert "suite: SGLang 0.5.17 (its harness has FOUR_GPU_H100_CASES: 0.5.17 or later) has no case lists for " in err
    assert "xpu_b60 (its suites: 1-gpu, 1-gpu-5090, 2-gpu, 1-gpu-b200, 4-gpu-h100)" in err
    assert "Traceback" not in err and "/tmp" not in err


def test_a_release_newer_than_the_rules_known_is_said_in_the_header_and_by_verify(tmp_path, capsys):
    tree = next_release(tmp_path)
    source = (load_case_file(tree).model_extra or {})["sglang_source"]
    assert sglang_release(source) == (
        "0.5.24 (sglang/version.py); newer than 0.5.23, the newest release pytest-diffperf's rules were read from: "
        "its rules applied"
    )
    assert newer_than_known(Version("0.5.23")) == "" and newer_than_known(Version("0.5.23.post1")) == ""
    cli.main(["verify-sglang", str(tree), "--suite", "4-gpu-h100", "--openai-as-installed"])
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "diffperf verify-sglang: warning: SGLang 0.5.24 is newer than 0.5.23, the newest release pytest-diffperf's "
        "rules were read from: its rules applied"
    )


@pytest.mark.parametrize(
    ("tail", "key", "message"),
    [
        ("PARAMETRIZED_CASE_GROUPS['1-gpu'] = 'test_server_1_gpu.py'\n", "PARAMETRIZED_CASE_GROUPS['1-gpu']",
         "expected a suite name and a list of (test file, cases) pairs, got '1-gpu': str"),
        ("PARAMETRIZED_CASE_GROUPS['1-gpu'] = [('test_server_1_gpu.py', 'ONE_GPU_CASES')]\n",
         "PARAMETRIZED_CASE_GROUPS['1-gpu'][0]", "expected a (test file, list of DiffusionTestCase) pair"),
        ("ONE_GPU_CASES.append('qwen_image_t2i')\n", "1-gpu[52]",
         "expected a DiffusionTestCase (with a string id), got 'qwen_image_t2i'"),
        ("ONE_GPU_CASES[0].server_args.extras = 5\n", "qwen_image_t2i",
         "a field of case 'qwen_image_t2i' has an unexpected type (TypeError: 'int' object is not iterable)"),
    ],
)  # fmt: skip
def test_groups_and_cases_of_the_wrong_type_are_one_error_naming_file_and_key(tmp_path, capsys, tail, key, message):
    tree = next_release(tmp_path, cases=tail)
    assert cli.main(["import-cases", str(tree)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"diffperf import-cases: error: {tree / SERVER_DIR / 'gpu_cases.py'}: {key}: {message}")
    assert "Traceback" not in err


def test_a_new_model_is_asked_of_the_installed_sglang_s_registry_first(tmp_path, monkeypatch):
    """With an sglang installed, its registry answers (it reads the model hub: a stand-in registry answers here)."""
    installed = tmp_path / "site"
    registry = installed / "sglang" / "multimodal_gen" / "registry.py"
    registry.parent.mkdir(parents=True)
    (installed / "sglang" / "__init__.py").write_text("")
    (registry.parent / "__init__.py").write_text("")
    registry.write_text(
        "import enum, types\n"
        "TaskType = enum.Enum('ModelTaskType', 'T2V T2I')\n"
        "def get_model_info(model):\n"
        "    if model != 'acme/NewModel-2B':\n"
        "        raise ValueError(model)\n"
        "    return types.SimpleNamespace(pipeline_config_cls=types.SimpleNamespace(task_type=TaskType.T2I))\n"
    )
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.setenv("PYTHONPATH", str(installed))
    cases = new_case("newimg", "acme/NewModel-2B", "T2I_sampling_params")
    cases += new_case("other", "acme/Unknown", "T2I_sampling_params")
    data = load_case_file(next_release(tmp_path, cases=cases))
    assert next(c for c in data.cases if c.id == "newimg").task == "text-to-image"
    notes = (data.model_extra or {})["sglang_source"]["notes"]
    assert "model 'acme/NewModel-2B' is in no task-type table: T2I, from the installed sglang's registry" in notes
    assert "no task type is known for model 'acme/Unknown'" in not_expressible(data)["other"]  # it cannot answer
