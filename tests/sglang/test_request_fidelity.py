"""The HTTP body the plugin sends for each converted SGLang case equals the one SGLang's own harness sends.

SGLang side: ``get_generate_fn`` from the vendored test_server_utils.py, driving the real openai
client (2.x, which sglang 0.5.23 pins) over an httpx ``MockTransport``. Plugin side: ``client.generate``
for the case ``cases.load_case_file`` converted, its ``requests`` call prepared (the bytes it would
send). Both are parsed as the server parses them: JSON, or multipart with fields JSON-decoded.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import requests

from pytest_diffperf.cases import Case
from pytest_diffperf.serving import client
from tests.support.sglang import H100_BASELINES, Body, decode, write_input_image

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
if os.environ.get("DIFFPERF_EXPECT_OPENAI", openai.__version__) != openai.__version__:
    raise RuntimeError(f"expected openai {os.environ['DIFFPERF_EXPECT_OPENAI']}, imported {openai.__version__}")
if not openai.__version__.startswith("2."):
    pytest.skip(
        f"openai {openai.__version__}: sglang 0.5.23's harness runs with openai==2.8.0 (3.x sends videos as "
        "multipart); tests/openai_pinned.sh runs this module with it, as .ci/run does",
        allow_module_level=True,
    )


class Captured(Exception):
    """Raised once the request is recorded: nothing is sent anywhere."""


@pytest.fixture(scope="module")
def input_image(tmp_path_factory):
    return write_input_image(tmp_path_factory.mktemp("inputs") / "input.jpg")


@pytest.fixture
def capture(harness, input_image, monkeypatch):
    """(SGLang's body and generation function, the plugin's body) for a case; reference URLs resolve to one file."""
    monkeypatch.setattr(harness.utils, "download_image_from_url", lambda url: input_image)
    monkeypatch.setattr(client, "_download", lambda url: input_image)

    def sglang_body(tc) -> tuple[str, Body]:
        seen: list[Body] = []

        def handler(request):
            seen.append(decode(request.url.path, request.headers["content-type"], request.read()))
            raise Captured

        transport = httpx.Client(transport=httpx.MockTransport(handler))
        api = openai.OpenAI(api_key="-", base_url="http://127.0.0.1:9/v1", http_client=transport, max_retries=0)
        fn = harness.utils.get_generate_fn(tc.server_args.model_path, tc.server_args.modality, tc.sampling_params)
        with pytest.raises(openai.APIConnectionError):
            fn(tc.id, api)
        assert len(seen) == 1
        return fn.__name__, seen[0]

    def plugin_body(case: Case) -> Body:
        seen: list[Body] = []

        def post(url, **kwargs):
            kwargs.pop("timeout")
            prepared = requests.Request("POST", url, **kwargs).prepare()
            content_type, content = prepared.headers["Content-Type"], prepared.body
            assert isinstance(content_type, str) and isinstance(content, bytes)  # requests encodes JSON and multipart
            seen.append(decode(prepared.path_url, content_type, content))
            raise Captured

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(requests, "post", post)
            with pytest.raises(Captured):
                client.generate("http://127.0.0.1:9", case, timeout=5)
        return seen[0]

    return sglang_body, plugin_body


def test_every_expressible_h100_case_sends_the_body_sglang_sends(h100_file, sglang_cases, capture):
    import json

    sglang_body, plugin_body = capture
    scenarios = json.loads(H100_BASELINES.read_text())["scenarios"]
    with_scenario = [c for c in h100_file.cases if c.id in scenarios]
    assert (len(with_scenario), len(with_scenario) + len(h100_file.not_expressible)) == (75, 82)
    kinds = set()
    for case in h100_file.cases:
        kind, expected = sglang_body(sglang_cases[case.id])
        kinds.add(kind)
        assert plugin_body(case) == expected, f"{case.id} ({kind})"
    assert kinds == {
        "generate_image",
        "generate_image_edit",
        "generate_video",
        "generate_text_image_to_video",
        "generate_text_url_image_to_video",
    }


def test_the_comparison_sees_each_field_that_changes_the_workload(h100_file, sglang_cases, capture):
    """The bodies carry what decides the workload, and dropping it makes them differ (the check can fail)."""
    sglang_body, plugin_body = capture
    cases = {c.id: c for c in h100_file.cases}
    _, wan = sglang_body(sglang_cases["wan2_1_t2v_1.3b"])
    model = cases["wan2_1_t2v_1.3b"].model
    assert wan == Body(
        "/v1/videos", {"model": model, "prompt": "A curious raccoon", "seconds": 1, "size": "", "quality": "exact"}
    )
    _, sana = sglang_body(sglang_cases["sana_video_2b_t2v"])
    assert "fps" not in sana.fields
    assert plugin_body(cases["sana_video_2b_t2v"].model_copy(update={"fps": 16})) == sana
    for case_id, change in [
        ("wan2_1_t2v_1.3b", {"seconds": None}),  # the server would make 4 s x 24 fps
        ("qwen_image_t2i", {"sglang_request_extra": {}}),  # no quality pin
        ("sana_video_2b_t2v", {"task": "image-to-video", "fps": 16}),  # fps is sent for image-to-video
        ("wan2_2_animate_2_14b_ref2v", {"reference_image": None}),  # no file part: JSON instead of multipart
    ]:
        _, expected = sglang_body(sglang_cases[case_id])
        changed = cases[case_id].model_copy(update=change)
        assert plugin_body(changed) != expected, case_id


def test_multipart_fields_are_json_the_way_the_servers_form_parsers_read_them(tmp_path, input_image, monkeypatch):
    sent = {}

    def post(url, **kwargs):
        sent.update(kwargs)
        raise Captured

    monkeypatch.setattr(requests, "post", post)
    case = Case(
        id="c",
        model="m",
        task="image-edit",
        prompt="p",
        reference_image=str(input_image),
        sglang_request_extra={"cache_dit_params": {"warmup": 2}, "enable_teacache": True, "steps": [1, 2]},
    )
    with pytest.raises(Captured):
        client.generate("http://127.0.0.1:9", case, timeout=5)
    fields = {k: v[1] for k, v in sent["files"].items() if v[0] is None}
    assert fields["cache_dit_params"] == '{"warmup": 2}'  # image_api.py: cache_dit_params: Json[dict]
    assert fields["enable_teacache"] == "true"
    assert fields["steps"] == "[1, 2]"
    assert fields["n"] == "1"
    assert fields["prompt"] == "p"  # strings as they are
    assert sent["files"]["image"] == (input_image.name, input_image.read_bytes())


def test_body_records_are_plain_dataclasses():
    # Body equality is field equality: a difference anywhere (path, a field, a file) is a difference.
    a = Body("/v1/videos", {"x": 1}, {"input_reference": "h"}, True)
    assert a != dataclasses.replace(a, files={})
    assert a != dataclasses.replace(a, path="/v1/images/generations")
