"""`diffperf import-cases`: SGLang's lists written as a JSON case file that reads back as the same cases."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.cases import load_case_file, load_cases
from pytest_diffperf.cli import main
from tests.support.sglang import H100_BASELINES, SRC

pytestmark = pytest.mark.usefixtures("vendored")


def test_the_written_file_reads_back_as_the_cases_of_the_sglang_source(tmp_path, capsys):
    out = tmp_path / "h100_cases.json"
    assert main(["import-cases", str(SRC), "--output", str(out), "--baselines", str(H100_BASELINES)]) == 0
    assert load_cases(out) == load_cases(SRC)
    written = load_case_file(out)
    assert [e.id for e in written.not_expressible][:2] == ["pi05_action_http", "flux3_action_http"]
    err = capsys.readouterr().err
    assert "diffperf import-cases: 78 case(s) from" in err
    assert "(1-gpu, 2-gpu, 4-gpu-h100; h100; loaded with stand-ins)" in err
    assert "  not expressible: hunyuan3d_shape_gen: not expressible yet: a mesh (/v1/meshes)" in err
    assert "  scenario without a case: ideogram4_fp8_t2i" in err
    assert "  scenario without a case: flux2_modelopt" in err
    assert err.count("scenario without a case") == 2  # NPU/MUSA fragment scenarios are not judged on h100
    assert err.count("case without a scenario") == 3
    data = json.loads(out.read_text())
    assert data["sglang_source"]["suites"] == ["1-gpu", "2-gpu", "4-gpu-h100"]


def test_stdout_by_default_and_a_chosen_suite_and_platform(capsys):
    assert main(["import-cases", str(SRC), "--hardware", "b200"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert [c["id"] for c in data["cases"]] == [
        "flux1_modelopt_nvfp4_t2i",
        "flux2_modelopt_nvfp4_t2i",
        "ideogram4_nvfp4_t2i",
        "qwen_image_2512_modelopt_nvfp4_t2i",
        "wan22_modelopt_nvfp4_t2v",
    ]
    assert main(["import-cases", str(SRC), "--suite", "4-gpu-h100"]) == 0
    assert len(json.loads(capsys.readouterr().out)["cases"]) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "diffperf import-cases: error: nope: file not found"),
        ([str(SRC), "--suite", "9-gpu"], "suite: unknown suite '9-gpu'"),
        ([str(SRC), "--hardware", "a100"], "hardware: unknown platform 'a100'"),
    ],
)
def test_user_errors_are_one_line_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out.json"
    assert main(["import-cases", *args, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_extra_task_types_file(tmp_path, capsys):
    table = tmp_path / "types.json"
    table.write_text(json.dumps({"models": {"Qwen/Qwen-Image": "T2V"}}))
    assert main(["import-cases", str(SRC), "--suite", "1-gpu", "--task-types", str(table)]) == 0
    cases = {c["id"]: c for c in json.loads(capsys.readouterr().out)["cases"]}
    assert cases["qwen_image_t2i"]["task"] == "text-to-video"  # the table decides the modality
