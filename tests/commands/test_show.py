"""`diffperf show`: the checks and limits of scenarios, as text and JSON."""

from __future__ import annotations

import json

from tests.support.cli import Result, diffperf


def show(*args: str, env: dict | None = None) -> Result:
    return diffperf("show", *args, env=env)


def show_json(*args: str, env: dict | None = None) -> dict:
    result = show(*args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def limits(data: dict, scenario: str) -> dict[str, float]:
    return {c["name"]: c["limit"] for c in data["scenarios"][scenario]["checks"]}


def test_text_output(layout):
    result = show(str(layout / "perf_baselines"), "img_t2i", "--hardware", "h100")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "profile pr_test, preset sglang"
    assert lines[2] == f"img_t2i  ({layout}/perf_baselines/h100.json, image)"
    assert lines[3].split() == ["check", "expected", "rel", "pad", "limit", "unit"]
    assert lines[4].split() == ["e2e", "1100.00", "25.0%", "20", "1375.00", "ms"]
    assert ["stage[DecodingStage]", "10.00", "90.0%", "450", "460.00", "ms"] in [line.split() for line in lines]


def test_an_alias_of_hardware_is_read_once_as_its_platform(layout):
    result = show(str(layout / "perf_baselines"), "img_t2i", "--hardware", "Blackwell")
    assert result.returncode == 0, result.stderr
    assert f"{layout}/perf_baselines/b200.json" in result.stdout.splitlines()[2]
    bad = show(str(layout / "perf_baselines"), "img_t2i", "--hardware", "tpu")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.startswith("diffperf show: error: hardware: unknown platform 'tpu'; expected one of: h100")
    assert len(bad.stderr.splitlines()) == 1


def test_json_output(layout):
    data = show_json(str(layout / "perf_baselines" / "h100.json"), "--profile", "long_term")
    assert data["profile"] == "long_term" and data["runner_prefix"] is None
    assert list(data["scenarios"]) == [
        "img_t2i",
        "vid_t2v",
        "e2e_only",
        "io_bound",
        "img_t2i_npu",
        "img_t2i_musa",
    ]
    first = data["scenarios"]["img_t2i"]["checks"][0]
    assert first == {
        "name": "e2e",
        "kind": "e2e",
        "expected": 1100.0,
        "rel": 0.15,
        "pad": 20.0,
        "limit": 1265.0,
        "key": "expected_e2e_ms",
        "unit": "ms",
        "required": False,  # a baseline an SGLang case's release requires (none without a case)
    }
    assert data["scenarios"]["img_t2i_npu"]["source"].endswith("ascend/perf_baselines_npu.json")


def test_runner_overrides(layout):
    folder = str(layout / "perf_baselines")
    plain = show_json(folder, "img_t2i", "--hardware", "b200", "--runner", "elsewhere")
    assert limits(plain, "img_t2i")["e2e"] == 1375.0
    pool = show_json(folder, "img_t2i", "--hardware", "b200", "--runner", "b200-pool-c")
    assert pool["runner_prefix"] == "b200-pool"
    assert limits(pool, "img_t2i")["e2e"] == 3750.0 and limits(pool, "img_t2i")["load"] == 7000.0


def test_video_guess_and_flags(layout):
    path = str(layout / "perf_baselines" / "h100.json")
    guessed = show_json(path, "vid_t2v", "img_t2i")
    assert guessed["scenarios"]["vid_t2v"]["is_video"] and not guessed["scenarios"]["img_t2i"]["is_video"]
    assert "per_frame" not in limits(guessed, "vid_t2v")
    frames = show_json(path, "vid_t2v", "--num-frames", "81")
    assert limits(frames, "vid_t2v")["per_frame"] == 70.0
    forced = show_json(path, "img_t2i", "--video")
    assert forced["scenarios"]["img_t2i"]["is_video"]
    assert limits(forced, "img_t2i")["step[2]"] == 260.0  # video steps: 160 ms pad
    assert show_json(path, "vid_t2v", "--no-video")["scenarios"]["vid_t2v"]["is_video"] is False


def test_env_overrides_apply(layout):
    import os

    env = {**os.environ, "SGLANG_E2E_TOLERANCE": "1.0"}
    data = show_json(str(layout / "perf_baselines" / "h100.json"), "img_t2i", env=env)
    assert limits(data, "img_t2i")["e2e"] == 2200.0
