"""SGLang 0.5.23's own harness, run unchanged against the reference server.

``diffusion_server`` (the real fixture) starts it through ServerManager.start() and an ``sglang``
shim on PATH; ``get_generate_fn`` + ``run_and_collect`` send the requests with the real openai
client and read the record with SGLang's ``read_perf_logs`` (which raises on any unknown key);
``PerformanceSummary``, ``_test_v1_models_endpoint`` and ``_test_t2v_rejects_input_reference``
check the rest.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_diffperf.serving.process import free_port
from tests.support import sglang

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not sglang.available(), reason="vendored SGLang sources absent"),
]
pytest.importorskip("openai")

INPUT_IMAGE = Path(__file__).resolve().parents[2] / "data" / "inputs" / "hills_128.png"
FAST = {"num_inference_steps": 2, "seed": 3}
CASES: dict[str, tuple[str, dict[str, object]]] = {
    "tiny_t2i": ("tiny/flux-t2i", {"prompt": "a red kite", "output_size": "128x128"}),
    "tiny_edit": ("tiny/flux-kontext-edit", {"prompt": "make it night", "image_path": str(INPUT_IMAGE)}),
    "tiny_t2v": ("tiny/wan-t2v", {"prompt": "waves", "output_size": "64x64", "num_frames": 5}),
    # with a prompt: SGLang's prompt-less generate_image_to_video calls videos.create() without the
    # prompt every openai release requires, so it fails in the client before any request is sent
    "tiny_i2v": ("tiny/wan-i2v", {"prompt": "the sun sets", "image_path": str(INPUT_IMAGE), "output_size": "64x64"}),
}


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    shim_dir = tmp_path_factory.mktemp("shim")
    shim = shim_dir / "sglang"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pytest_diffperf.refserver "$@"\n')
    shim.chmod(0o755)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{shim_dir}{os.pathsep}{os.environ['PATH']}")
        mp.setenv("SGLANG_PERF_LOG_DIR", str(tmp_path_factory.mktemp("perf")))
        mp.setenv(
            "PYTHONPATH", os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])
        )
        yield sglang.load_harness()


@pytest.fixture(autouse=True)
def server_logs_in_the_tests_folder(monkeypatch, tmp_path):
    """SGLang's ServerManager writes each server's stdout to ``sgl_server_PORT_MODEL.log`` in the temp folder and
    leaves it there: here, in the test's own folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def _case(harness, case_id: str, *server_extras: str):
    configs = harness.configs
    model, fields = CASES[case_id]
    params = configs.DiffusionSamplingParams(**fields, extras=dict(FAST))
    server = configs.DiffusionServerArgs(model_path=model, extras=list(server_extras))
    return configs.DiffusionTestCase(case_id, server, params)


@pytest.mark.parametrize("case_id", list(CASES))
def test_sglang_harness_runs_the_case(harness, case_id, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the generate functions write their outputs to the working directory
    monkeypatch.setenv("SGLANG_TEST_SERVER_PORT", str(free_port()))
    monkeypatch.setenv("SGLANG_TEST_WAIT_SECS", "180")
    common, configs, utils = harness.common, harness.configs, harness.utils
    case = _case(harness, case_id)
    assert "--warmup-sampling-params" in " ".join(case.server_args.extras)  # the quality pin __post_init__ adds
    fixture = harness.diffusion_server(case)
    ctx = next(fixture)
    try:
        assert ctx.load_time_ms is not None
        assert ctx.load_time_ms > 0
        base = common.DiffusionServerBase()
        generate = utils.get_generate_fn(case.server_args.model_path, case.server_args.modality, case.sampling_params)
        record, content = base.run_and_collect(ctx, case.id, generate)
        assert content
        summary = configs.PerformanceSummary.from_req_perf_record(record, (0.0, 0.5, 1.0))
        assert summary.e2e_ms == record.total_duration_ms > 0
        assert len(summary.step_metrics) == FAST["num_inference_steps"]
        assert summary.denoising_stages == {"DenoisingStage"}
        assert summary.load_peak_vram_mb == summary.runtime_peak_host_anon_mb == 0.0  # no device: no snapshots
        records = harness.test_utils.read_perf_logs(ctx.perf_log_path)  # raises on a key SGLang does not know
        assert [r.request_id for r in records] == [record.request_id]
        base._test_v1_models_endpoint(ctx, case)
        base._test_t2v_rejects_input_reference(ctx, case)
    finally:
        fixture.close()
    assert ctx.process.poll() is not None


def test_t2v_input_reference_is_rejected_with_sglangs_detail(harness, monkeypatch, tmp_path):
    """The check above returns early unless /v1/models says T2V: make sure it did not, and saw the 400."""
    import requests

    monkeypatch.setenv("SGLANG_TEST_SERVER_PORT", str(free_port()))
    fixture = harness.diffusion_server(_case(harness, "tiny_t2v"))
    ctx = next(fixture)
    try:
        base = f"http://127.0.0.1:{ctx.port}"
        assert requests.get(f"{base}/v1/models", timeout=30).json()["data"][0]["task_type"] == "T2V"
        resp = requests.post(f"{base}/v1/videos", json={"prompt": "x", "input_reference": "dummy"}, timeout=30)
        assert resp.status_code == 400
        assert resp.json() == {"detail": "input_reference is not supported for T2V models."}
    finally:
        fixture.close()
        ctx.process.wait(timeout=60)  # SGLang's teardown kills the tree without reaping its own child


def test_perf_dump_matches_sglangs_report(harness, monkeypatch, tmp_path):
    """A request's ``perf_dump_path`` file has the keys and nesting SGLang's own dump_benchmark_report writes."""
    import requests

    monkeypatch.setenv("SGLANG_TEST_SERVER_PORT", str(free_port()))
    case = _case(harness, "tiny_t2i", "--request-files-dir", str(tmp_path / "dump"))  # ours: paths only in there
    fixture = harness.diffusion_server(case)
    ctx = next(fixture)
    try:
        dump = tmp_path / "dump" / "perf.json"
        body: dict[str, str | int] = {
            "prompt": "x",
            "size": "64x64",
            "num_inference_steps": 2,
            "perf_dump_path": str(dump),
        }
        resp = requests.post(f"http://127.0.0.1:{ctx.port}/v1/images/generations", json=body, timeout=120)
        assert resp.status_code == 200, resp.text
        ours = json.loads(dump.read_text())
        assert not list(dump.parent.glob("*.tmp"))
    finally:
        fixture.close()
        ctx.process.wait(timeout=60)  # SGLang's teardown kills the tree without reaping its own child
    perf_logger = harness.perf_logger
    metrics = perf_logger.RequestMetrics("rid")
    metrics.stages = {"DenoisingStage": 1.0}
    metrics.steps = [0.5]
    reference = tmp_path / "reference.json"
    perf_logger.PerformanceLogger.dump_benchmark_report(
        str(reference), metrics, meta={"model": "m"}, tag="server_perf_dump"
    )
    theirs = json.loads(reference.read_text())
    assert list(ours) == list(theirs)
    assert ours["tag"] == theirs["tag"] == "server_perf_dump"
    assert ours["request_id"] == resp.json()["id"]
    assert ours["meta"] == {"model": "tiny/flux-t2i"}
    assert set(ours["steps"][0]) == set(theirs["steps"][0]) == {"name", "duration_ms"}
    assert set(ours["denoise_steps_ms"][0]) == set(theirs["denoise_steps_ms"][0]) == {"step", "duration_ms"}
    assert [s["step"] for s in ours["denoise_steps_ms"]] == [0, 1]
